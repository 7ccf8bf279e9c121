#!/bin/bash
# bundle.sh: copies zbso, libzbso.so, zbso-monitor-bench and every non-libc shared library
# they need into DIR (default .gpu-bundle, ignored by git) so they run on a GPU machine
# that lacks this project's Debian packages. Used before tests/gpu/run_h200.sh.
set -eu
build=${BUILD:-build}
out=${1:-.gpu-bundle}
rm -rf "$out"; mkdir -p "$out/lib"
cp "$build/src/cli/zbso" "$build/src/client/libzbso.so" "$build/bench/zbso-monitor-bench" "$out/"
for f in "$out"/zbso "$out"/libzbso.so; do
    ldd "$f" | awk '/=> \// { print $3 }' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
        xargs -r -I{} cp -L {} "$out/lib/"
done
du -sh "$out"
