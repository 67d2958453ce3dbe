#!/usr/bin/env bash
# `make test`: install what the tests need (cached under bin/), then run every check and test.
# Each step prints a header so that a red CI run says where it broke.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
step() { echo; echo "=== $* ($(date +%T))"; }

step "dependencies"
hack/install-redis.sh

step "chart tools (helm, kubeconform, offline schemas)"
hack/install-chart-tools.sh

step "helm chart (lint, copies of config/, values table)"
make --no-print-directory helm-lint

step "kind end-to-end tests compile (go vet -tags e2e)"
go vet -tags e2e ./test/...

step "lint (gofmt, go vet, staticcheck)"
make --no-print-directory lint

step "go test"
go test -count=1 -timeout 30m ./...

step "go test -race (services)"
go test -count=1 -race -timeout 30m ./services/... ./internal/...

echo; echo "=== all tests passed ($(date +%T))"
