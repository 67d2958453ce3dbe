#!/usr/bin/env bash
# Builds Kyverno's command-line tool (its `kyverno apply`, for the offline admission check of issue 26,
# item 5: no make target runs it yet) from the Go module proxy into bin/kyverno-<version>, and prints
# its path on stdout. github.com/kyverno/kyverno has a replace directive (its fork of
# k8s.io/pod-security-admission), so `go install ...@version` is refused: it is built in a scratch module
# (bin/.src/kyverno-<version>) that requires it and carries the same replace directives, read from
# Kyverno's own go.mod. Cold: several minutes on two cores; cached afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
KYVERNO_VERSION="${KYVERNO_VERSION:-v1.19.1}"
out="$PWD/bin/kyverno-$KYVERNO_VERSION"
log() { echo ">> install-kyverno: $*" >&2; }
if [[ -x "$out" ]]; then
  echo "$out"
  exit 0
fi
src="$PWD/bin/.src/kyverno-$KYVERNO_VERSION"
mkdir -p "$src"
log "building the Kyverno CLI $KYVERNO_VERSION from the module proxy (several minutes cold)"
start=$SECONDS
mod="$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "github.com/kyverno/kyverno@$KYVERNO_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[[ -f "$mod" ]] || { log "cannot download github.com/kyverno/kyverno@$KYVERNO_VERSION"; exit 1; }
gover="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$mod")"
{
  echo "module formsservice.local/kyverno-cli"
  echo
  echo "go $gover"
  echo
  echo "require github.com/kyverno/kyverno $KYVERNO_VERSION"
  echo
  grep '^replace ' "$mod" || true
} >"$src/go.mod"
rm -f "$src/go.sum"
(cd "$src" && GOFLAGS=-mod=mod go get "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno@$KYVERNO_VERSION" >&2 &&
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$KYVERNO_VERSION" \
    -o "$out.tmp" github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno >&2)
mv "$out.tmp" "$out"
log "built in $((SECONDS - start)) s"
echo "$out"
