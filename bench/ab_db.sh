#!/bin/bash
# ab_db.sh: PostgreSQL and MariaDB side by side, interleaved so that both meet the same
# machine: for each of ROUNDS rounds (default 3), 1 `zbso serve` on PostgreSQL, 1 on
# MariaDB, 3 replicas on PostgreSQL, 3 on MariaDB, each on a fresh database, zbso-loadgen
# at K = 32 for DUR seconds (default 10). Prints per run: requests/s, p50 ms, p99 ms,
# non-2xx, connection errors, the load average. Both private servers are durable
# (with_pg.sh: fsync, synchronous_commit on; with_mysql.sh: innodb_flush_log_at_trx_commit
# = 1). usage: tests/pg/with_pg.sh tests/mysql/with_mysql.sh bench/ab_db.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
: "${ZBSO_PG_CTL:?run under tests/pg/with_pg.sh}"
: "${ZBSO_MYSQL_CTL:?run under tests/mysql/with_mysql.sh}"

dur=${DUR:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
run() { # backend replicas
  local backend=$1 reps=$2 url
  n=$((n+1))
  if [[ $backend == pg ]]; then url=$("$ZBSO_PG_CTL" createdb ab$n); else url=$("$ZBSO_MYSQL_CTL" createdb ab$n); fi
  local pids=() urls=()
  for i in $(seq $reps); do
    out=$tmp/abdb_${n}_$i.out; : > $out
    "$build/src/cli/zbso" serve --port 0 --db "$url" --log-level WARN > $out 2>$tmp/abdb_${n}_$i.log &
    pids+=($!)
    for _ in $(seq 200); do grep -q listening "$out" && break; sleep 0.05; done
    urls+=(--url "$(sed -n 's/.*listening on //p' $out)")
  done
  r=$("$build/bench/zbso-loadgen" "${urls[@]}" --jobs 32 --duration $dur | awk '/^all/ {print $3, $4, $6, $7, $8}')
  echo "$backend x$reps: $r (load $(cut -d' ' -f1 /proc/loadavg))"
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
}
for round in $(seq ${ROUNDS:-3}); do
  run pg 1; run mysql 1; run pg 3; run mysql 3
done
