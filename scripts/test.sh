#!/usr/bin/env bash
# test.sh: runs every test twice: a normal build in ./build and an ASan+UBSan build in
# ./build-asan, each with `ctest --output-on-failure -j2`. Fails on the first failure.
set -euo pipefail

cd "$(dirname "$0")/.."
jobs="${ZBSO_TEST_JOBS:-2}"

cmake -S . -B build -G Ninja -DZBSO_TESTS=ON
ninja -C build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -G Ninja -DZBSO_SANITIZE=ON -DZBSO_TESTS=ON
ninja -C build-asan -j"$jobs"
# Leaks are errors too; a sanitizer report aborts the process so the test fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
(cd build-asan && ctest --output-on-failure -j"$jobs")

echo "test.sh: all tests passed (normal and sanitizer builds)"
