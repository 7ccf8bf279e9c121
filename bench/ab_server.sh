#!/bin/bash
# ab_server.sh: compares two server builds under zbso-loadgen by interleaved runs (A, B, A, B,
# ...), each on a fresh SQLite database with the durable defaults (or, with -D pg, a fresh
# database of the PostgreSQL server of tests/pg/with_pg.sh), and prints every run and the
# medians, so that background load on a shared machine hits both alike.
# usage: bench/ab_server.sh [-k K] [-d SECONDS] [-r ROUNDS] [-l LOADGEN] [-c CPUS] [-D DB] BUILD_A BUILD_B
#   -k  concurrent jobs (32)        -d  seconds per run (10)     -r  rounds (5)
#   -l  the zbso-loadgen both runs use (BUILD_B's by default)
#   -c  pin server and load generator to these CPUs with taskset (e.g. 0,1), to play a
#       2-core machine on a bigger quiet one
#   -D  sqlite (default) or pg: run under tests/pg/with_pg.sh
set -eu
k=32 dur=10 rounds=5 lg= cpus= dbkind=sqlite
while getopts k:d:r:l:c:D: o; do
    case $o in
    k) k=$OPTARG ;; d) dur=$OPTARG ;; r) rounds=$OPTARG ;; l) lg=$OPTARG ;; c) cpus=$OPTARG ;; D) dbkind=$OPTARG ;;
    *) sed -n 's/^# \{0,1\}//p' "$0" | sed -n 2,11p >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { sed -n 's/^# \{0,1\}//p' "$0" | sed -n 2,11p >&2; exit 2; }
a=$1 b=$2
lg=${lg:-$b/bench/zbso-loadgen}
case $dbkind in
sqlite) ;;
pg) : "${ZBSO_PG_CTL:?-D pg: run under tests/pg/with_pg.sh}" ;;
*) echo "ab_server.sh: -D $dbkind: sqlite or pg" >&2; exit 2 ;;
esac
runs=0
pin=()
[ -n "$cpus" ] && pin=(taskset -c "$cpus")
dir=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

# run LABEL BUILD: one run; appends "LABEL req/s p99 p99_get p99_report p99_patch
# server_us_per_request" to $dir/results and prints it.
run() {
    local label=$1 build=$2 db="$dir/run.db" dburl
    rm -f "$db" "$db-wal" "$db-shm"
    dburl="sqlite:///$db"
    if [ "$dbkind" = pg ]; then
        runs=$((runs + 1))
        dburl=$("$ZBSO_PG_CTL" createdb "ab$runs")
    fi
    "${pin[@]}" "$build/src/cli/zbso" serve --port 0 --db "$dburl" --log-level INFO \
        > "$dir/serve.out" 2> "$dir/serve.log" &
    srv=$!
    for _ in $(seq 600); do
        grep -qs listening "$dir/serve.out" && break
        kill -0 $srv 2>/dev/null || break
        sleep 0.05
    done
    local url
    url=$(sed -n 's/.*listening on //p' "$dir/serve.out")
    if [ -z "$url" ]; then
        echo "ab_server.sh: $build/src/cli/zbso did not start:" >&2
        tail -5 "$dir/serve.log" >&2
        exit 1
    fi
    "${pin[@]}" "$lg" --url "$url" --jobs "$k" --duration "$dur" > "$dir/lg.out"
    local ticks
    ticks=$(awk '{print $14 + $15}' "/proc/$srv/stat")
    kill $srv
    wait $srv || true
    srv=
    awk -v label="$label" -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" '
        /^all/ {n = $2; rps = $3; p99 = $6}
        /^GET \/jobs\/batch_size/ {g = $7}
        /^POST \/report/ {r = $6}
        /^PATCH \/trials/ {p = $6}
        END {printf "%s %.0f %.3f %.3f %.3f %.3f %.1f\n", label, rps, p99, g, r, p,
             ticks / hz * 1e6 / n}' "$dir/lg.out" | tee -a "$dir/results"
}

echo "$dbkind, K = $k, $dur s per run, $rounds rounds, loadgen $lg${cpus:+, pinned to CPUs $cpus}; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "run req/s p99_all_ms p99_get_ms p99_report_ms p99_patch_ms server_us_per_req"
for _ in $(seq "$rounds"); do
    run A "$a"
    run B "$b"
done
echo "medians:"
for label in A B; do
    awk -v label=$label '$1 == label' "$dir/results" | python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin]
cols = list(zip(*rows))
print(rows[0][0], " ".join("%g" % statistics.median(float(v) for v in c) for c in cols[1:]))'
done
