#!/usr/bin/env bash
# Builds Mailpit (a real SMTP server with an HTTP API, used by the mail tests: internal/testmail) from the
# Go module proxy once and caches it as bin/mailpit-<version>; prints that path. `go install …@version`
# works for it (no replace directives); CGO_ENABLED=0 because its SQLite is the pure-Go modernc one.
# Cold: a few minutes on 2 cores (mostly downloading and compiling modernc.org/sqlite); warm: nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
MAILPIT_VERSION=${MAILPIT_VERSION:-v1.33.1}

mkdir -p bin
exe="$PWD/bin/mailpit-$MAILPIT_VERSION"
if [[ ! -x $exe ]]; then
  echo ">> building Mailpit $MAILPIT_VERSION from the module proxy" >&2
  scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
  CGO_ENABLED=0 GOBIN="$scratch" GOFLAGS=-mod=mod \
    go install -ldflags "-X github.com/axllent/mailpit/config.Version=$MAILPIT_VERSION" \
    "github.com/axllent/mailpit@$MAILPIT_VERSION" >&2
  # A rename is atomic: a test binary that runs this script at the same time sees the old state or the
  # whole binary, never half of it.
  mv "$scratch/mailpit" "$exe.tmp.$$" && mv "$exe.tmp.$$" "$exe"
fi
echo "$exe"
