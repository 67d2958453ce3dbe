#!/usr/bin/env bash
# `make bench`: Go benchmarks, then bounded load runs on loopback. Everything stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
echo "=== Go benchmarks"
go test -run '^$' -bench . -benchmem -benchtime 2s ./services/...
