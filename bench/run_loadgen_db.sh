#!/bin/bash
# run_loadgen_db.sh: the server-database figures of docs/BENCHMARKS.md: zbso-loadgen at K
# jobs for DURATION seconds against 1 `zbso serve` and then 3 replicas sharing one
# database, a fresh database for each run, on loopback. BACKEND is pg (a private
# PostgreSQL 15 from tests/pg/with_pg.sh: fsync on, synchronous_commit on) or mysql (a
# private MariaDB from tests/mysql/with_mysql.sh: innodb_flush_log_at_trx_commit = 1), so
# every acknowledged change is durable.
# usage: bench/run_loadgen_db.sh BACKEND [BUILD_DIR] [DURATION] [K] [LOG_LEVEL]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
backend=${1:?usage: run_loadgen_db.sh pg|mysql [BUILD_DIR] [DURATION] [K] [LOG_LEVEL]}
shift
case $backend in
pg)
    if [[ -z ${ZBSO_PG_URL:-} ]]; then
        exec "$here/../tests/pg/with_pg.sh" "$here/run_loadgen_db.sh" pg "$@"
    fi
    ctl=$ZBSO_PG_CTL
    echo "PostgreSQL $("$ZBSO_PG_BIN/postgres" --version | awk '{print $3}') on" \
         "127.0.0.1:$ZBSO_PG_PORT, fsync $("$ctl" psql -Atc 'show fsync')," \
         "synchronous_commit $("$ctl" psql -Atc 'show synchronous_commit'); $(nproc) cores"
    ;;
mysql)
    if [[ -z ${ZBSO_MYSQL_URL:-} ]]; then
        exec "$here/../tests/mysql/with_mysql.sh" "$here/run_loadgen_db.sh" mysql "$@"
    fi
    ctl=$ZBSO_MYSQL_CTL
    echo "MariaDB $("$ctl" sql -N -e 'SELECT VERSION()') on 127.0.0.1:$ZBSO_MYSQL_PORT," \
         "innodb_flush_log_at_trx_commit" \
         "$("$ctl" sql -N -e 'SELECT @@innodb_flush_log_at_trx_commit'); $(nproc) cores"
    ;;
*)
    echo "run_loadgen_db.sh: BACKEND must be pg or mysql, not \"$backend\"" >&2
    exit 2
    ;;
esac
build=${1:-build}
duration=${2:-20}
k=${3:-32}
level=${4:-INFO}
dir=$(mktemp -d)
pids=()
trap '((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
run=0
for replicas in 1 3; do
    run=$((run + 1))
    db_url=$("$ctl" createdb "bench$run")
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
    echo "== $backend, $replicas replica(s), K = $k, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$build/bench/zbso-loadgen" "${urls[@]}" --jobs "$k" --duration "$duration"
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    pids=()
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
