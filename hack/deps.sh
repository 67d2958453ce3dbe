#!/usr/bin/env bash
# `make deps`, the first step of `make test`: everything the tests and `make e2e` need, each cached under
# bin/ by version (a version bump builds the new one; the same version never rebuilds):
#   1. the Debian packages that are missing, in ONE apt-get call: apt has one lock, and one run with every
#      package is faster than one per script (each script still installs its own when run alone);
#   2. the tools built from the Go module proxy and the npm registry, DEPS_JOBS at a time (default 2, see
#      docs/developing.md for the measurement), longest first. The two Kubernetes builds (envtest's
#      kube-apiserver, then the node cluster's binaries) are one job: they share most packages, which the
#      second then finds in the Go build cache instead of compiling them again at the same time.
# Each job writes bin/.deps/<job>.log; a failed job prints the end of its log and fails the step, after the
# others have finished. The last lines say how long each job took ("=== deps: job seconds").
#   hack/deps.sh --apt-only   only step 1 (make deps-apt)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"

# --- 1. Debian packages -----------------------------------------------------------------------------
# package: what shows it is there, as the scripts that use it test: commands on PATH or absolute paths,
# all needed; a|b is either.
declare -A wants=(
  [redis-server]="redis-server redis-cli"               # hack/install-redis.sh
  [redis-sentinel]="redis-sentinel"                     # hack/install-redis.sh (test/reliability)
  [etcd-server]="/usr/bin/etcd"                         # hack/envtest-assets.sh, hack/node-cluster, internal/testdex (Dex's storage)
  [chromium]="chromium|chromium-browser"                # hack/install-chromium.sh
  [ca-certificates]="/etc/ssl/certs/ca-certificates.crt" # hack/image.sh
  [containerd]="containerd"                             # hack/node-cluster/build.sh, from here on
  [runc]="runc"
  [containernetworking-plugins]="/usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback"
  [iptables]="iptables"
  [curl]="curl"
  [openssl]="openssl"
  [slapd]="/usr/sbin/slapd /usr/sbin/slapadd"           # internal/testldap (the ldap connector's tests, D75)
  [ldap-utils]="ldapsearch"                             # ldapsearch/ldapadd, to look into a test's directory
)
present() {
  local w alt ok
  for w in $1; do
    ok=false
    for alt in ${w//|/ }; do
      if [[ $alt == /* ]]; then [[ -e $alt ]] && ok=true; else command -v "$alt" >/dev/null && ok=true; fi
    done
    $ok || return 1
  done
}
missing=()
for pkg in "${!wants[@]}"; do
  present "${wants[$pkg]}" || missing+=("$pkg")
done
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sed '/^$/d' | sort)
if ((${#missing[@]} > 0)); then
  echo ">> deps: installing ${missing[*]} (Debian packages, one apt-get)"
  start=$SECONDS
  hack/apt-install.sh "${missing[@]}"
  echo ">> deps: Debian packages installed in $((SECONDS - start)) s"
fi
hack/install-redis.sh >/dev/null # copies redis-server, redis-cli and redis-sentinel into bin/
[[ "${1:-}" == --apt-only ]] && exit 0

# --- 2. tool builds ---------------------------------------------------------------------------------
# First the machine's tool cache (hack/toolcache.sh): a clean clone copies what an earlier clone built.
hack/toolcache.sh restore
logs=bin/.deps
mkdir -p "$logs"
rm -f "$logs"/*.status
max="${DEPS_JOBS:-2}"

# job NAME COMMAND...: runs the command in the background once fewer than $max jobs run, its output in
# $logs/NAME.log and "exit-status seconds" in $logs/NAME.status.
order=()
job() {
  local name=$1
  shift
  order+=("$name")
  while (($(jobs -rp | wc -l) >= max)); do wait -n || true; done
  (
    start=$SECONDS
    rc=0
    "$@" >"$logs/$name.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - start))" >"$logs/$name.status"
  ) &
}

# Longest first, so that the last job to start is a short one. Cold times on 2 cores: docs/developing.md.
job kubernetes bash -c 'hack/envtest-assets.sh && hack/node-cluster/build.sh'
job versitygw hack/install-versitygw.sh # before the node cluster's build asks for it (its S3 image)
job mailpit hack/install-mailpit.sh
job chart-tools hack/install-chart-tools.sh
job dex hack/install-dex.sh # the federation tests' second OpenID provider (Go)
job interop hack/install-interop.sh
job lint-tools make --no-print-directory deps-lint
job axe-core hack/install-axe.sh
job upstream hack/install-upstream.sh # the federation tests' OpenID provider (npm)
wait

failed=0
for name in "${order[@]}"; do
  read -r rc secs <"$logs/$name.status" || { rc=1 secs=?; }
  if [[ $rc != 0 ]]; then
    failed=1
    echo "--- deps: $name FAILED (exit $rc after $secs s); the end of $logs/$name.log:"
    tail -40 "$logs/$name.log"
  fi
done
for name in "${order[@]}"; do
  read -r rc secs <"$logs/$name.status" || true
  echo "=== deps: $name $secs"
done
if ((failed == 0)); then
  hack/toolcache.sh save
fi
exit "$failed"
