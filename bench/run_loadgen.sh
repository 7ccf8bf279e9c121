#!/bin/bash
# run_loadgen.sh: the server benchmark of docs/BENCHMARKS.md: starts `zbso serve` on a fresh
# SQLite database (durable commits: WAL, synchronous=FULL) and runs zbso-loadgen against it
# at K = 1, 8 and 32 concurrent jobs for DURATION seconds each (default 20), on loopback.
# usage: bench/run_loadgen.sh [BUILD_DIR] [DURATION] [LOG_LEVEL]
set -eu
build=${1:-build}
duration=${2:-20}
level=${3:-INFO}
dir=$(mktemp -d)
trap 'kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
"$build/src/cli/zbso" serve --port 0 --db "sqlite:///$dir/bench.db" --log-level "$level" \
    > "$dir/serve.out" 2> "$dir/serve.log" &
srv=$!
for _ in $(seq 100); do grep -q listening "$dir/serve.out" && break; sleep 0.05; done
url=$(sed -n 's/.*listening on //p' "$dir/serve.out")
echo "zbso serve at $url, log level $level (request log to a file), $(nproc) cores," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews figures)"
for k in 1 8 32; do
    echo "== K = $k"
    "$build/bench/zbso-loadgen" --url "$url" --jobs "$k" --duration "$duration"
done
echo "server log lines: $(wc -l < "$dir/serve.log"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
