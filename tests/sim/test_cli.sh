#!/bin/sh
# test_cli.sh ZBSO: runs `zbso simulate` end to end into a temp dir and checks the files and
# their headers, then that bad input fails with a clear message and leaves no output.
set -u
zbso=$1
dir=$(mktemp -d /tmp/zbso-sim-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$zbso" simulate --workload squad --gpu v100 --seeds 1..3 --eta 0.5 --beta 2 \
    --out "$dir/out" >"$dir/stdout" 2>"$dir/stderr" || fail "simulate exited $?: $(cat "$dir/stderr")"
for f in runs.csv summary.csv savings.csv cost.svg; do
    [ -s "$dir/out/$f" ] || fail "$f missing or empty"
done
[ "$(head -n 1 "$dir/out/runs.csv")" = "workload,gpu,seed,recurrence,try,bs,pl,energy,time,reached,cost" ] ||
    fail "runs.csv header: $(head -n 1 "$dir/out/runs.csv")"
head -n 1 "$dir/out/summary.csv" | grep -q '^workload,gpu,seeds,recurrences,' || fail "summary.csv header"
[ "$(wc -l <"$dir/out/summary.csv")" -eq 2 ] || fail "summary.csv should have one workload line"
grep -q '^squad,v100,3,98,32,' "$dir/out/summary.csv" || fail "summary line: $(tail -n 1 "$dir/out/summary.csv")"
head -c 4 "$dir/out/cost.svg" | grep -q '<svg' || fail "cost.svg does not start with <svg"
tail -n 1 "$dir/out/cost.svg" | grep -q '</svg>' || fail "cost.svg is not complete"
grep -q '^squad ' "$dir/stdout" || fail "no summary table on stdout"
ls -a "$dir/out" | grep -q tmp && fail "temporary files left behind"

# Same seeds, same bytes.
"$zbso" simulate --workload squad --seeds 1..3 --threads 1 --out "$dir/again" >/dev/null 2>&1 ||
    fail "second run failed"
cmp -s "$dir/out/runs.csv" "$dir/again/runs.csv" || fail "runs.csv differs between runs"

# Bad input: a clear error, a non-zero exit, no output directory contents.
expect_fail() {
    want=$1; shift
    rm -rf "$dir/bad"
    if "$zbso" simulate "$@" --out "$dir/bad" >/dev/null 2>"$dir/err"; then
        fail "simulate $* succeeded"
    fi
    grep -q -- "$want" "$dir/err" || fail "simulate $*: message '$(cat "$dir/err")' lacks '$want'"
    [ -z "$(ls -A "$dir/bad" 2>/dev/null)" ] || fail "simulate $* left output"
}
expect_fail "unknown workload 'nope'; known workloads: cifar100 imagenet" --workload nope
expect_fail "default batch size 7 " --workload squad --default-bs 7
expect_fail "no power trace for GPU 'h100'" --gpu h100
head -c 300 "$(dirname "$0")/../../data/traces/summary_power_v100.csv" >"$dir/trunc.csv"
expect_fail "trunc.csv:4: last line" --power-trace "$dir/trunc.csv"
printf 'dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\nsquad,bert_base_uncased,32,adamw,100,abc,1\n' >"$dir/bad.csv"
expect_fail "bad.csv:2: time_per_epoch 'abc'" --power-trace "$dir/bad.csv"
expect_fail "--seeds '5..2'" --seeds 5..2
expect_fail "--eta '2'" --eta 2
if "$zbso" simulate --workload squad --out /dev/null/sub >/dev/null 2>"$dir/err"; then
    fail "unwritable --out accepted"
fi
grep -q "/dev/null/sub" "$dir/err" || fail "unwritable --out message: $(cat "$dir/err")"

# Another power trace of the same format works; --gpu only names the GPU then.
grep -E '^(dataset|squad),' "$(dirname "$0")/../../data/traces/summary_power_a40.csv" >"$dir/p.csv"
"$zbso" simulate --workload squad --power-trace "$dir/p.csv" --gpu mygpu --seeds 1..1 \
    --recurrences 5 --power-limit max --beta none --out "$dir/custom" >/dev/null 2>"$dir/err" ||
    fail "custom power trace: $(cat "$dir/err")"
grep -q '^squad,mygpu,1,5,1,' "$dir/custom/runs.csv" || fail "custom trace: no recurrence 5 row"
echo "ok"
