#!/usr/bin/env bash
# Bounded fuzzing for `make test`: every fuzz target in the tree (found by grep, so a new one joins by
# itself) runs for FUZZTIME (default 10s) on top of its seeds and checked-in corpus (testdata/fuzz/).
# A failure leaves the crashing input in the package's testdata/fuzz/<Target>/ and fails the step.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
targets=0
while IFS= read -r file; do
  dir="./$(dirname "$file")"
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "--- fuzz $name ($dir, $fuzztime)"
    log="$(mktemp)"
    corpus="$dir/testdata/fuzz/$name"
    before="$(ls "$corpus" 2>/dev/null || true)"
    if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir" >"$log" 2>&1; then
      # Go's fuzz coordinator (up to go1.26) can report a bare "context deadline exceeded" when the
      # -fuzztime deadline races a worker under CPU load (golang/go#75804): the whole time was fuzzed
      # and no failing input was written. Anything else, or a new input in the corpus, is a failure.
      if grep -q '^    context deadline exceeded$' "$log" && [[ "$(ls "$corpus" 2>/dev/null || true)" == "$before" ]] \
        && ! grep -qE '_test\.go:[0-9]+:|panic:|Failing input written' "$log"; then
        echo "ok (the fuzz coordinator's deadline race, golang/go#75804: no failing input) $name"
        rm -f "$log"
        targets=$((targets + 1))
        continue
      fi
      grep -v '^fuzz: elapsed' "$log" | tail -60
      rm -f "$log"
      echo "FAIL: fuzz target $name in $dir (the failing input is under $corpus/)"
      exit 1
    fi
    tail -1 "$log"
    rm -f "$log"
    targets=$((targets + 1))
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' --exclude-dir=node_modules --exclude-dir=bin --exclude-dir=.git . | sed 's|^\./||' | sort)
if [[ $targets -eq 0 ]]; then
  echo "no fuzz targets found: the grep in hack/fuzz.sh is broken"
  exit 1
fi
echo "fuzzed $targets targets for $fuzztime each"
