#!/bin/bash
# run_connbench.sh: the connection benchmark of docs/BENCHMARKS.md. Starts `zbso serve` on a
# fresh SQLite database twice, on loopback, and runs bench/connbench.py against it:
#   1. soft open-file limit 1024, hard limit HARD (as systemd's LimitNOFILE=1024:524288;
#      the server raises its soft limit to the hard one): IDLE idle keep-alive + SLOW
#      slowloris connections open at once, a fresh client measured SEQUENCES times;
#   2. hard limit 1024 (soft = hard): a flood of 1100 connections.
# usage: bench/run_connbench.sh [BUILD_DIR] [IDLE] [SLOW] [SEQUENCES] [HARD]
set -eu
build=${1:-build}
idle=${2:-10000}
slow=${3:-1000}
sequences=${4:-200}
hard=${5:-$(ulimit -Hn)}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
# The benchmark itself holds IDLE + SLOW sockets.
ulimit -n "$(ulimit -Hn)"

# start NOFILE_SPEC ARGS...: starts the server under prlimit, sets $srv and $url.
start() {
    local spec=$1
    shift
    rm -f "$dir"/bench.db* "$dir/serve.out" "$dir/serve.log"
    prlimit --nofile="$spec" "$build/src/cli/zbso" serve --port 0 \
        --db "sqlite:///$dir/bench.db" --log-level INFO "$@" \
        > "$dir/serve.out" 2> "$dir/serve.log" &
    srv=$!
    for _ in $(seq 200); do grep -qs listening "$dir/serve.out" && break; sleep 0.05; done
    url=$(sed -n 's/.*listening on //p' "$dir/serve.out")
    [ -n "$url" ] || { echo "server did not start:"; cat "$dir/serve.log"; exit 1; }
    grep -h "accepting up to" "$dir/serve.log" | sed 's/^/server: /'
}

stop() {
    kill "$srv"
    wait "$srv" || true
    srv=
}

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on the" \
     "machine skews latencies)"
echo "== 1. soft limit 1024, hard limit $hard: $idle idle + $slow slowloris connections"
start "1024:$hard"
python3 "$here/connbench.py" --url "$url" --pid "$srv" --log "$dir/serve.log" \
    --idle "$idle" --slow "$slow" --sequences "$sequences"
stop
echo "== 2. hard limit 1024: a flood of 1100 connections"
start "1024:1024"
python3 "$here/connbench.py" --url "$url" --pid "$srv" --log "$dir/serve.log" --flood 1100
stop
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
