#!/usr/bin/env bash
# The machine's tool cache: the tools `make deps` builds from the module proxy, kept outside the clone, so
# that a clean clone of this machine (CI's) copies them into its bin/ instead of building them again (the
# Kubernetes binaries alone are minutes of linking). Go's module and build caches are shared by every
# clone the same way.
#
#   hack/toolcache.sh restore   copies into bin/ each cached tool that bin/ lacks (before the builds)
#   hack/toolcache.sh save      copies into the cache each tool of bin/ that it lacks (after the builds)
#
# Only what carries its version in its name is cached (a version bump makes a new name, so a cached copy
# can never stand in for another version), and the tools whose version is in a stamp file beside them,
# as one unit with their stamp (saved again when the stamp changes). Nothing built from this repository's
# own sources is cached. The folder is $FORMSSERVICE_TOOL_CACHE (default ~/.cache/formsservice-tools);
# FORMSSERVICE_TOOL_CACHE=off turns it off. Copies go through a temporary name and a rename, so that an
# interrupted copy is never taken for a tool.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${FORMSSERVICE_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/formsservice-tools}"
[[ $cache == off ]] && exit 0

# Versioned names, as globs under bin/.
versioned=(
  'k8s/[0-9]*'                     # envtest's kube-apiserver and etcd (hack/envtest-assets.sh)
  'node-cluster/kube-[0-9]*'       # the node cluster's Kubernetes binaries (hack/node-cluster/build-kube.sh)
  'node-cluster/coredns-v*'        # CoreDNS, Traefik, Prometheus and its operator (hack/node-cluster)
  'node-cluster/traefik-v*'
  'node-cluster/prometheus-v*'
  'node-cluster/prometheus-operator-v*'
  'node-cluster/images/*-v[0-9]*.tar' # their images (the unversioned names are links the scripts make)
  'mailpit-v*' 'versitygw-v*' 'oauth2-proxy-v*' 'dex-v*' 'staticcheck-v*' 'controller-gen-v*' 'axe-core-*'
)
# A tool and the stamp that holds its version (hack/install-chart-tools.sh).
stamped=('helm .helm-version' 'helm-docs .helm-docs-version' 'promtool .promtool-version' 'crds/prometheus-operator crds/prometheus-operator/.version')

# copy FROM TO: copies FROM (file or folder) to TO through TO.part-<pid>.
copy() {
  mkdir -p "$(dirname "$2")"
  rm -rf "$2.part-$$"
  cp -a "$1" "$2.part-$$"
  rm -rf "$2"
  # -T: never into a folder another run put there meanwhile; its copy is as good as ours.
  mv -T "$2.part-$$" "$2" 2>/dev/null || rm -rf "$2.part-$$"
}

# names ROOT: the versioned entries under ROOT, relative to it, that exist.
names() {
  local pattern path
  for pattern in "${versioned[@]}"; do
    for path in "$1"/$pattern; do
      [[ -e $path && $path != *.part-* ]] && echo "${path#"$1"/}"
    done
  done
}

case "${1:-}" in
restore)
  [[ -d $cache ]] || exit 0
  n=0
  while read -r name; do
    [[ -e bin/$name ]] || { copy "$cache/$name" "bin/$name" && n=$((n + 1)); }
  done < <(names "$cache")
  for pair in "${stamped[@]}"; do
    read -r tool stamp <<<"$pair"
    if [[ -e $cache/$tool && -f $cache/$stamp && ! -e bin/$tool ]]; then
      copy "$cache/$tool" "bin/$tool"
      [[ $stamp == "$tool"/* ]] || copy "$cache/$stamp" "bin/$stamp"
      n=$((n + 1))
    fi
  done
  echo ">> toolcache: $n tools copied from $cache"
  ;;
save)
  mkdir -p "$cache"
  n=0
  while read -r name; do
    [[ -e $cache/$name ]] || { copy "bin/$name" "$cache/$name" && n=$((n + 1)); }
  done < <(names bin)
  for pair in "${stamped[@]}"; do
    read -r tool stamp <<<"$pair"
    if [[ -e bin/$tool && -f bin/$stamp ]] && ! cmp -s "bin/$stamp" "$cache/$stamp"; then
      copy "bin/$tool" "$cache/$tool"
      [[ $stamp == "$tool"/* ]] || copy "bin/$stamp" "$cache/$stamp"
      n=$((n + 1))
    fi
  done
  echo ">> toolcache: $n tools saved to $cache"
  ;;
*)
  echo "usage: hack/toolcache.sh restore|save" >&2
  exit 2
  ;;
esac
