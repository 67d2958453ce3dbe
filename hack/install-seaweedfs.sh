#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (a real S3-compatible object store, Apache 2.0; the backup tests' bucket:
# internal/tests3) from the Go module proxy once and caches it as bin/weed-<version>; prints that path.
# Its go.mod has replace directives, so `go install …@version` refuses it: the module is downloaded and
# built as the main module in a scratch copy. Cold: several minutes on 2 cores; warm: nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
SEAWEEDFS_VERSION=${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}

mkdir -p bin
exe="$PWD/bin/weed-$SEAWEEDFS_VERSION"
if [[ ! -x $exe ]]; then
  echo ">> building SeaweedFS $SEAWEEDFS_VERSION from the module proxy" >&2
  scratch=$(mktemp -d); trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
  dir=$(cd "$scratch" && GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  cp -r "$dir" "$scratch/src" && chmod -R u+w "$scratch/src"
  (cd "$scratch/src" && CGO_ENABLED=0 go build -trimpath -o "$scratch/weed" ./weed) >&2
  # A rename is atomic: a test binary that runs this script at the same time sees the old state or the
  # whole binary, never half of it.
  mv "$scratch/weed" "$exe.tmp.$$" && mv "$exe.tmp.$$" "$exe"
fi
echo "$exe"
