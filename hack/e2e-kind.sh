#!/usr/bin/env bash
# `make e2e-kind`: the whole path a platform team takes, on a throw-away kind cluster:
#   make image -> kind create cluster -> kind load image-archive -> (test/e2e, build tag e2e:) helm install
#   the chart -> apply config/samples -> wait for Ready -> forms contract, a full sign-in with headless
#   Chromium and GET /health through port-forwards -> kind delete cluster.
# The checks are the same code as the local end-to-end test (test/contract, test/signin).
# No ingress controller runs here: test/e2e skips its ingress checks (make e2e runs them, on Traefik).
#
# kind runs Kubernetes in Docker containers and the cluster pulls the digest-pinned Valkey image: without a reachable
# Docker daemon this script says so and exits 0 (SKIPPED), so that `make e2e-kind` is safe everywhere.
#   KEEP_CLUSTER=1   keep the cluster for debugging (kind delete cluster --name $CLUSTER later)
#   CLUSTER=name     kind cluster name (default formsservice-e2e)
set -euo pipefail
cd "$(dirname "$0")/.."

KIND_VERSION="${KIND_VERSION:-v0.33.0}"
CLUSTER="${CLUSTER:-formsservice-e2e}"
IMG="${IMG:-ghcr.io/formsservice/formsservice:e2e}"
export PATH="$PWD/bin:$PATH"
log() { echo ">> e2e-kind: $*" >&2; }
skip() { echo "e2e-kind: SKIPPED: $*"; exit 0; }

command -v docker >/dev/null || skip "docker is not installed; kind needs a Docker engine to run the cluster's nodes"
docker info >/dev/null 2>&1 || skip "the Docker daemon is not reachable (docker info failed); start Docker and run make e2e-kind again"
if ! command -v kind >/dev/null; then
  log "installing kind $KIND_VERSION into bin/"
  GOBIN="$PWD/bin" go install "sigs.k8s.io/kind@$KIND_VERSION" || skip "kind is not installed and go install sigs.k8s.io/kind@$KIND_VERSION failed"
fi
hack/install-chart-tools.sh
chrome="$(hack/install-chromium.sh)"

log "building the image $IMG (make image)"
IMG="$IMG" OUT=bin/formsservice-image.tar hack/image.sh

if grep -qx "$CLUSTER" <<<"$(kind get clusters 2>/dev/null)"; then
  log "deleting a leftover cluster $CLUSTER"
  kind delete cluster --name "$CLUSTER"
fi
log "creating kind cluster $CLUSTER"
kind create cluster --name "$CLUSTER" --wait 180s
cleanup() {
  if [[ "${KEEP_CLUSTER:-}" == 1 ]]; then
    log "keeping cluster $CLUSTER (KEEP_CLUSTER=1)"
  else
    log "deleting cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER" || true
  fi
}
trap cleanup EXIT

log "loading the image into the cluster"
kind load image-archive bin/formsservice-image.tar --name "$CLUSTER"
# The managed Redis of the sample (controllers/render's DefaultRedisImage) is pinned by digest, which
# `kind load docker-image` does not take (kind looks the image up by name:tag): the kind node pulls it.
kubeconfig="$(mktemp)"
kind get kubeconfig --name "$CLUSTER" >"$kubeconfig"

log "running test/e2e"
FORMSSERVICE_E2E_KUBECONFIG="$kubeconfig" FORMSSERVICE_E2E_IMAGE="$IMG" CHROME_BIN="$chrome" \
  go test -tags e2e -count=1 -v -timeout 20m ./test/e2e/...
