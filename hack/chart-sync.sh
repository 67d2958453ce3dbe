#!/usr/bin/env bash
# Copies what the chart shares with config/ into charts/formsservice-operator/files/, byte for byte:
#   config/crd/bases/*.yaml            -> files/crds/        (controller-gen, from the kubebuilder markers)
#   config/rbac/role.yaml              -> files/rbac/role.yaml (controller-gen, from +kubebuilder:rbac)
#   config/monitoring/*dashboard*.json -> files/grafana-dashboard.json
#   config/monitoring/*rule*.yaml      -> files/prometheus-rules.yaml
# The chart's templates read these files, so config/ stays the one source. `hack/chart-sync.sh --check`
# (run by `make test`) changes nothing and fails when a copy differs: run `make chart-sync` then.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
[[ "${1:-}" == "--check" ]] && check=true
files=charts/formsservice-operator/files
stale=0

# one SRC DST: copy, or in --check mode compare.
one() {
  local src=$1 dst=$2
  if $check; then
    if ! cmp -s "$src" "$dst"; then
      echo "chart-sync: $dst differs from $src" >&2
      stale=1
    fi
  else
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst"
  fi
}

# only GLOB...: the single file matching, or an error naming the matches.
only() {
  local matches=()
  for f in "$@"; do [[ -e $f ]] && matches+=("$f"); done
  if (( ${#matches[@]} != 1 )); then
    echo "chart-sync: want exactly one file matching $*, found ${#matches[@]}: ${matches[*]:-}" >&2
    exit 1
  fi
  echo "${matches[0]}"
}

shopt -s nullglob
crds=(config/crd/bases/*.yaml)
(( ${#crds[@]} > 0 )) || { echo "chart-sync: no CRD in config/crd/bases (run make manifests)" >&2; exit 1; }
for crd in "${crds[@]}"; do one "$crd" "$files/crds/$(basename "$crd")"; done
# A CRD removed from config/ must leave the chart too.
for copy in "$files"/crds/*.yaml; do
  if [[ ! -e config/crd/bases/$(basename "$copy") ]]; then
    if $check; then echo "chart-sync: $copy has no source in config/crd/bases" >&2; stale=1; else rm "$copy"; fi
  fi
done
one config/rbac/role.yaml "$files/rbac/role.yaml"
one "$(only config/monitoring/*dashboard*.json)" "$files/grafana-dashboard.json"
one "$(only config/monitoring/*rule*.yaml)" "$files/prometheus-rules.yaml"

if (( stale )); then
  echo "chart-sync: the chart's copies are stale: run 'make chart-sync'" >&2
  exit 1
fi
$check && echo "chart-sync: the chart's CRD, RBAC rules and monitoring files match config/"
exit 0
