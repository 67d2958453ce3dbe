#!/usr/bin/env bash
# Installs the chart and monitoring tooling into bin/ (cached; a second run only checks versions):
#   bin/helm          helm v3 built with `go install`, told at link time that the cluster is Kubernetes
#                     $KUBE_VERSION (a plain `go install` believes it is 1.20 and refuses our
#                     kubeVersion constraint and .Capabilities checks);
#   bin/helm-docs     writes the chart README's values table from values.yaml (`make helm-docs`); its
#                     strict mode fails on an undocumented value (`make helm-lint`);
#   bin/promtool      Prometheus' rule checker, for `promtool test rules` on config/monitoring
#                     (TestShippedRules_PromtoolUnitTests). github.com/prometheus/prometheus has replace
#                     directives, so `go install ...@version` is refused: it is built in a scratch module
#                     (bin/.src/promtool) that requires it as a tool (`go get -tool`);
#   bin/crds/prometheus-operator/  the ServiceMonitor and PrometheusRule CRDs from the prometheus-operator
#                     module, installed into envtest (which has no Prometheus Operator) by the chart tests.
# The chart tests validate rendered manifests with a strict server-side dry run against envtest's real
# kube-apiserver, so no offline schemas or kubeconform are needed.
# Used by `make helm-lint`, `make helm-docs`, hack/test.sh and hack/e2e-kind.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
HELM_DOCS_VERSION="${HELM_DOCS_VERSION:-v1.14.2}"
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.314.0}" # the module version of Prometheus 3.14's promtool
KUBE_VERSION="${KUBE_VERSION:-1.37.1}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
export GOBIN="$PWD/bin" GOFLAGS="${GOFLAGS:-} -mod=mod"
mkdir -p bin
log() { echo ">> install-chart-tools: $*" >&2; }

IFS=. read -r kube_major kube_minor _ <<<"$KUBE_VERSION"

stamp=bin/.helm-version
want_helm="$HELM_VERSION kube-$kube_major.$kube_minor"
if [[ ! -x bin/helm || "$(cat "$stamp" 2>/dev/null)" != "$want_helm" ]]; then
  log "go install helm $HELM_VERSION for Kubernetes $kube_major.$kube_minor (about 1.5 minutes the first time)"
  h=helm.sh/helm/v3
  (cd "$(mktemp -d)" && go install -trimpath -ldflags "-s -w \
    -X $h/internal/version.version=$HELM_VERSION \
    -X $h/pkg/chartutil.k8sVersionMajor=$kube_major -X $h/pkg/chartutil.k8sVersionMinor=$kube_minor \
    -X $h/pkg/lint/rules.k8sVersionMajor=$kube_major -X $h/pkg/lint/rules.k8sVersionMinor=$kube_minor" \
    "$h/cmd/helm@$HELM_VERSION")
  echo "$want_helm" >"$stamp"
fi

stamp=bin/.helm-docs-version
if [[ ! -x bin/helm-docs || "$(cat "$stamp" 2>/dev/null)" != "$HELM_DOCS_VERSION" ]]; then
  log "go install helm-docs $HELM_DOCS_VERSION"
  (cd "$(mktemp -d)" && go install -trimpath -ldflags "-s -w" \
    "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION")
  echo "$HELM_DOCS_VERSION" >"$stamp"
fi

stamp=bin/.promtool-version
if [[ ! -x bin/promtool || "$(cat "$stamp" 2>/dev/null)" != "$PROMETHEUS_VERSION" ]]; then
  log "building promtool $PROMETHEUS_VERSION in a scratch module, without service discovery (remove_all_sd: rule tests need none)"
  # A scratch module and output of this run's own: two runs at once (two checkouts sharing bin/) must not
  # remove each other's folder.
  mkdir -p bin/.src && src="$(mktemp -d "$PWD/bin/.src/promtool.XXXXXX")"
  (cd "$src" && go mod init formsservice.local/promtool >/dev/null 2>&1 &&
    go get -tool "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" &&
    CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$src/promtool" github.com/prometheus/prometheus/cmd/promtool)
  mv "$src/promtool" bin/promtool && rm -rf "$src"
  echo "$PROMETHEUS_VERSION" >"$stamp"
fi

crds=bin/crds/prometheus-operator
if [[ "$(cat "$crds/.version" 2>/dev/null)" != "$PROMETHEUS_OPERATOR_VERSION" ]]; then
  log "copying the ServiceMonitor and PrometheusRule CRDs of prometheus-operator $PROMETHEUS_OPERATOR_VERSION"
  dir="$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  mkdir -p bin/crds && next="$(mktemp -d "$PWD/bin/crds/.prometheus-operator.XXXXXX")"
  for kind in servicemonitors prometheusrules; do
    install -m 0644 "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$next/"
  done
  echo "$PROMETHEUS_OPERATOR_VERSION" >"$next/.version"
  rm -rf "$crds" && mv "$next" "$crds"
fi
