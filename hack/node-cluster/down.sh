#!/usr/bin/env bash
# Tears down the cluster of up.sh and puts the host back as up.sh found it: pod sandboxes stopped and
# removed through the CRI (so the CNI plugins release veths and addresses), every process of the
# cluster stopped, kube-proxy's, the kubelet's and the CNI plugins' iptables chains and the guard rule
# removed, the bridge deleted, the sysctls restored, the cgroups and the paths outside bin/ that the
# cluster created removed, bin/node-cluster/run deleted. Safe to run twice, and after a killed run.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
source "$here/lib.sh"
log() { echo ">> node-cluster/down: $*" >&2; }
[[ $(id -u) = 0 ]] || { log "needs root"; exit 1; }

pid_of() { [[ -f "$RUN/pids/$1" ]] && cat "$RUN/pids/$1"; }
running() { local p; p="$(pid_of "$1")" && kill -0 "$p" 2>/dev/null; }
stop() { # name: SIGTERM, then SIGKILL after 20 s
  local p
  p="$(pid_of "$1")" || return 0
  kill -0 "$p" 2>/dev/null || return 0
  kill -TERM "$p" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  log "$1 ($p) ignored SIGTERM: SIGKILL"
  kill -KILL "$p" 2>/dev/null
}

if [[ -d "$RUN" ]]; then
  # The kubelet first, so that it starts nothing new; then every pod sandbox through containerd (started
  # again for that when a killed run left it dead), then containerd and the rest.
  stop kubelet
  if [[ -f "$RUN/containerd/config.toml" ]]; then
    if ! running containerd; then
      containerd --config "$RUN/containerd/config.toml" >>"$RUN/logs/containerd.log" 2>&1 &
      echo $! >"$RUN/pids/containerd"
      for _ in $(seq 100); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
    fi
    "$NC/crisandboxes" -endpoint "unix://$CONTAINERD_SOCK" >&2 || log "some pod sandboxes could not be removed"
  fi
  stop containerd
  for c in kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$c"; done
  # Whatever still runs from the cluster's folders (containerd shims, containers): found by their
  # command line naming $RUN, ended by their pid.
  for p in /proc/[0-9]*; do
    grep -qaF "$RUN" "$p/cmdline" 2>/dev/null || continue
    log "ending leftover process ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline" | cut -c1-120)"
    kill -KILL "${p#/proc/}" 2>/dev/null
  done
  [[ -x "$KUBE_BIN/kube-proxy" ]] && "$KUBE_BIN/kube-proxy" --cleanup >/dev/null 2>&1
  # Mounts the kubelet and containerd made under $RUN (volumes, rootfs, netns), deepest first.
  awk -v run="$RUN" 'index($5, run) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null
  done
fi

# iptables: the chains of kube-proxy and the kubelet (KUBE-*), of the CNI plugins (CNI-*) and our guard.
for t in iptables ip6tables; do
  command -v "$t-save" >/dev/null || continue
  saved="$("$t-save" 2>/dev/null)" || continue
  if grep -qE "KUBE-|CNI-|$GUARD_CHAIN" <<<"$saved"; then
    grep -vE "KUBE-|CNI-|$GUARD_CHAIN" <<<"$saved" | "$t-restore" || log "$t-restore failed"
  fi
done

ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
# Veths whose pods vanished without a CNI DEL would have gone with their namespaces; their netns files:
for ns in /var/run/netns/cni-*; do
  [[ -e $ns ]] || continue
  umount "$ns" 2>/dev/null; rm -f "$ns"
done

# Cgroups the kubelet made (cgroupfs driver): kubepods in each hierarchy, deepest first.
for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [[ -d $cg ]] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
done

if [[ -f "$HOST_BEFORE" ]]; then
  while read -r kind a b; do
    case "$kind" in
      sysctl) sysctl -q -w "$a=$(eval echo "$b")" >/dev/null || log "cannot restore $a" ;;
      absent) rm -rf "$a" ;;
    esac
  done <"$HOST_BEFORE"
  rm -f "$HOST_BEFORE"
fi
rm -rf "$RUN"
[[ -f $OWNER_FILE && "$(cat "$OWNER_FILE")" == "$STATE" ]] && rm -f "$OWNER_FILE"
log "cluster removed, host restored"
