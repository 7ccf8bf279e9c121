#!/bin/bash
# smoke_loadgen.sh: ctest bench/loadgen_smoke. Two `zbso serve` processes (SQLite, one
# database each) and zbso-loadgen with both URLs for 1 s at K = 4: it must exit 0, print
# its per-endpoint table, and every server must have answered requests of its jobs
# (jobs 0 and 2 go to the first URL, 1 and 3 to the second).
# usage: bench/smoke_loadgen.sh ZBSO_BIN LOADGEN_BIN
set -eu
zbso=$1
loadgen=$2
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
urls=()
for i in 1 2; do
    "$zbso" serve --port 0 --db "sqlite:///$dir/s$i.db" > "$dir/s$i.out" 2> "$dir/s$i.log" &
    pids+=($!)
    for _ in $(seq 200); do grep -q listening "$dir/s$i.out" && break; sleep 0.05; done
    url=$(sed -n 's/.*listening on //p' "$dir/s$i.out")
    [[ -n $url ]] || { echo "FAIL: server $i did not start"; cat "$dir/s$i.log"; exit 1; }
    urls+=(--url "$url")
done
"$loadgen" "${urls[@]}" --jobs 4 --duration 1 > "$dir/lg.out"
cat "$dir/lg.out"
grep -q "GET /jobs/batch_size" "$dir/lg.out" || { echo "FAIL: no per-endpoint table"; exit 1; }
for i in 1 2; do
    n=$(grep -c "POST /report" "$dir/s$i.log" || true)
    jobs=$(grep -c "POST /jobs 201 " "$dir/s$i.log" || true)
    echo "server $i: $n reports, $jobs registrations"
    [[ $n -gt 0 && $jobs -eq 2 ]] || { echo "FAIL: server $i got $n reports, $jobs jobs"; exit 1; }
done
echo "PASS"
