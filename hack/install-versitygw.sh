#!/usr/bin/env bash
# Builds the Versity S3 Gateway (versitygw: a real S3 server, Apache 2.0, serving a directory as
# buckets; the backup tests' bucket: internal/tests3) from the Go module proxy once and caches it as
# bin/versitygw-<version>; prints that path. docs/architecture.md D39 says why this server.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}

mkdir -p bin
exe="$PWD/bin/versitygw-$VERSITYGW_VERSION"
if [[ ! -x $exe ]]; then
  echo ">> building versitygw $VERSITYGW_VERSION from the module proxy" >&2
  scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
  CGO_ENABLED=0 GOBIN="$scratch" GOFLAGS=-mod=mod \
    go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >&2
  # A rename is atomic: a test binary that runs this script at the same time sees the old state or the
  # whole binary, never half of it.
  mv "$scratch/versitygw" "$exe.tmp.$$" && mv "$exe.tmp.$$" "$exe"
fi
echo "$exe"
