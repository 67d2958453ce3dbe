#!/usr/bin/env bash
# `make e2e`: test/e2e on a real one-node cluster of this machine (no Docker, no registry):
#   build.sh (node binaries, CoreDNS, Traefik, pause and Redis images; cached under bin/node-cluster/) and
#   `make image` (written to bin/node-cluster/, since bin/ may be shared) -> up.sh (etcd, control plane,
#   containerd + kubelet, kube-proxy, CoreDNS; waits Ready) -> ctr images import of the image -> the
#   Traefik ingress controller (traefik.yaml: IngressClass traefik, TLS entry point on the host's
#   loopback at $INGRESS_HTTPS_ADDR) -> the Prometheus Operator and a Prometheus (prometheus.sh) -> go
#   test -tags e2e ./test/e2e/, which reaches the services through port-forwards and through the
#   FormsService's Ingress -> down.sh from a trap, whatever happened.
#   Prints a timeline, so that a red run says where it broke.
#   KEEP_CLUSTER=1   leave the cluster up for debugging (hack/node-cluster/down.sh removes it later)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
source "$here/lib.sh"
IMG="${IMG:-ghcr.io/formsservice/formsservice:e2e}"
export PATH="$PWD/bin:$PATH"
t0=$SECONDS
timeline=()
mark() {
  timeline+=("$(printf '%5ss  %s' "$((SECONDS - t0))" "$1")")
  echo ">> e2e: [$((SECONDS - t0))s] $1" >&2
}
report() {
  local rc=$?
  if [[ "${KEEP_CLUSTER:-}" == 1 ]]; then
    echo ">> e2e: keeping the cluster (KEEP_CLUSTER=1): KUBECONFIG=$RUN/admin.kubeconfig; hack/node-cluster/down.sh removes it" >&2
  else
    hack/node-cluster/down.sh
    mark "cluster torn down, host restored"
  fi
  flock -u 9 2>/dev/null || true # released even if a daemon of the cluster outlived down.sh
  echo "e2e timeline ($([[ $rc = 0 ]] && echo PASS || echo "FAIL, exit $rc")):"
  printf '  %s\n' "${timeline[@]}"
  exit "$rc"
}
trap report EXIT
trap 'exit 130' INT TERM

hack/node-cluster/build.sh
hack/install-chart-tools.sh >/dev/null
chrome="$(hack/install-chromium.sh)"
axe="$(hack/install-axe.sh)" # the console's page through the ingress is checked with axe-core
# bin/ may be shared between checkouts whose runs wait for each other below: the image tarball is this
# checkout's own, or a run could import the image another checkout built in the meantime.
image_tar="$NC/formsservice-image-$(printf %s "$PWD" | cksum | cut -d' ' -f1).tar"
IMG="$IMG" OUT="$image_tar" hack/image.sh >/dev/null
mark "node components, images and tools built (or cached)"

# One cluster per machine: its bridge, node IP and host paths are fixed, so a second run (another
# checkout, say) waits here for the first to tear its cluster down. The daemons up.sh starts inherit
# the lock; report() releases it once the cluster is down.
exec 9>/run/formsservice-node-cluster.lock
if ! flock -n 9; then
  echo ">> e2e: another node cluster runs on this machine; waiting for it to end" >&2
  flock -w 1800 9 || { echo ">> e2e: the other node cluster still runs after 30 minutes" >&2; exit 1; }
  mark "waited for another node cluster on this machine"
fi
kubeconfig="$(hack/node-cluster/up.sh)"
mark "cluster up: node and CoreDNS Ready"

ctr_ images import "$image_tar" >/dev/null
# The list is read whole before it is searched: `ctr ... | grep -q` under pipefail fails when grep exits
# at the first match and ctr, still writing, gets SIGPIPE (it did, with the image imported).
images="$(ctr_ images ls -q)"
grep -q "${IMG#*/}" <<<"$images" || { echo ">> e2e: $IMG is not in containerd after the import" >&2; exit 1; }
# The same image under a second tag: the e2e upgrades the operator to it and watches the services roll.
ctr_ images tag "$IMG" "$IMG-next" >/dev/null
# The same for the managed Redis (up.sh imported it): the upgrade changes the operator's Redis image too.
ctr_ images tag "$REDIS_IMAGE" "$REDIS_IMAGE-next" >/dev/null
mark "image $IMG loaded (and tagged $IMG-next; $REDIS_IMAGE-next)"

# The ingress controller: Traefik on the node's network, listening on loopback only (traefik.yaml says
# why). The test routes the FormsService's Ingress through it (IngressClass traefik) over TLS.
ctr_ images import "$IMAGES/traefik.tar" >/dev/null
sed -e "s#@IMAGE@#$TRAEFIK_IMAGE#" -e "s#@HTTPS_ADDR@#$INGRESS_HTTPS_ADDR#" \
  -e "s#@PING_ADDR@#127.0.0.1:$INGRESS_PING_PORT#" -e "s#@PING_PORT@#$INGRESS_PING_PORT#" \
  hack/node-cluster/traefik.yaml | kubectl_ apply -f - >/dev/null
if ! kubectl_ -n ingress-traefik wait --for=condition=Available deploy/traefik --timeout=120s >/dev/null; then
  echo ">> e2e: Traefik not Available after 120 s" >&2
  kubectl_ -n ingress-traefik describe pods >&2 || true
  kubectl_ -n ingress-traefik logs deploy/traefik --tail=30 >&2 || true
  exit 1
fi
mark "ingress controller Traefik $TRAEFIK_VERSION Ready on $INGRESS_HTTPS_ADDR"

# --- the Prometheus Operator and a Prometheus for test/e2e's monitoring phase (prometheus.sh) ---------
prometheus="$(hack/node-cluster/prometheus.sh install)"
export FORMSSERVICE_E2E_PROMETHEUS="$prometheus"
mark "Prometheus Operator running, Prometheus $prometheus created"

# The S3 server of the backup phase (backup_test.go runs it as a Deployment).
ctr_ images import "$IMAGES/versitygw.tar" >/dev/null

echo ">> e2e: running test/e2e" >&2
set +e
FORMSSERVICE_E2E_KUBECONFIG="$kubeconfig" FORMSSERVICE_E2E_IMAGE="$IMG" FORMSSERVICE_E2E_NEXT_IMAGE="$IMG-next" CHROME_BIN="$chrome" AXE_CORE_JS="$axe" \
  FORMSSERVICE_E2E_REDIS_IMAGE="$REDIS_IMAGE" FORMSSERVICE_E2E_NEXT_REDIS_IMAGE="$REDIS_IMAGE-next" FORMSSERVICE_E2E_S3_IMAGE="$VERSITYGW_IMAGE" FORMSSERVICE_E2E_INGRESS="$INGRESS_HTTPS_ADDR" FORMSSERVICE_E2E_INGRESS_CLASS=traefik \
  FORMSSERVICE_E2E_INGRESS_PROXIES="$CLUSTER_CIDR" go test -tags e2e -count=1 -v -timeout 20m ./test/e2e/ 2>&1 | tee "$NC/e2e-test.log"
rc=${PIPESTATUS[0]}
set -e
# The test's phases and its top-level subtests (not the contract's many small cases).
while read -r line; do timeline+=("        $line"); done < <(
  grep -E '^ {0,4}--- (PASS|FAIL|SKIP)|e2e phase at' "$NC/e2e-test.log" | grep -vE -- '--- [A-Z]+: [^ ]*/[^ ]*/' |
    sed -e 's/^[[:space:]]*//' -e 's/^[a-z_]*\.go:[0-9]*: //')
if [[ $rc != 0 ]]; then
  mark "test/e2e FAILED"
  # What the cluster looked like, for the red run's log.
  kubectl_ get pods -A -o wide >&2 || true
  kubectl_ get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -30 >&2 || true
  kubectl_ -n ingress-traefik logs deploy/traefik --tail=40 >&2 || true
  exit "$rc"
fi
mark "test/e2e passed"
