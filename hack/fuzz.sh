#!/usr/bin/env bash
# Bounded fuzzing for `make test`: every fuzz target in the tree (found by grep, so a new one joins by
# itself) runs for FUZZTIME (default 10s) on top of its seeds and checked-in corpus (testdata/fuzz/).
# A failure leaves the crashing input in the package's testdata/fuzz/<Target>/ and fails the step.
#
# FUZZJOBS packages (default: the number of cores) are fuzzed at once, each target with one fuzzing
# worker (-parallel 1): the same executions per target as one target at a time with a worker per core,
# in a fraction of the wall time, and one package's instrumented build overlaps another's fuzzing. The
# targets of one package run one after another: run at once, they would build the same instrumented
# packages twice in parallel (Go's build cache does not share a build in progress).
#
# Every target runs under a time budget (FUZZBUDGET, default 5m: its build and its fuzzing). Go puts no
# bound of its own on fuzzing (go test disables -timeout for it), and one CI run hung for 75 minutes in
# this step without a word. A target over budget gets SIGQUIT, so each Go process of it prints its
# goroutines into the log, and is run once more: a second hang fails the step; a first one alone is
# printed in full as a warning (a hang in our code on an input recurs on the corpus the first run
# left; a hang of Go's fuzz coordinator is not ours to fail on, but is shown).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
budget="${FUZZBUDGET:-5m}"
max="${FUZZJOBS:-$(nproc)}"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# fuzz_one NAME DIR: fuzzes one target; its output goes to $logs/NAME.log, its verdict to $logs/NAME.rc
# ("ok", or the reason it failed).
fuzz_one() {
  local name=$1 dir=$2 log="$logs/$1.log"
  local corpus="$dir/testdata/fuzz/$name" before rc=0 started=$SECONDS
  before="$(ls "$corpus" 2>/dev/null || true)"
  run_bounded "$name" "$dir" "$log" || rc=$?
  if ((rc == 124 || rc == 137)); then
    mv "$log" "$logs/$name.hang.log"
    echo "fuzz: $name ($dir) went over its budget of $budget; its goroutines are in the report; running it again"
    rc=0
    run_bounded "$name" "$dir" "$log" || rc=$?
    if ((rc == 124 || rc == 137)); then
      echo "FAIL: fuzz target $name in $dir hung twice (over $budget each time)" >"$logs/$name.rc"
      cat "$logs/$name.hang.log" >>"$log"
      return
    fi
  fi
  echo "fuzz: $name done in $((SECONDS - started)) s"
  if ((rc == 0)); then
    echo ok >"$logs/$name.rc"
    return
  fi
  # Go's fuzz coordinator (up to go1.26) can report a bare "context deadline exceeded" when the
  # -fuzztime deadline races a worker under CPU load (golang/go#75804): the whole time was fuzzed and
  # no failing input was written. Anything else, or a new input in the corpus, is a failure.
  if grep -q '^    context deadline exceeded$' "$log" && [[ "$(ls "$corpus" 2>/dev/null || true)" == "$before" ]] \
    && ! grep -qE '_test\.go:[0-9]+:|panic:|Failing input written' "$log"; then
    echo "ok (the fuzz coordinator's deadline race, golang/go#75804: no failing input)" >"$logs/$name.rc"
    return
  fi
  echo "FAIL: fuzz target $name in $dir (the failing input is under $corpus/)" >"$logs/$name.rc"
}

# run_bounded NAME DIR LOG: one fuzzing run of a target within the budget. timeout(1) puts the run in
# a process group of its own and signals the whole group: go, the test binary and its fuzz workers.
run_bounded() {
  timeout -s QUIT -k 30s "$budget" \
    go test -run '^$' -fuzz "^${1}\$" -fuzztime "$fuzztime" -parallel 1 "$2" >"$3" 2>&1
}

# report NAME DIR: prints a finished target's verdict (and the end of its log when it failed).
failed=0
report() {
  local name=$1 dir=$2 verdict lines
  verdict="$(cat "$logs/$name.rc" 2>/dev/null || echo "FAIL: fuzz target $name in $dir (no verdict)")"
  echo "--- fuzz $name ($dir, $fuzztime)"
  if [[ -f "$logs/$name.hang.log" && $verdict == ok* ]]; then
    echo "WARNING: the first run of $name hung and the second passed; the first run's log:"
    cat "$logs/$name.hang.log"
  fi
  if [[ $verdict == ok* ]]; then
    if [[ $verdict == ok ]]; then tail -1 "$logs/$name.log"; else echo "$verdict $name"; fi
  else
    # A hang's log is its goroutines: the worker's own stack is deep in it.
    if [[ $verdict == *"hung twice"* ]]; then lines=400; else lines=60; fi
    grep -v '^fuzz: elapsed' "$logs/$name.log" | tail -"$lines"
    echo "$verdict"
    failed=1
  fi
}

targets=()
while IFS= read -r file; do
  dir="./$(dirname "$file")"
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    targets+=("$name $dir")
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' --exclude-dir=node_modules --exclude-dir=bin --exclude-dir=.git . | sed 's|^\./||' | sort)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "no fuzz targets found: the grep in hack/fuzz.sh is broken"
  exit 1
fi

# fuzz_package DIR: fuzzes the package's targets one after another.
fuzz_package() {
  local t name dir
  for t in "${targets[@]}"; do
    read -r name dir <<<"$t"
    if [[ $dir == "$1" ]]; then fuzz_one "$name" "$dir"; fi
  done
}

# A pool of $max packages: start each once a slot is free; report the targets in their order.
mapfile -t packages < <(printf '%s\n' "${targets[@]}" | cut -d' ' -f2 | sort -u)
for pkg in "${packages[@]}"; do
  while (($(jobs -rp | wc -l) >= max)); do wait -n || true; done
  fuzz_package "$pkg" &
done
wait
for t in "${targets[@]}"; do
  # shellcheck disable=SC2086
  report $t
done
if ((failed)); then
  exit 1
fi
echo "fuzzed ${#targets[@]} targets of ${#packages[@]} packages for $fuzztime each, $max packages at a time"
