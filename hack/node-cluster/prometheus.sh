#!/usr/bin/env bash
# The Prometheus Operator and a Prometheus for the monitoring phase of `make e2e` (test/e2e,
# prometheus_test.go), on the one-node cluster of hack/node-cluster:
#   prometheus.sh build     builds (once, cached under bin/node-cluster/) prometheus-operator, its
#                           prometheus-config-reloader and Prometheus from the Go module proxy, each in a
#                           scratch module like CoreDNS; Prometheus without service discovery but the
#                           kubernetes one (tags remove_all_sd,enable_kubernetes_sd); packs them as image
#                           tarballs into bin/node-cluster/images and copies the operator's CRDs. build.sh
#                           runs it.
#   prometheus.sh install   (cluster up) imports the images into the node's containerd, creates the CRDs,
#                           the operator (hack/node-cluster/prometheus/operator.yaml) and a Prometheus that
#                           selects every ServiceMonitor and PrometheusRule of the cluster
#                           (prometheus/prometheus.yaml), waits for the operator, and prints
#                           "<namespace>/<name>" of the Prometheus for FORMSSERVICE_E2E_PROMETHEUS. e2e.sh runs it.
# Versions are those of hack/install-chart-tools.sh (promtool and the CRDs the chart tests use).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
source "$here/lib.sh"
log() { echo ">> node-cluster/prometheus: $*" >&2; }

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.314.0}" # the Go module version of Prometheus 3.14.0
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
minor="${PROMETHEUS_VERSION#v0.}" && minor="${minor%%.*}"
prom_release="v$((minor / 100)).$((minor % 100)).${PROMETHEUS_VERSION##*.}" # v0.314.0 -> v3.14.0
PROM_DIR="$NC/prometheus-$prom_release"
OP_DIR="$NC/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
PROMETHEUS_IMAGE="registry.local/formsservice/prometheus:$prom_release"
OPERATOR_IMAGE="registry.local/formsservice/prometheus-operator:$PROMETHEUS_OPERATOR_VERSION"
RELOADER_IMAGE="registry.local/formsservice/prometheus-config-reloader:$PROMETHEUS_OPERATOR_VERSION"
NAMESPACE=monitoring
PROMETHEUS_NAME=e2e
# The CRDs the operator's Prometheus controller watches (the Alertmanager and Thanos ones are left out:
# without them the operator logs that it does not run those controllers).
CRDS=(prometheuses servicemonitors podmonitors probes scrapeconfigs prometheusrules)

pack() { # folder tarball tag entrypoint user
  go run ./hack/node-cluster/rootfsimage -dir "$1" -out "$2" -tag "$3" -entrypoint "$4" -user "$5"
}

# scratch_build dir module-path version output package tags ldflags: `go get` + `go build` in a module of
# its own under dir/src (the Prometheus modules have replace directives, so `go install` refuses them).
scratch_build() {
  local dir="$1" mod="$2" version="$3" out="$4" pkg="$5" tags="$6" ldflags="$7" src="$1/src"
  mkdir -p "$src"
  [[ -f "$src/go.mod" ]] || printf 'module formsservice.local/node-cluster-%s\n\ngo 1.26\n' "$(basename "$dir")" >"$src/go.mod"
  (cd "$src" && GOFLAGS=-mod=mod go get "$mod@$version" >&2 &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "../$out.tmp" "$pkg" >&2)
  mv "$dir/$out.tmp" "$dir/$out"
}

build() {
  mkdir -p "$IMAGES"
  if [[ ! -x "$PROM_DIR/prometheus" ]]; then
    log "building Prometheus $prom_release ($PROMETHEUS_VERSION) from the module proxy, kubernetes service discovery only (several minutes)"
    local start=$SECONDS v=github.com/prometheus/common/version
    scratch_build "$PROM_DIR" github.com/prometheus/prometheus/cmd/prometheus "$PROMETHEUS_VERSION" prometheus \
      github.com/prometheus/prometheus/cmd/prometheus remove_all_sd,enable_kubernetes_sd \
      "-X $v.Version=${prom_release#v} -X $v.Branch=module-proxy -X $v.Revision=$PROMETHEUS_VERSION"
    log "Prometheus built in $((SECONDS - start)) s"
  fi
  if [[ ! -x "$OP_DIR/operator" || ! -x "$OP_DIR/prometheus-config-reloader" ]]; then
    log "building prometheus-operator and prometheus-config-reloader $PROMETHEUS_OPERATOR_VERSION from the module proxy (several minutes)"
    local start=$SECONDS m=github.com/prometheus-operator/prometheus-operator v=github.com/prometheus/common/version
    for cmd in operator prometheus-config-reloader; do
      scratch_build "$OP_DIR" "$m/cmd/$cmd" "$PROMETHEUS_OPERATOR_VERSION" "$cmd" "$m/cmd/$cmd" "" \
        "-X $v.Version=${PROMETHEUS_OPERATOR_VERSION#v}"
    done
    log "prometheus-operator and prometheus-config-reloader built in $((SECONDS - start)) s"
  fi
  if [[ "$(cat "$OP_DIR/crds/.version" 2>/dev/null)" != "$PROMETHEUS_OPERATOR_VERSION" ]]; then
    local dir
    dir="$(cd "$OP_DIR/src" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "github.com/prometheus-operator/prometheus-operator")"
    rm -rf "$OP_DIR/crds" && mkdir -p "$OP_DIR/crds"
    for c in "${CRDS[@]}"; do install -m 0644 "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$c.yaml" "$OP_DIR/crds/"; done
    echo "$PROMETHEUS_OPERATOR_VERSION" >"$OP_DIR/crds/.version"
  fi
  local tmp
  if [[ ! -f "$IMAGES/prometheus-$prom_release.tar" ]]; then
    tmp="$(mktemp -d)"
    mkdir -p "$tmp/bin" "$tmp/prometheus" "$tmp/etc/prometheus" && chmod 0777 "$tmp/prometheus"
    cp "$PROM_DIR/prometheus" "$tmp/bin/prometheus"
    pack "$tmp" "$IMAGES/prometheus-$prom_release.tar.part" "$PROMETHEUS_IMAGE" /bin/prometheus 65534:65534
    mv "$IMAGES/prometheus-$prom_release.tar.part" "$IMAGES/prometheus-$prom_release.tar"
    rm -rf "$tmp"
  fi
  for cmd in operator prometheus-config-reloader; do
    local tar="$IMAGES/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION.tar" tag="$OPERATOR_IMAGE"
    [[ $cmd = operator ]] || { tar="$IMAGES/$cmd-$PROMETHEUS_OPERATOR_VERSION.tar" && tag="$RELOADER_IMAGE"; }
    [[ -f "$tar" ]] && continue
    tmp="$(mktemp -d)"
    mkdir -p "$tmp/bin"
    cp "$OP_DIR/$cmd" "$tmp/bin/$cmd"
    pack "$tmp" "$tar.part" "$tag" "/bin/$cmd" 65534:65534
    mv "$tar.part" "$tar"
    rm -rf "$tmp"
  done
}

install_cluster() {
  for tar in "prometheus-$prom_release" "prometheus-operator-$PROMETHEUS_OPERATOR_VERSION" \
    "prometheus-config-reloader-$PROMETHEUS_OPERATOR_VERSION"; do
    ctr_ images import "$IMAGES/$tar.tar" >/dev/null
  done
  # Server-side: the Prometheus CRD is too large for kubectl's last-applied annotation.
  kubectl_ apply --server-side -f "$OP_DIR/crds" >/dev/null
  # kubectl wait gives up at once ("status.conditions accessor error") on a CRD the API server has not
  # written a status for yet, which happened right after the apply: so it is asked again until 60 s.
  local deadline=$((SECONDS + 60))
  for c in "${CRDS[@]}"; do
    until kubectl_ wait --for condition=Established --timeout=5s "crd/$c.monitoring.coreos.com" >/dev/null 2>&1; do
      ((SECONDS < deadline)) || { echo ">> prometheus: CRD $c.monitoring.coreos.com not Established after 60s" >&2; return 1; }
      sleep 0.5
    done
  done
  sed -e "s#@NAMESPACE@#$NAMESPACE#g" -e "s#@OPERATOR_IMAGE@#$OPERATOR_IMAGE#g" -e "s#@RELOADER_IMAGE@#$RELOADER_IMAGE#g" \
    hack/node-cluster/prometheus/operator.yaml | kubectl_ apply -f - >/dev/null
  sed -e "s#@NAMESPACE@#$NAMESPACE#g" -e "s#@NAME@#$PROMETHEUS_NAME#g" -e "s#@IMAGE@#$PROMETHEUS_IMAGE#g" \
    -e "s#@VERSION@#$prom_release#g" hack/node-cluster/prometheus/prometheus.yaml | kubectl_ apply -f - >/dev/null
  if ! kubectl_ -n "$NAMESPACE" wait --for=condition=Available deploy/prometheus-operator --timeout=120s >/dev/null; then
    log "the Prometheus Operator is not Available after 120 s; its log:"
    kubectl_ -n "$NAMESPACE" logs deploy/prometheus-operator --tail=30 >&2 || true
    exit 1
  fi
  echo "$NAMESPACE/$PROMETHEUS_NAME"
}

case "${1:-}" in
build) build ;;
install) install_cluster ;;
*)
  echo "usage: $0 build|install" >&2
  exit 2
  ;;
esac
