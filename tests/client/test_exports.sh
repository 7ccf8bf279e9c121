#!/bin/sh
# test_exports.sh LIB HEADER: fails unless LIB exports (defines, dynamically) exactly the
# functions HEADER declares, all named zbso_*.
set -eu
lib=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$tmp/exported"
grep -oE '\bzbso_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u >"$tmp/declared"
status=0
if grep -v '^zbso_' "$tmp/exported" >"$tmp/foreign"; then
    echo "FAIL: $lib exports symbols outside zbso_*:"; cat "$tmp/foreign"; status=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported"; then
    echo "FAIL: exports of $lib differ from the functions declared in $header"; status=1
fi
[ "$(wc -l <"$tmp/exported")" -gt 10 ] || { echo "FAIL: too few exports"; status=1; }
[ $status -eq 0 ] && echo "ok: $(wc -l <"$tmp/exported") zbso_* functions exported"
exit $status
