#!/usr/bin/env bash
# `make test`: install what the tests need (cached under bin/ by version), then run every check and test.
# Each step prints a header, so that a red CI run says where it broke; the end of every run, passed or
# failed, lists each step with its seconds ("=== steps: NAME SECONDS"), so that a step grown slow shows.
# docs/developing.md lists the steps with their usual cold and warm times.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
# -trimpath keeps the clone's folder out of Go's build-cache keys, so a clean clone (CI's) reuses what any
# earlier clone of this machine compiled; without it every package of the module compiles again (the
# tests of services/auth: 96 s in a fresh clone, 7 s with the cache). The Makefile sets it too.
[[ " ${GOFLAGS:-} " == *" -trimpath "* ]] || export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

t0=$SECONDS
times=()
current=""
started=0
# step NAME WHAT: ends the step before and starts this one.
step() {
  finish
  current=$1
  started=$SECONDS
  echo
  echo "=== $1: $2 ($(date +%T))"
}
# finish [SUFFIX]: records the current step's seconds.
finish() {
  [[ -n $current ]] && times+=("$current $((SECONDS - started))${1:-}")
  current=""
}
fuzz_pid=""
summary() {
  local rc=$?
  # a run that ends before the fuzz step (a failed e2e, an interrupt) stops the fuzzers beside it
  [[ -n $fuzz_pid ]] && kill -- -"$fuzz_pid" 2>/dev/null
  if [[ $rc != 0 ]]; then finish " FAILED (exit $rc)"; else finish; fi
  echo
  for t in "${times[@]}"; do echo "=== steps: $t"; done
  echo "=== steps: total $((SECONDS - t0))"
}
trap summary EXIT
trap 'exit 130' INT TERM

step deps "the Debian packages in one apt-get, then the tools built from the module proxy and npm, two at a time (make deps: hack/deps.sh; cached in bin/ by version)"
hack/deps.sh

# the envtest control plane: kube-apiserver built from the module proxy + etcd (make deps built it)
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS
echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"

step generated "generated code is fresh (deepcopy, CRD, RBAC from the kubebuilder markers)"
make --no-print-directory verify-generated

step image "container image without Docker (make image; its test opens the tarball)"
make --no-print-directory image
export FORMSSERVICE_IMAGE_TAR="$PWD/bin/formsservice-image.tar"

step helm-lint "helm chart (lint, copies of config/, values table)"
make --no-print-directory helm-lint

step vet-e2e "kind end-to-end tests compile (go vet -tags e2e)"
go vet -tags e2e ./test/...

step lint "lint (gofmt, go vet, staticcheck)"
make --no-print-directory lint

step sdk "browser SDK (sdk/): npm ci, committed dist/ is fresh, size budget, unit tests"
(cd sdk && npm ci --no-audit --no-fund && npm run check-dist && npm test)

# services/ and internal/ run once, under the race detector (the next step); everything else (the
# operator's envtest suites, the chart, the tests of test/) runs here. Tests that scale a load down under
# -race (raceEnabled) run here once more at full size.
module="$(go list -m)"
# go test starts the packages in the order it is given them, two at a time on two cores: the longest go
# first, so that none of them starts last and runs alone at the end (the step took about 30 s longer in
# alphabetical order). A package missing from these lists only starts later; keep them to the longest.
slow_first() { # slow_first PACKAGE... < LIST: LIST with those of the packages it has first
  local all p
  all="$(cat)"
  for p in "$@"; do grep -xF "$module/$p" <<<"$all" || true; done
  grep -vxF -f <(for p in "$@"; do echo "$module/$p"; done) <<<"$all"
}
step go-test "go test (all but services/ and internal/, which go-test-race runs; the full-size load tests)"
mapfile -t others < <(go list ./... | grep -vE "^$module/(services|internal)/" |
  slow_first controllers test/reliability cmd/formsservice test/chart controllers/scale)
go test -count=1 -timeout 30m "${others[@]}"
full_size='^TestAuditTrail_200000UnauthenticatedRequestsLeaveASecurityEventInPlace$'
out="$(go test -count=1 -timeout 30m -run "$full_size" -v ./services/auth/ 2>&1)" || { echo "$out" | tail -60; exit 1; }
echo "$out" | grep -E '^(--- |ok|FAIL)'
grep -q -- '--- PASS: TestAuditTrail_200000' <<<"$out" || { echo "the full-size load test did not run: fix \$full_size in hack/test.sh"; exit 1; }

step go-test-race "go test -race (services/ and internal/: their only run)"
mapfile -t raced < <(go list ./services/... ./internal/... |
  slow_first services/auth services/platform/redisha services/forms services/health internal/testredis)
go test -count=1 -race -timeout 30m "${raced[@]}"

step sdk-browser "browser SDK and demo page in headless Chromium against formsservice dev + redis-server (screenshots in artifacts/)"
(cd sdk && npm run test:browser)

step react-vite "React + Vite example (sdk/examples/react-vite): npm ci (the SDK packed from sdk/), type check, production build, headless Chromium against formsservice dev"
(cd sdk/examples/react-vite && npm ci --no-audit --no-fund && npm run typecheck && npm run build && npm test)

# The fuzz step runs beside the e2e, at the lowest CPU priority. The e2e spends most of its time waiting
# on clocks (an alert's `for: 1m`, the JWKS max-age in a key rotation, Sentinel's timers) with the cores
# idle; under nice 19 the fuzzers get only the CPU the e2e leaves (a scheduler weight of 15 against its
# 1024), so the e2e runs as it would alone, and the fuzz step no longer adds its two minutes to the run.
# Its output is printed once the e2e is done; its own group is killed if the run ends first.
fuzz_log="$(mktemp)"
fuzz_started=$SECONDS
setsid -w nice -n 19 hack/fuzz.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
echo "(fuzz: every fuzz target for ${FUZZTIME:-10s}, started beside the e2e at nice 19; its output follows the e2e)"

step e2e "end to end on a real one-node cluster of this machine: chart, sample, forms, browser sign-in, health, HPA, RBAC, ingress, Prometheus, day two (make e2e, hack/node-cluster)"
make --no-print-directory e2e

step fuzz "every fuzz target for ${FUZZTIME:-10s} on its seeds and checked-in corpus (hack/fuzz.sh), started beside the e2e: waiting for it to end"
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
fuzz_pid=""
cat "$fuzz_log"
echo "fuzz: ran $((SECONDS - fuzz_started)) s in all, beside the e2e"
((fuzz_rc == 0)) || exit "$fuzz_rc"

finish
echo
echo "=== all tests passed ($(date +%T))"
