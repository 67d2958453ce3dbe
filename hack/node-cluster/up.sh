#!/usr/bin/env bash
# Starts a one-node Kubernetes cluster on this machine without Docker: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, a kubelet running real pods through its own containerd (own
# root, state and socket), kube-proxy and CoreDNS. The node lives on a bridge ($BRIDGE, $NODE_IP) that
# up.sh creates; a guard rule drops every pod packet not meant for the pod or service range, and CoreDNS
# has no upstream, so nothing leaves this machine. Waits until the node and CoreDNS are Ready and prints
# the admin kubeconfig's path on stdout. A leftover cluster (killed run) is torn down first (down.sh).
# Everything is built by build.sh first (cached under bin/node-cluster/). Root only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
source "$here/lib.sh"
log() { echo ">> node-cluster/up: $*" >&2; }
[[ $(id -u) = 0 ]] || { log "needs root (bridge, iptables, containerd, kubelet)"; exit 1; }

hack/node-cluster/build.sh
if [[ -f "$HOST_BEFORE" || -d "$RUN" ]]; then
  log "a cluster from an earlier run is still here: tearing it down first"
  hack/node-cluster/down.sh
fi
# A cluster that a killed run of another checkout (another clone, a CI run) left: its state is in that
# checkout's bin/, so our own check above cannot see it. The owner file names it; a leftover from before
# the owner file is found by its processes' command lines. We hold the machine's cluster lock (e2e.sh),
# so no live run owns it.
if [[ -f $OWNER_FILE && "$(cat "$OWNER_FILE")" != "$NC" ]]; then
  other="$(cat "$OWNER_FILE")"
  log "a cluster that a run from $other left is still here: tearing it down first"
  NODE_CLUSTER_STATE="$other" hack/node-cluster/down.sh
  rm -f "$OWNER_FILE"
fi
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  other=""
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" =~ (/[^ ]*/bin/node-cluster)/run/ ]] || continue
    other="${BASH_REMATCH[1]}"
    break
  done
  log "the bridge $BRIDGE of an earlier cluster is still here${other:+ (its processes run from $other)}: tearing it down first"
  NODE_CLUSTER_STATE="${other:-$NC}" hack/node-cluster/down.sh
fi
if grep -q " $NODE_IP/" <<<"$(ip -o addr show)"; then log "$NODE_IP is already on an interface of this machine"; exit 1; fi

# --- the host's state, so that down.sh can put it back -------------------------------------------------
{
  for s in "${SYSCTLS[@]}"; do v="$(sysctl -n "$s" 2>/dev/null)" && printf 'sysctl %s %q\n' "$s" "$v"; done
  for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || echo "absent $p"; done
} >"$HOST_BEFORE.tmp"
mv "$HOST_BEFORE.tmp" "$HOST_BEFORE"
echo "$STATE" >"$OWNER_FILE"
mkdir -p "$RUN"/{pki,logs,pids,containerd,cni/net.d,cni/ipam,kubelet,pod-logs,pv,etcd}
t0=$SECONDS
elapsed() { echo "$((SECONDS - t0))s"; }

# --- network: the bridge, the service route and the guard rule ---------------------------------------
ip link add "$BRIDGE" type bridge
ip addr add "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
ip route add "$SERVICE_CIDR" dev "$BRIDGE"
# Packets from pods may go to pods, to Services and to the node itself: everything else is dropped
# before routing, so no pod reaches beyond this machine even with ip_forward on.
iptables -t raw -N "$GUARD_CHAIN"
iptables -t raw -A "$GUARD_CHAIN" -d "$CLUSTER_CIDR" -j RETURN
iptables -t raw -A "$GUARD_CHAIN" -d "$SERVICE_CIDR" -j RETURN
iptables -t raw -A "$GUARD_CHAIN" -j DROP
iptables -t raw -I PREROUTING -i "$BRIDGE" -j "$GUARD_CHAIN"

# --- certificates ----------------------------------------------------------------------------------
pki="$RUN/pki"
openssl_q() { openssl "$@" 2>/dev/null; }
openssl_q req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=formsservice-node-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt"
cert() { # name subject [subjectAltName]
  openssl_q req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr"
  local ext="$pki/$1.ext"
  if [[ -n "${3:-}" ]]; then echo "subjectAltName=$3" >"$ext"; else : >"$ext"; fi
  echo "extendedKeyUsage=serverAuth,clientAuth" >>"$ext"
  openssl_q x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
    -extfile "$ext" -out "$pki/$1.crt"
}
cert apiserver "/CN=kube-apiserver" \
  "IP:$NODE_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=formsservice-node-admin"
cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
cert kubelet-serving "/CN=$NODE_NAME" "IP:$NODE_IP,DNS:$NODE_NAME"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kube-proxy "/CN=system:kube-proxy"
openssl_q genrsa -out "$pki/sa.key" 2048
openssl_q rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
kubeconfig() { # name
  cat >"$RUN/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$pki/$1.crt", client-key: "$pki/$1.key"}
contexts:
- name: node
  context: {cluster: node, user: $1}
current-context: node
KC
}
for k in admin kubelet controller-manager scheduler kube-proxy; do kubeconfig "$k"; done

# --- processes ---------------------------------------------------------------------------------------
start() { # name command...
  local name="$1"
  shift
  "$@" >"$RUN/logs/$name.log" 2>&1 &
  echo $! >"$RUN/pids/$name"
}
alive() { kill -0 "$(cat "$RUN/pids/$1")" 2>/dev/null || { log "$1 exited; its log:"; tail -30 "$RUN/logs/$1.log" >&2; exit 1; }; }
wait_for() { # what timeout-seconds process command...
  local what="$1" timeout="$2" proc="$3" deadline=$((SECONDS + $2))
  shift 3
  until "$@" >/dev/null 2>&1; do
    alive "$proc"
    ((SECONDS < deadline)) || { log "$what not ready after ${timeout}s; log of $proc:"; tail -30 "$RUN/logs/$proc.log" >&2; exit 1; }
    sleep 0.5
  done
}

start etcd "$(command -v etcd || echo /usr/bin/etcd)" --data-dir "$RUN/etcd" --name node \
  --listen-client-urls "http://$NODE_IP:2379" --advertise-client-urls "http://$NODE_IP:2379" \
  --listen-peer-urls "http://$NODE_IP:2380" --initial-advertise-peer-urls "http://$NODE_IP:2380" \
  --initial-cluster "node=http://$NODE_IP:2380" --unsafe-no-fsync
wait_for etcd 30 etcd curl -sf "http://$NODE_IP:2379/health"

start kube-apiserver "$KUBE_BIN/kube-apiserver" --etcd-servers "http://$NODE_IP:2379" \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
  --service-cluster-ip-range "$SERVICE_CIDR" --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
  --kubelet-client-certificate "$pki/apiserver-kubelet.crt" --kubelet-client-key "$pki/apiserver-kubelet.key" \
  --kubelet-preferred-address-types InternalIP --profiling=false
wait_for kube-apiserver 120 kube-apiserver kubectl_ get --raw /readyz
log "control plane API up at $(elapsed)"

start kube-controller-manager "$KUBE_BIN/kube-controller-manager" --kubeconfig "$RUN/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$RUN/controller-manager.kubeconfig" --authorization-kubeconfig "$RUN/controller-manager.kubeconfig" \
  --bind-address "$NODE_IP" --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --use-service-account-credentials --leader-elect=false --service-cluster-ip-range "$SERVICE_CIDR" \
  --cluster-cidr "$CLUSTER_CIDR" --allocate-node-cidrs=false --profiling=false
start kube-scheduler "$KUBE_BIN/kube-scheduler" --kubeconfig "$RUN/scheduler.kubeconfig" \
  --authentication-kubeconfig "$RUN/scheduler.kubeconfig" --authorization-kubeconfig "$RUN/scheduler.kubeconfig" \
  --bind-address "$NODE_IP" --leader-elect=false --profiling=false

# containerd: its own root, state, socket and CNI configuration; the local pause image as sandbox image.
cat >"$RUN/containerd/config.toml" <<TOML
version = 2
root = "$RUN/containerd/root"
state = "$RUN/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$RUN/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$RUN/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni/net.d"
TOML
cat >"$RUN/cni/net.d/10-formsservice-node.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "formsservice-node",
  "plugins": [{
    "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$RUN/cni/ipam",
             "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$NODE_IP"}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
JSON
start containerd containerd --config "$RUN/containerd/config.toml"
wait_for containerd 30 containerd ctr_ version
for img in pause coredns redis; do ctr_ images import --no-unpack=false "$IMAGES/$img.tar" >/dev/null; done
ctr_ images label "$PAUSE_IMAGE" io.cri-containerd.pinned=pinned >/dev/null
log "containerd up, cluster images imported at $(elapsed)"

cat >"$RUN/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: $NODE_IP
healthzPort: 10248
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: ""
oomScoreAdj: 0
podLogsDir: $RUN/pod-logs
syncFrequency: 10s
# Local images cannot be pulled back: never collect them, never evict.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
YAML
start kubelet "$KUBE_BIN/kubelet" --config "$RUN/kubelet/config.yaml" --kubeconfig "$RUN/kubelet.kubeconfig" \
  --root-dir "$RUN/kubelet" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --cert-dir "$RUN/kubelet/pki"

cat >"$RUN/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $RUN/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $CLUSTER_CIDR
oomScoreAdj: 0
bindAddress: $NODE_IP
metricsBindAddress: $NODE_IP:10249
healthzBindAddress: $NODE_IP:10256
# Zero: kube-proxy leaves the conntrack sysctls alone; no route_localnet either.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
YAML
# kube-proxy's RBAC (system:node-proxier is bound to system:kube-proxy by the default bootstrap policy).
start kube-proxy "$KUBE_BIN/kube-proxy" --config "$RUN/kube-proxy.yaml"

wait_for "node $NODE_NAME" 120 kubelet kubectl_ wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
log "node Ready at $(elapsed)"

# --- storage: a default StorageClass without provisioner and a few hostPath volumes ------------------
# Ten: claims are kept (Retain) when their FormsService goes, and the e2e's phases make eight (the
# sample's, the upgrade's two small FormsServices', the restored one's, the HA set's three).
for i in 1 2 3 4 5 6 7 8 9 10; do mkdir -p "$RUN/pv/pv$i" && chmod 0777 "$RUN/pv/pv$i"; done
{
  cat <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
YAML
  for i in 1 2 3 4 5 6 7 8 9 10; do
    cat <<YAML
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: node-pv$i}
spec:
  capacity: {storage: 20Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: $RUN/pv/pv$i, type: Directory}
YAML
  done
} | kubectl_ apply -f - >/dev/null

# --- CoreDNS, without an upstream forwarder ---------------------------------------------------------
sed -e "s#@IMAGE@#$COREDNS_IMAGE#" -e "s#@DNS_IP@#$DNS_IP#" hack/node-cluster/coredns.yaml | kubectl_ apply -f - >/dev/null
wait_for CoreDNS 180 kubelet kubectl_ -n kube-system wait --for=condition=Available deploy/coredns --timeout=2s
log "CoreDNS Ready at $(elapsed)"
echo "$RUN/admin.kubeconfig"
