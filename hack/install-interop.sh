#!/usr/bin/env bash
# What the interoperability matrix (test/interop) needs besides Chromium and redis-server:
#  - the npm relying parties (openid-client, oidc-client-ts) at the versions of test/interop/package-lock.json;
#  - oauth2-proxy, built from the Go module proxy once and cached as bin/oauth2-proxy-<version>.
# Prints nothing on a warm machine but the oauth2-proxy path; a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
OAUTH2_PROXY_VERSION=${OAUTH2_PROXY_VERSION:-v7.15.4}

# npm ci once per package-lock.json: a stamp in node_modules/ records the lock file it installed.
lock_sum="$(sha256sum test/interop/package-lock.json | cut -d' ' -f1)"
if [[ "$(cat test/interop/node_modules/.formsservice-lock.sha256 2>/dev/null)" != "$lock_sum" ]]; then
  (cd test/interop && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$lock_sum" >test/interop/node_modules/.formsservice-lock.sha256
fi

mkdir -p bin
exe="$PWD/bin/oauth2-proxy-$OAUTH2_PROXY_VERSION"
if [[ ! -x $exe ]]; then
  echo ">> building oauth2-proxy $OAUTH2_PROXY_VERSION from the module proxy" >&2
  # `go install …@version` is refused (its go.mod has replace directives): a scratch module pins it as a
  # tool and builds it from there.
  scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && go mod init interop-tools >/dev/null 2>&1 &&
    go get -tool "github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION" >&2 &&
    CGO_ENABLED=0 GOBIN="$scratch/bin" go install github.com/oauth2-proxy/oauth2-proxy/v7)
  mv "$scratch/bin/oauth2-proxy" "$exe.tmp" && mv "$exe.tmp" "$exe"
fi
echo "$exe"
