#!/usr/bin/env bash
# `make test`: install what the tests need (cached under bin/), then run every check and test.
# Each step prints a header so that a red CI run says where it broke.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
step() { echo; echo "=== $* ($(date +%T))"; }

step "dependencies"
hack/install-redis.sh
hack/install-mailpit.sh   # the real SMTP server of the mail tests (internal/testmail)
hack/install-versitygw.sh # the real S3 server of the backup tests (internal/tests3)
hack/install-axe.sh       # axe-core, the accessibility checks of the browser tests (internal/testbrowser)

step "envtest control plane (kube-apiserver built from the module proxy + etcd, cached in bin/k8s/)"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"

step "generated code is fresh (deepcopy, CRD, RBAC from the kubebuilder markers)"
make --no-print-directory verify-generated

step "container image without Docker (make image; its test opens the tarball)"
make --no-print-directory image
export FORMSSERVICE_IMAGE_TAR="$PWD/bin/formsservice-image.tar"

step "chart and monitoring tools (helm, helm-docs, promtool, Prometheus Operator CRDs), Chromium, the relying parties of test/interop"
hack/install-chart-tools.sh
hack/install-chromium.sh
hack/install-interop.sh

step "helm chart (lint, copies of config/, values table)"
make --no-print-directory helm-lint

step "kind end-to-end tests compile (go vet -tags e2e)"
go vet -tags e2e ./test/...

step "lint (gofmt, go vet, staticcheck)"
make --no-print-directory lint

step "browser SDK (sdk/): npm ci, committed dist/ is fresh, size budget, unit tests"
(cd sdk && npm ci --no-audit --no-fund && npm run check-dist && npm test)

step "go test"
go test -count=1 -timeout 30m ./...

step "go test -race (services)"
go test -count=1 -race -timeout 30m ./services/... ./internal/...

step "fuzz: every fuzz target for ${FUZZTIME:-10s} on its seeds and checked-in corpus (hack/fuzz.sh)"
hack/fuzz.sh

step "browser SDK and demo page in headless Chromium against formsservice dev + redis-server (screenshots in artifacts/)"
(cd sdk && npm run test:browser)

step "React + Vite example (sdk/examples/react-vite): npm ci (the SDK packed from sdk/), type check, production build, headless Chromium against formsservice dev"
(cd sdk/examples/react-vite && npm ci --no-audit --no-fund && npm run typecheck && npm run build && npm test)

step "end to end on a real one-node cluster of this machine: chart, sample, forms, browser sign-in, health, HPA, RBAC, ingress, Prometheus, day two (make e2e, hack/node-cluster)"
make --no-print-directory e2e

echo; echo "=== all tests passed ($(date +%T))"
