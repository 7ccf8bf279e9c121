#!/usr/bin/env bash
# test.sh: runs every test twice: a normal build in ./build and an ASan+UBSan build in
# ./build-asan, each with `ctest --output-on-failure -j2`; then builds (without running
# the tests again) what packagers build: Release (-O3) in ./build-release and Debian's
# default flags (dpkg-buildflags) in ./build-debflags. Warnings are errors in all four
# (ZBSO_WERROR). Fails on the first failure.
set -euo pipefail

cd "$(dirname "$0")/.."
jobs="${ZBSO_TEST_JOBS:-2}"

cmake -S . -B build -G Ninja -DZBSO_WERROR=ON -DZBSO_TESTS=ON
ninja -C build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -G Ninja -DZBSO_SANITIZE=ON -DZBSO_WERROR=ON -DZBSO_TESTS=ON
ninja -C build-asan -j"$jobs"
# Leaks are errors too; a sanitizer report aborts the process so the test fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
(cd build-asan && ctest --output-on-failure -j"$jobs")

# A packager's builds: they must compile warning-free at -O3 (gcc's -Wmaybe-uninitialized
# sees more there) and with Debian's hardening flags (_FORTIFY_SOURCE=2,
# -Werror=format-security), as debhelper passes them to CMake (build type None).
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DZBSO_WERROR=ON
ninja -C build-release -j"$jobs"
deb_cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
deb_ldflags="$(dpkg-buildflags --get LDFLAGS)"
cmake -S . -B build-debflags -G Ninja -DCMAKE_BUILD_TYPE=None -DZBSO_WERROR=ON \
    -DCMAKE_C_FLAGS="$deb_cflags" -DCMAKE_EXE_LINKER_FLAGS="$deb_ldflags" \
    -DCMAKE_SHARED_LINKER_FLAGS="$deb_ldflags" -DCMAKE_MODULE_LINKER_FLAGS="$deb_ldflags"
ninja -C build-debflags -j"$jobs"

echo "test.sh: all tests passed (normal and sanitizer builds); Release and Debian-flags builds built"
