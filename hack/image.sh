#!/usr/bin/env bash
# `make image`: builds the static binaries and packs them into bin/formsservice-image.tar, an image on an
# empty base (no shell, no libc) that runs as user 65532, without a Docker engine:
#   docker load -i bin/formsservice-image.tar          (or podman load)
#   kind load image-archive bin/formsservice-image.tar
# One image serves everything: entrypoint /formsservice (forms|auth|health|...; `forms` runs as
# /formsservice-forms, the forms service built alone), and /manager, the operator.
#   IMG      name:tag inside the tarball   (default ghcr.io/formsservice/formsservice:<version>)
#   ARCH     GOARCH of the binaries        (default: this machine's)
#   VERSION  version reported by /health and the image labels (default: git describe, else "dev")
#   OUT, BUILD_DIR  the tarball (default bin/formsservice-image.tar) and where the binaries are built
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
IMG="${IMG:-ghcr.io/formsservice/formsservice:${VERSION//+/-}}"
ARCH="${ARCH:-$(go env GOARCH)}"
REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
# The last commit's time, so that the same sources give the same image digest.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
CREATED="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
OUT="${OUT:-bin/formsservice-image.tar}"

build_dir="${BUILD_DIR:-bin/image/linux_$ARCH}" # where the binaries are built
mkdir -p "$build_dir"
echo ">> building static binaries for linux/$ARCH ($VERSION)" >&2
# formsservice and formsservice-forms, the forms service alone that `formsservice forms` hands over to
LDFLAGS="-s -w -X main.version=$VERSION" CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" hack/build.sh "$build_dir" -trimpath
CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" go build -trimpath -ldflags "-s -w" \
  -o "$build_dir/manager" ./cmd/manager

ca_certs=/etc/ssl/certs/ca-certificates.crt
if [[ ! -f $ca_certs ]]; then
  echo ">> installing ca-certificates (Debian package) for the image's CA bundle" >&2
  hack/apt-install.sh ca-certificates
fi

go run ./hack/imagebuild \
  -out "$OUT" -tag "$IMG" -arch "$ARCH" -ca-certs "$ca_certs" \
  -binary "/formsservice=$build_dir/formsservice" -binary "/formsservice-forms=$build_dir/formsservice-forms" \
  -binary "/manager=$build_dir/manager" \
  -entrypoint /formsservice \
  -label "org.opencontainers.image.title=formsservice" \
  -label "org.opencontainers.image.description=Forms, sign-in (OAuth 2.0 / OpenID Connect) and health services, and their Kubernetes operator" \
  -label "org.opencontainers.image.source=https://github.com/formsservice/formsservice" \
  -label "org.opencontainers.image.url=https://github.com/formsservice/formsservice" \
  -label "org.opencontainers.image.licenses=Apache-2.0" \
  -label "org.opencontainers.image.version=$VERSION" \
  -label "org.opencontainers.image.revision=$REVISION" \
  -label "org.opencontainers.image.created=$CREATED"
