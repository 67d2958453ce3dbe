#!/usr/bin/env bash
# Builds (once, cached under bin/node-cluster/) everything the one-node cluster of hack/node-cluster
# runs: the Kubernetes binaries (build-kube.sh), CoreDNS with only the plugins cluster DNS needs, the
# Traefik ingress controller of the end-to-end run (traefik.yaml), the pause image, a Redis image made of Debian's redis-server, the S3 server versitygw, the sandbox cleaner (crisandboxes/), and the
# Debian packages containerd, runc, containernetworking-plugins and iptables. A second run rebuilds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
source "$here/lib.sh"
log() { echo ">> node-cluster/build: $*" >&2; }

need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v etcd >/dev/null || [[ -x /usr/bin/etcd ]] || need+=(etcd-server)
command -v curl >/dev/null || need+=(curl)
command -v openssl >/dev/null || need+=(openssl)
if [[ ${#need[@]} -gt 0 ]]; then
  log "installing ${need[*]} (Debian packages)"
  hack/apt-install.sh "${need[@]}"
fi

KUBE_VERSION="$KUBE_VERSION" hack/node-cluster/build-kube.sh >/dev/null

mkdir -p "$IMAGES"
# Each image is a folder packed by rootfsimage.
pack() { # folder tarball tag entrypoint user
  go run ./hack/node-cluster/rootfsimage -dir "$1" -out "$2" -tag "$3" -entrypoint "$4" -user "$5"
}

if [[ ! -f "$IMAGES/pause.tar" ]]; then
  log "building the pause image"
  tmp="$(mktemp -d)"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/pause" ./hack/node-cluster/pause
  pack "$tmp" "$IMAGES/pause.tar" "$PAUSE_IMAGE" /pause 65535:65535
  rm -rf "$tmp"
fi

# An image's tarball carries the version in its name (a bump builds the new one) and the name the
# scripts import is a link to it, as for Redis below.
coredns_tar="$IMAGES/coredns-$COREDNS_VERSION.tar"
if [[ ! -f "$coredns_tar" ]]; then
  src="$NC/coredns-$COREDNS_VERSION/src"
  if [[ ! -x "$NC/coredns-$COREDNS_VERSION/coredns" ]]; then
    log "building CoreDNS $COREDNS_VERSION from the module proxy (about a minute)"
    start=$SECONDS
    mkdir -p "$src"
    cp hack/node-cluster/coredns/main.go.txt "$src/main.go"
    [[ -f "$src/go.mod" ]] || printf 'module formsservice.local/node-cluster-coredns\n\ngo 1.26\n' >"$src/go.mod"
    (cd "$src" && GOFLAGS=-mod=mod go get "github.com/coredns/coredns@$COREDNS_VERSION" >&2 &&
      CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o ../coredns.tmp . >&2)
    mv "$NC/coredns-$COREDNS_VERSION/coredns.tmp" "$NC/coredns-$COREDNS_VERSION/coredns"
    log "CoreDNS built in $((SECONDS - start)) s"
  fi
  tmp="$(mktemp -d)"
  cp "$NC/coredns-$COREDNS_VERSION/coredns" "$tmp/coredns"
  pack "$tmp" "$coredns_tar" "$COREDNS_IMAGE" "/coredns" ""
  rm -rf "$tmp"
fi
ln -sf "$(basename "$coredns_tar")" "$IMAGES/coredns.tar"

# Traefik, the ingress controller of the end-to-end run: pure Go, built from the module proxy in a
# scratch module (its go.mod has replace directives, which `go install pkg@version` refuses).
traefik_tar="$IMAGES/traefik-$TRAEFIK_VERSION.tar"
if [[ ! -f "$traefik_tar" ]]; then
  dir="$NC/traefik-$TRAEFIK_VERSION"
  if [[ ! -x "$dir/traefik" ]]; then
    log "building Traefik $TRAEFIK_VERSION from the module proxy (several minutes cold)"
    start=$SECONDS
    mkdir -p "$dir/src"
    cp hack/node-cluster/traefik/go.mod.txt "$dir/src/go.mod"
    (cd "$dir/src" && GOFLAGS=-mod=mod go get "github.com/traefik/traefik/v3/cmd/traefik@$TRAEFIK_VERSION" >&2 &&
      CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
        -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
        -o ../traefik.tmp github.com/traefik/traefik/v3/cmd/traefik >&2)
    mv "$dir/traefik.tmp" "$dir/traefik"
    log "Traefik $TRAEFIK_VERSION built in $((SECONDS - start)) s"
  fi
  tmp="$(mktemp -d)"
  mkdir -p "$tmp/tmp" && chmod 1777 "$tmp/tmp"
  cp "$dir/traefik" "$tmp/traefik"
  pack "$tmp" "$traefik_tar" "$TRAEFIK_IMAGE" /traefik 65532:65532
  rm -rf "$tmp"
fi
ln -sf "$(basename "$traefik_tar")" "$IMAGES/traefik.tar"

# The e2e's Redis image ($REDIS_IMAGE, lib.sh; the chart's operands.redis.image in the e2e), so that the
# sample's managed Redis runs without a pull: Debian's redis-server and redis-cli, their shared libraries,
# and a shell for the probes; its user 999 is the operator's default --redis-run-as-user.
redis_image="$REDIS_IMAGE"
redis_tar="$IMAGES/redis-${redis_image//[:\/]/_}.tar"
if [[ ! -f "$redis_tar" ]]; then
  log "building the Redis image $redis_image from Debian's redis-server"
  hack/install-redis.sh >/dev/null
  tmp="$(mktemp -d)"
  mkdir -p "$tmp/usr/local/bin" "$tmp/bin" "$tmp/data" "$tmp/tmp" "$tmp/etc"
  chmod 1777 "$tmp/tmp" && chmod 0777 "$tmp/data"
  cp bin/redis-server bin/redis-cli "$tmp/usr/local/bin/"
  cp /bin/dash "$tmp/bin/sh"
  for b in bin/redis-server bin/redis-cli /bin/dash; do
    ldd "$b" | grep -o '/[^ ]*' | while read -r lib; do
      mkdir -p "$tmp$(dirname "$lib")" && cp -L "$lib" "$tmp$lib"
    done
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nredis:x:999:999:redis:/data:/bin/sh\n' >"$tmp/etc/passwd"
  printf 'root:x:0:\nredis:x:999:\n' >"$tmp/etc/group"
  pack "$tmp" "$redis_tar" "$redis_image" "" ""
  rm -rf "$tmp"
fi
ln -sf "$(basename "$redis_tar")" "$IMAGES/redis.tar"

# The S3 server of the e2e's backup phase (test/e2e/backup_test.go): versitygw, the static binary
# hack/install-versitygw.sh builds from the module proxy for internal/tests3, as the image's only file.
versitygw_tar="$IMAGES/versitygw-$VERSITYGW_VERSION.tar"
if [[ ! -f "$versitygw_tar" ]]; then
  log "building the versitygw image $VERSITYGW_IMAGE"
  exe="$(VERSITYGW_VERSION="$VERSITYGW_VERSION" hack/install-versitygw.sh)"
  tmp="$(mktemp -d)"
  mkdir -p "$tmp/tmp" && chmod 1777 "$tmp/tmp"
  cp "$exe" "$tmp/versitygw"
  pack "$tmp" "$versitygw_tar" "$VERSITYGW_IMAGE" /versitygw 65532:65532
  rm -rf "$tmp"
fi
ln -sf "$(basename "$versitygw_tar")" "$IMAGES/versitygw.tar"

if [[ ! -x "$NC/crisandboxes" ]]; then
  log "building crisandboxes (stops and removes pod sandboxes at teardown)"
  (cd hack/node-cluster/crisandboxes && CGO_ENABLED=0 go build -trimpath -o "$NC/crisandboxes.tmp" .)
  mv "$NC/crisandboxes.tmp" "$NC/crisandboxes"
fi

# --- Prometheus Operator, its config reloader and Prometheus (test/e2e's monitoring phase) -----------
hack/node-cluster/prometheus.sh build
