#!/usr/bin/env bash
# setup.sh: installs the Debian 12 build dependencies (skipped when all are present), the
# PostgreSQL 15 server that the tests start (tests/pg/with_pg.sh), the MariaDB server that
# the MariaDB tests start (tests/mysql/with_mysql.sh), promtool (the /metrics test's
# checker), chromium (the dashboard's browser tests), what the deploy tests use
# (podman with runc, catatonit for pods and the CNI plugins, debootstrap for the base
# image, dpkg-dev for the .deb, systemd for systemd-analyze, and Debian's
# kubernetes-client, kubectl 1.20 with kustomize v2.0.3, when no kubectl is on PATH: the
# manifests render alike with it and with kubectl 1.27 or later), bash, zsh, fish and man
# (the completion and man page tests), python3-venv (the wheel test), and builds zbso and
# the Python wheel into ./build.
#
# setup.sh --runtime installs only what building and serving need (no test servers,
# browser, containers, cmocka or Python packaging) and builds zbso alone, without tests
# (-DZBSO_TESTS=OFF).
# Run as root on a fresh machine; never touches other builds.
set -euo pipefail

cd "$(dirname "$0")/.."

runtime=0
case "${1:-}" in
    "") ;;
    --runtime) runtime=1 ;;
    -h | --help)
        echo "usage: scripts/setup.sh [--runtime]"
        echo "  (default) the full developer setup CI uses: every test's dependencies, zbso"
        echo "            and the Python wheel built into ./build"
        echo "  --runtime only what building and serving zbso need; builds zbso alone"
        exit 0 ;;
    *)
        echo "setup.sh: unknown argument '$1' (usage: scripts/setup.sh [--runtime])" >&2
        exit 2 ;;
esac

# libmariadb-dev: the MariaDB/MySQL backend's client library (MariaDB Connector/C);
# mariadb-server: mariadb-install-db and mariadbd, for the private servers of the tests.
packages=(build-essential cmake ninja-build pkg-config libmicrohttpd-dev libjansson-dev
          libsqlite3-dev libcurl4-openssl-dev libcmocka-dev libpq-dev python3 sqlite3 curl
          postgresql chromium libmariadb-dev mariadb-server python3-pip python3-setuptools
          python3-wheel podman runc catatonit containernetworking-plugins iptables uidmap
          debootstrap dpkg-dev systemd bash zsh fish man-db python3-venv)
if ((runtime)); then
    packages=(build-essential cmake ninja-build pkg-config libmicrohttpd-dev libjansson-dev
              libsqlite3-dev libcurl4-openssl-dev libpq-dev libmariadb-dev python3)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

# kubectl renders the Kubernetes manifests (kubectl kustomize, tests/deploy): whichever is
# on PATH is used; without one, Debian's kubernetes-client (1.20, whose kustomize v2.0.3
# deploy/kubernetes is written for as well as for v5). A kubectl from elsewhere is left as
# it is.
if ((!runtime)) && ! command -v kubectl >/dev/null 2>&1; then
    missing+=(kubernetes-client)
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
    sudo_cmd=(sudo)
fi

if ((${#missing[@]} > 0)); then
    echo "setup.sh: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update
    # No service is started by the install (a policy-rc.d answering 101, "action
    # forbidden", for the install only, unless the machine has its own): the tests start
    # private servers on free ports with their own sockets, and a system mariadbd or
    # PostgreSQL on 3306/5432 would only take memory.
    policy=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
        "${sudo_cmd[@]}" chmod 755 "$policy"
        trap '"${sudo_cmd[@]}" rm -f "$policy"' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends \
        "${missing[@]}"
    if [[ -n "$policy" ]]; then
        "${sudo_cmd[@]}" rm -f "$policy"
        trap - EXIT
    fi
fi

# promtool, Prometheus's checker (tests/integration/test_metrics.py, the alert rules'
# unit tests), and the prometheus server binary (tests/integration/test_monitoring.py
# starts a private one that scrapes a real zbso), from Debian's prometheus package: only
# those binaries are extracted to /usr/local/bin, so no prometheus service is installed,
# enabled or started.
if ((!runtime)) && { ! command -v promtool >/dev/null 2>&1 ||
                    ! command -v prometheus >/dev/null 2>&1; }; then
    echo "setup.sh: installing promtool and prometheus from Debian's prometheus package"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && apt-get download prometheus); then
        "${sudo_cmd[@]}" apt-get update
        (cd "$tmp" && apt-get download prometheus)
    fi
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
    "${sudo_cmd[@]}" install -m 0755 "$tmp/x/usr/bin/promtool" /usr/local/bin/promtool
    "${sudo_cmd[@]}" install -m 0755 "$tmp/x/usr/bin/prometheus" /usr/local/bin/prometheus
    rm -rf "$tmp"
    trap - EXIT
fi

if ((runtime)); then
    cmake -S . -B build -G Ninja -DZBSO_TESTS=OFF
    ninja -C build -j"$(nproc)"
    echo "setup.sh: built ./build/src/cli/zbso (runtime only; install: cmake --install build)"
    exit 0
fi
cmake -S . -B build -G Ninja -DZBSO_TESTS=ON
ninja -C build -j"$(nproc)"
ninja -C build wheel
echo "setup.sh: built ./build/src/cli/zbso and the wheel in ./build/python/dist"
