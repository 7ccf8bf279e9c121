#!/bin/bash
# run_loadgen_pg.sh: the PostgreSQL figures of docs/BENCHMARKS.md: zbso-loadgen at K jobs
# for DURATION seconds against 1 `zbso serve` and then 3 replicas sharing one PostgreSQL 15
# database (a private server from tests/pg/with_pg.sh: fsync on, synchronous_commit on, so
# every acknowledged change is durable), a fresh database for each run, on loopback.
# usage: bench/run_loadgen_pg.sh [BUILD_DIR] [DURATION] [K] [LOG_LEVEL]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [[ -z ${ZBSO_PG_URL:-} ]]; then
    exec "$here/../tests/pg/with_pg.sh" "$here/run_loadgen_pg.sh" "$@"
fi
build=${1:-build}
duration=${2:-20}
k=${3:-32}
level=${4:-INFO}
dir=$(mktemp -d)
pids=()
trap '((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
echo "PostgreSQL $("$ZBSO_PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$ZBSO_PG_PORT," \
     "fsync $("$ZBSO_PG_CTL" psql -Atc 'show fsync'), synchronous_commit" \
     "$("$ZBSO_PG_CTL" psql -Atc 'show synchronous_commit'); $(nproc) cores"
run=0
for replicas in 1 3; do
    run=$((run + 1))
    db_url=$("$ZBSO_PG_CTL" createdb "bench$run")
    urls=()
    for i in $(seq "$replicas"); do
        out="$dir/r$run-$i.out"
        "$build/src/cli/zbso" serve --port 0 --db "$db_url" --log-level "$level" \
            > "$out" 2> "$dir/r$run-$i.log" &
        pids+=($!)
        for _ in $(seq 200); do grep -q listening "$out" && break; sleep 0.05; done
        url=$(sed -n 's/.*listening on //p' "$out")
        [[ -n $url ]] || { echo "replica $i did not start:"; cat "$dir/r$run-$i.log"; exit 1; }
        urls+=(--url "$url")
    done
    echo "== $replicas replica(s), K = $k, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$build/bench/zbso-loadgen" "${urls[@]}" --jobs "$k" --duration "$duration"
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    pids=()
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
