#!/usr/bin/env bash
# Builds Dex (the federation tests' second upstream OpenID Connect provider: internal/testdex) from the Go
# module proxy once and caches it as bin/dex-<version>; prints that path.
#
# `go install github.com/dexidp/dex/cmd/dex@…` is refused: Dex's go.mod replaces its own API module with
# the ./api/v2 folder. And its v2.x tags are not versions of the module path github.com/dexidp/dex (no
# /v2 suffix), so the proxy knows a release only by the pseudo-version of the tag's commit
# (v2.45.1 = 11d2eeb52b42, committed 2026-03-03 13:39:05 UTC). So, as for kube-apiserver
# (hack/envtest-assets.sh) and oauth2-proxy (hack/install-interop.sh), a scratch module requires Dex as a
# tool and stands in for the replace: it pins github.com/dexidp/dex/api/v2 to the released v2.4.0, whose
# code is the ./api/v2 folder of that commit (only its go.mod's requirements differ).
# Cold (an empty Go build cache, the modules already downloaded): about 6 minutes on the 2 cores here while
# other builds ran (compiling its connectors' and storages' SDKs), about 1 minute with a warm build cache;
# warm bin/: nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
DEX_VERSION=${DEX_VERSION:-v2.45.1}
DEX_PSEUDO_VERSION=${DEX_PSEUDO_VERSION:-v0.0.0-20260303133905-11d2eeb52b42}
DEX_API_VERSION=${DEX_API_VERSION:-v2.4.0}

mkdir -p bin
exe="$PWD/bin/dex-$DEX_VERSION"
if [[ ! -x $exe ]]; then
  echo ">> building Dex $DEX_VERSION ($DEX_PSEUDO_VERSION) from the module proxy" >&2
  scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && go mod init formsservice.local/dex >/dev/null 2>&1 &&
    go mod edit -replace "github.com/dexidp/dex/api/v2=github.com/dexidp/dex/api/v2@$DEX_API_VERSION" &&
    GOFLAGS=-mod=mod go get -tool "github.com/dexidp/dex/cmd/dex@$DEX_PSEUDO_VERSION" >&2 &&
    CGO_ENABLED=0 GOBIN="$scratch/bin" GOFLAGS=-mod=mod go install -trimpath \
      -ldflags "-s -w -X main.version=$DEX_VERSION" github.com/dexidp/dex/cmd/dex >&2)
  # A rename is atomic: a test binary that runs this script at the same time sees no half-written file.
  mv "$scratch/bin/dex" "$exe.tmp.$$" && mv "$exe.tmp.$$" "$exe"
fi
echo "$exe"
