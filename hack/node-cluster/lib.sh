# Shared settings of hack/node-cluster/*.sh (sourced). Everything the cluster writes lives under $RUN
# (bin/node-cluster/run), except what the kernel and a few hard-coded paths hold; down.sh restores those.
KUBE_VERSION="${KUBE_VERSION:-1.37.1}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.14.7}"
# v3.6: the module proxy here refuses dependencies of v3.7 (Traefik's fork of go-http-auth at the
# version v3.7 pins, and several of lego v5's DNS provider SDKs), so v3.7 cannot be built; v3.6 can.
TRAEFIK_VERSION="${TRAEFIK_VERSION:-v3.6.12}"
NC="$(cd -P "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin/node-cluster"
mkdir -p "$NC"
NC="$(cd -P "$NC" && pwd)" # bin/ may be a symlink: keep socket paths short and stable
KUBE_BIN="$NC/kube-$KUBE_VERSION"
IMAGES="$NC/images"
# Where a cluster's state lives: this checkout's bin/node-cluster, or, when up.sh tears down a cluster
# that a killed run of another checkout left, that checkout's (NODE_CLUSTER_STATE; the tools stay ours).
STATE="${NODE_CLUSTER_STATE:-$NC}"
RUN="$STATE/run"
HOST_BEFORE="$STATE/host-before.env" # the host's state before up.sh; present while a cluster may exist
# The machine has one cluster at a time (fixed bridge, node IP, host paths): this file names the state
# folder of the one that is up, so that any checkout can find and remove a leftover. /run is emptied at
# boot, as a cluster is.
OWNER_FILE=/run/formsservice-node-cluster.owner

BRIDGE=fsnode0
NODE_IP=10.244.0.1
NODE_NAME=formsservice-node
POD_SUBNET=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
GUARD_CHAIN=FSNODE-GUARD
CONTAINERD_SOCK="$RUN/containerd/containerd.sock"
PAUSE_IMAGE=registry.local/formsservice/pause:node-cluster
COREDNS_IMAGE=registry.local/formsservice/coredns:$COREDNS_VERSION
TRAEFIK_IMAGE=registry.local/formsservice/traefik:$TRAEFIK_VERSION
# The managed Redis of the e2e: Debian's redis-server packed here (build.sh), since the node cannot pull
# the operator's digest-pinned default (a digest names the registry's bytes, which a local build cannot
# reproduce); the e2e installs the chart with operands.redis.image set to it.
REDIS_IMAGE=registry.local/formsservice/redis:debian
# The S3 server of the e2e's backup phase (internal/tests3 runs the same version as a process).
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
VERSITYGW_IMAGE=registry.local/formsservice/versitygw:$VERSITYGW_VERSION
# The ingress controller of the end-to-end run (traefik.yaml): on the node's network, loopback only.
INGRESS_HTTPS_ADDR=127.0.0.1:30443
INGRESS_PING_PORT=30480

# The kernel settings the kubelet, kube-proxy and the CNI bridge plugin may change.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables net.ipv4.conf.all.route_localnet)
# Paths outside bin/ that containerd and the kubelet use whatever they are told; removed when up.sh
# found them absent.
HOST_PATHS=(/var/log/containers /var/log/pods /var/lib/kubelet /run/containerd /var/run/netns /opt/containerd /var/lib/cni)

ctr_() { ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }
kubectl_() { "$KUBE_BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }
