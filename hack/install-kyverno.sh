#!/usr/bin/env bash
# Installs bin/kyverno, Kyverno's command line (kubectl-kyverno), built from the Go module proxy and cached
# (a second run only checks the version). test/admission runs `kyverno apply` offline with the Pod Security
# and best-practice policies vendored in test/admission/policies against `helm template` output and the
# operator's rendered objects (docs/architecture.md, D33).
# github.com/kyverno/kyverno has a replace directive (its fork of k8s.io/pod-security-admission), which
# `go install pkg@version` refuses: it is built in a scratch module (bin/.src/kyverno) that carries the same
# replace. Measured on 2 shared cores: 7 min cold (18 s download, the rest compiling), seconds with a warm
# Go build cache; a 265 MB binary.
set -euo pipefail
cd "$(dirname "$0")/.."

KYVERNO_VERSION="${KYVERNO_VERSION:-v1.19.1}"
# The replace of github.com/kyverno/kyverno's own go.mod at $KYVERNO_VERSION.
PSA_REPLACE="github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f"
stamp=bin/.kyverno-version
log() { echo ">> install-kyverno: $*" >&2; }

if [[ -x bin/kyverno && "$(cat "$stamp" 2>/dev/null)" == "$KYVERNO_VERSION" ]]; then
  exit 0
fi
log "building kubectl-kyverno $KYVERNO_VERSION from the module proxy (about 7 minutes the first time)"
start=$SECONDS
src=bin/.src/kyverno
rm -rf "$src" && mkdir -p "$src"
printf 'module formsservice.local/kyverno-cli\n\ngo 1.26\n\nreplace k8s.io/pod-security-admission => %s\n' "$PSA_REPLACE" >"$src/go.mod"
(cd "$src" && GOFLAGS=-mod=mod go get "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno@$KYVERNO_VERSION" >&2 &&
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o ../../kyverno.tmp github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno >&2)
mv bin/kyverno.tmp bin/kyverno
echo "$KYVERNO_VERSION" >"$stamp"
log "kyverno $KYVERNO_VERSION built in $((SECONDS - start)) s"
