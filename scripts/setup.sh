#!/usr/bin/env bash
# setup.sh: installs the Debian 12 build dependencies (skipped when all are present), the
# PostgreSQL 15 server that the tests start (tests/pg/with_pg.sh), promtool (the /metrics
# test's checker), chromium (the dashboard's browser tests), and builds zbso into ./build.
# Run as root on a fresh machine; never touches other builds.
set -euo pipefail

cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libmicrohttpd-dev libjansson-dev
          libsqlite3-dev libcurl4-openssl-dev libcmocka-dev libpq-dev python3 sqlite3 curl
          postgresql chromium python3-pip python3-setuptools python3-wheel)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
    sudo_cmd=(sudo)
fi

if ((${#missing[@]} > 0)); then
    echo "setup.sh: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends \
        "${missing[@]}"
fi

# promtool, Prometheus's checker (tests/integration/test_metrics.py), from Debian's
# prometheus package: only that binary is extracted to /usr/local/bin, so no prometheus
# service is installed, enabled or started.
if ! command -v promtool >/dev/null 2>&1; then
    echo "setup.sh: installing promtool from Debian's prometheus package"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && apt-get download prometheus); then
        "${sudo_cmd[@]}" apt-get update
        (cd "$tmp" && apt-get download prometheus)
    fi
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
    "${sudo_cmd[@]}" install -m 0755 "$tmp/x/usr/bin/promtool" /usr/local/bin/promtool
    rm -rf "$tmp"
    trap - EXIT
fi

cmake -S . -B build -G Ninja
ninja -C build -j"$(nproc)"
echo "setup.sh: built ./build/src/cli/zbso"
