#!/usr/bin/env bash
# Builds the formsservice binaries into DIR (make build, make image, make bench, the Dockerfile):
#   DIR/formsservice-forms  the forms service alone (-tags formsonly): what `formsservice forms` runs
#   DIR/formsservice        everything, stamped with the build ID of that formsservice-forms, so that
#                           `formsservice forms` hands over to exactly it (docs/architecture.md, D31)
# Usage: [LDFLAGS=...] hack/build.sh DIR [go build flags...]; GOOS/GOARCH/CGO_ENABLED are go build's.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
go build "$@" -tags formsonly -ldflags "${LDFLAGS:-}" -o "$dir/formsservice-forms" ./cmd/formsservice
id=$(env -u GOOS -u GOARCH go tool buildid "$dir/formsservice-forms")
go build "$@" -ldflags "${LDFLAGS:-} -X main.formsBinaryID=$id" -o "$dir/formsservice" ./cmd/formsservice
