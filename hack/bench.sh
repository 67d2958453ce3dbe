#!/usr/bin/env bash
# `make bench`: Go benchmarks, then bounded load runs on loopback. Everything stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
echo "=== Go benchmarks"
go test -run '^$' -bench . -benchmem -benchtime 2s ./services/...

# --- bigstore: the forms' submissions list and export on a big store (issue 36 item 5): a contact stream
# of BENCH_BIGSTORE_SIZE (1,000,000) messages built through a pipeline in a real redis-server (about 10 s
# and 235 MB of Redis at a million), then 200 pages of each kind of listing (p50/p99/max per page, and
# Redis's own time per page from INFO commandstats), then the export of a tenth and of all of it (JSON
# lines and CSV) to io.Discard: rows/s and the peak heap, which must not grow with the rows
# (docs/forms.md, "The submissions list on a big store"). About a minute at a million.
echo "=== bigstore: submissions pages and export on a store of ${BENCH_BIGSTORE_SIZE:-1000000} contact messages (real redis-server)"
hack/install-redis.sh >/dev/null
FORMSSERVICE_BIGSTORE=1 FORMSSERVICE_BIGSTORE_SIZE="${BENCH_BIGSTORE_SIZE:-1000000}" \
  go test -count 1 -timeout 20m -run '^TestBench_BigStore$' -v ./services/forms/manage/ | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$' -e '^ok '
# --- end of the bigstore block

# --- health: a scrape storm on GET /health of real processes (formsservice health, forms, auth and a
# redis-server, all on loopback) for 6 s: req/s, p50/p99, and PINGs the store saw per 1000 requests
# (the 2 s cache and singleflight keep it to a few per round, whatever the request rate).
echo "=== health: scrape storm on GET /health (loopback, 6s)"
go test -run '^$' -bench 'BenchmarkE2E_HealthScrapeStorm' -benchtime 6s -count 1 ./services/health/

# --- auth: bounded load on the token endpoint of the real binary (formsservice auth + redis-server on
# loopback, 8 s per phase): refresh_token grants (16 clients), then whole flows (authorize page → sign-in
# → code → token; 16 clients, then 1) with a deliberately CHEAP argon2id setting that the report marks as
# such. Prints ops/s, p50/p99, and server and Redis CPU per operation (read from /proc around the load),
# beside a BASELINE measured in the same run, phase by phase in alternation: the provider as it was
# before its Redis calls were folded (docs/architecture.md D38), built here from that commit
# (BENCH_AUTH_BASELINE, a commit; "none" skips it). The ratio to it is the figure that counts.
# Run twice: with Go's default GOGC=100, and with the binary's own default, 400 (this service's live heap
# is tiny, so 100 collects very often). Every phase prints the server's peak RSS beside its CPU, and
# the second run what each operation asks of Redis, command by command (INFO commandstats).
# Then the memory run: whole flows at the PRODUCTION argon2id cost (19 MiB, t=2), one and sixteen at
# once; it fails when sixteen concurrent sign-ins peak above 96 MiB RSS (docs/auth.md, "Memory").
echo "=== auth: token endpoint load against the baseline (loopback, 3 phases x 8s x 2 binaries: once at GOGC=100, three rounds at the default), then sign-in memory (2 x 8s)"
hack/build.sh bin # formsservice and formsservice-forms, which `formsservice forms` hands over to
baseline_ref="${BENCH_AUTH_BASELINE:-80fc2a73d68dd50aa93c78456fbf8e1ac115a240}" # main before D38
baseline_bin=""
if [ "$baseline_ref" != none ] && git cat-file -e "$baseline_ref^{commit}" 2>/dev/null; then
  baseline_dir=$(mktemp -d)
  trap 'rm -rf "$baseline_dir"' EXIT
  git archive "$baseline_ref" | tar -x -C "$baseline_dir/"
  mkdir "$baseline_dir/out"
  (cd "$baseline_dir" && go build -o out/formsservice ./cmd/formsservice)
  baseline_bin="$baseline_dir/out/formsservice"
  echo "auth baseline: formsservice built from $baseline_ref"
else
  echo "auth baseline: commit $baseline_ref not in this checkout (a shallow clone?): figures without a baseline"
fi
# The default setting's ratio is the one that counts: three rounds, each round's ratio and the median.
for gogc in 100 ""; do
  rounds=3
  [ -n "$gogc" ] && rounds=1
  commandstats=1
  [ -n "$gogc" ] && commandstats=""
  FORMSSERVICE_AUTH_LOAD=1 FORMSSERVICE_AUTH_LOAD_GOGC="$gogc" FORMSSERVICE_AUTH_LOAD_ROUNDS="$rounds" FORMSSERVICE_BIN="$PWD/bin/formsservice" \
    FORMSSERVICE_AUTH_LOAD_COMMANDSTATS="$commandstats" \
    FORMSSERVICE_BASELINE_BIN="$baseline_bin" \
    go test -count 1 -run '^TestLoad_TokenEndpoint$' -v ./services/auth/ | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$' -e '^ok '
done
FORMSSERVICE_AUTH_LOAD=1 FORMSSERVICE_BIN="$PWD/bin/formsservice" \
  go test -count 1 -run '^TestLoad_SignInAtProductionHash$' -v ./services/auth/ | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS$' -e '^ok '
# --- end of the auth block

# --- forms: `formsservice forms` (POST /waitlist and POST /contact, real redis-server, loopback) against
# two baselines in the same run: a bare Fiber handler that decodes the JSON and answers 201, and the same
# handler doing one Redis SETNX (one round trip, the floor for any handler that stores). Peak req/s and
# p50/p99 per target, then p50/p99 at half of that peak (open loop, no coordinated omission), measured in
# short slices that alternate between the targets so that other load on the machine hits all alike;
# last, the forms process's peak RSS (VmHWM) against the SETNX baseline's (the target: within 2x); that
# process is formsservice-forms, which `formsservice forms` hands over to (docs/architecture.md, D31).
# About two minutes: BENCH_DURATION (10s per target and phase), BENCH_SLICES (8), BENCH_CONNS (32).
echo "=== forms: load on POST /waitlist and /contact against the baselines (loopback)"
hack/install-redis.sh >/dev/null
hack/build.sh bin # formsservice and formsservice-forms, which `formsservice forms` hands over to
go build -o bin/loadgen ./cmd/loadgen
bin/loadgen bench -formsservice bin/formsservice -redis-server bin/redis-server \
  -duration "${BENCH_DURATION:-10s}" -slices "${BENCH_SLICES:-8}" -conns "${BENCH_CONNS:-32}"
# --- end of the forms block

# --- reliability: the report and the soak (issue 9). Forms, token (refresh_token grants) and health load
# on the real processes (`formsservice forms`, `auth`, `health`, one redis-server, loopback) at several
# concurrencies for a fixed time each: artifacts/bench/report.md (requests/s, p50/p99/p99.9, errors, CPU
# per request, RSS of every process) and artifacts/bench/latency.svg (latency against load). About a
# minute and a half: REPORT_DURATION (3s per point), REPORT_CONCURRENCY (1,4,16,64). Then the soak: mixed
# traffic on all three services for SOAK_DURATION (5m); goroutines, open descriptors and RSS before and
# after must stay flat (test/reliability's TestSoak, which `go test` runs for 15 s).
echo "=== report: forms, token and health at several concurrencies (loopback) -> artifacts/bench/"
hack/build.sh bin # formsservice and formsservice-forms, which `formsservice forms` hands over to
go build -o bin/loadgen ./cmd/loadgen
bin/loadgen report -formsservice bin/formsservice -redis-server bin/redis-server -out artifacts/bench \
  -duration "${REPORT_DURATION:-3s}" -concurrency "${REPORT_CONCURRENCY:-1,4,16,64}"
echo "=== soak: mixed traffic for ${SOAK_DURATION:-5m}, goroutines / descriptors / RSS before and after"
FORMSSERVICE_SOAK_DURATION="${SOAK_DURATION:-5m}" \
  go test -count 1 -timeout 30m -run '^TestSoak_' -v ./test/reliability/ | grep -v -e '^=== RUN' -e '^PASS$' -e '^ok '
# --- end of the reliability block
