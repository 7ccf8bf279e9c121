#!/usr/bin/env bash
# with_pg.sh CMD ARGS...: runs CMD with a private PostgreSQL 15 server of its own: a fresh
# cluster in a temp dir, on 127.0.0.1 and a free port, password authentication
# (scram-sha-256), fsync on. Stops the server and removes the dir when CMD ends (also on
# failure or a signal) and exits with CMD's status. Fails loudly, never skips, when
# PostgreSQL cannot be found or started.
#
# CMD sees:
#   ZBSO_PG_URL       postgresql://USER:PASSWORD@127.0.0.1:PORT/zbso (an empty database)
#   ZBSO_PG_HOST      127.0.0.1
#   ZBSO_PG_PORT      the port
#   ZBSO_PG_USER      the superuser's name (zbso)
#   ZBSO_PG_PASSWORD  its generated password
#   ZBSO_PG_BIN       the PostgreSQL bin dir (initdb, pg_ctl, psql, createdb, ...)
#   ZBSO_PG_DATA      the data dir
#   ZBSO_PG_SOCKET    the unix socket dir
#   ZBSO_PG_LOG       the server's log file
#   ZBSO_PG_CTL       a command (tests/pg/pgctl.sh) that controls this server:
#     "$ZBSO_PG_CTL" stop [fast|immediate]   stop it (default fast: clients are cut off)
#     "$ZBSO_PG_CTL" start                   start it again, same port, same data
#     "$ZBSO_PG_CTL" createdb NAME           create an empty database NAME; prints its URL
#     "$ZBSO_PG_CTL" dropdb NAME             drop it (connections to it are cut off)
#     "$ZBSO_PG_CTL" url [NAME]              prints the URL of database NAME (default zbso)
#     "$ZBSO_PG_CTL" psql [PSQL ARGS...]     psql on database zbso as the superuser
#   An outage of 5 s:  "$ZBSO_PG_CTL" stop && sleep 5 && "$ZBSO_PG_CTL" start
#   A fresh database from SQL instead: connect to ZBSO_PG_URL and run CREATE DATABASE name.
#
# Environment in: ZBSO_PG_BIN to pick the bin dir (default: the newest
# /usr/lib/postgresql/*/bin holding initdb). Run as root (as CI does), the cluster belongs
# to the postgres user and initdb/pg_ctl run through runuser, since initdb refuses root.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

die() {
    echo "with_pg.sh: $*" >&2
    exit 1
}

if (($# == 0)); then
    echo "usage: with_pg.sh CMD [ARGS...]" >&2
    exit 2
fi

bin="${ZBSO_PG_BIN:-}"
if [[ -z "$bin" ]]; then
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$d/initdb" ]]; then
            bin="$d"
            break
        fi
    done
fi
[[ -n "$bin" && -x "$bin/initdb" && -x "$bin/pg_ctl" && -x "$bin/psql" ]] ||
    die "PostgreSQL server binaries not found (looked in ${bin:-/usr/lib/postgresql/*/bin});" \
        "install the Debian package postgresql (scripts/setup.sh does) or set ZBSO_PG_BIN"

as_pg=()
if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 ||
        die "running as root needs the postgres user (created by the postgresql package)"
    as_pg=(runuser -u postgres --)
fi

dir="$(mktemp -d /tmp/zbso-pg-XXXXXX)"
child=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$child" ]] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

if ((${#as_pg[@]} > 0)); then
    chown postgres: "$dir"
fi
chmod 700 "$dir"

# A watchdog in a session of its own: when this script dies without its trap (SIGKILL
# from a test runner's timeout), it still stops the server and removes the dir. Its
# output goes nowhere, so that nobody waits on a pipe it holds.
setsid bash -c '
    while kill -0 "$1" 2>/dev/null; do sleep 1; done
    if [[ -f "$2/data/postmaster.pid" ]]; then
        if [[ $(id -u) -eq 0 ]]; then
            runuser -u postgres -- "$3/pg_ctl" -D "$2/data" -m immediate -w stop
        else
            "$3/pg_ctl" -D "$2/data" -m immediate -w stop
        fi
    fi
    rm -rf "$2"' with_pg_watchdog "$$" "$dir" "$bin" </dev/null >/dev/null 2>&1 &

user=zbso
password="$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 24)"
(umask 077 && printf '%s\n' "$password" >"$dir/pwfile")
[[ ${#as_pg[@]} -eq 0 ]] || chown postgres: "$dir/pwfile"

# initdb's own final sync is skipped (--no-sync): a throwaway cluster; the server itself
# runs with fsync and synchronous_commit on.
if ! "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U "$user" --pwfile="$dir/pwfile" \
    --auth-host=scram-sha-256 --auth-local=scram-sha-256 -E UTF8 --no-locale --no-sync \
    >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    die "initdb failed (log above)"
fi
rm -f "$dir/pwfile"

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

started=""
for attempt in 1 2 3; do
    port="$(free_port)"
    cat >"$dir/data/zbso.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
password_encryption = 'scram-sha-256'
EOF
    [[ ${#as_pg[@]} -eq 0 ]] || chown postgres: "$dir/data/zbso.conf"
    grep -q "^include = 'zbso.conf'" "$dir/data/postgresql.conf" ||
        echo "include = 'zbso.conf'" >>"$dir/data/postgresql.conf"
    if "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        >"$dir/pg_ctl.log" 2>&1; then
        started=1
        break
    fi
    # Another process may have taken the port between free_port and the start.
    grep -q "could not bind\|Address already in use" "$dir/server.log" 2>/dev/null || break
done
if [[ -z "$started" ]]; then
    cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null || true
    die "PostgreSQL did not start (logs above)"
fi

export ZBSO_PG_HOST=127.0.0.1
export ZBSO_PG_PORT="$port"
export ZBSO_PG_USER="$user"
export ZBSO_PG_PASSWORD="$password"
export ZBSO_PG_BIN="$bin"
export ZBSO_PG_DATA="$dir/data"
export ZBSO_PG_SOCKET="$dir"
export ZBSO_PG_LOG="$dir/server.log"
export ZBSO_PG_CTL="$here/pgctl.sh"
export ZBSO_PG_URL="postgresql://$user:$password@127.0.0.1:$port/zbso"

"$ZBSO_PG_CTL" createdb zbso >/dev/null || die "could not create database zbso"

# In the background, so that a signal to this script interrupts the wait and the trap
# stops the server.
"$@" &
child=$!
set +e
wait "$child"
status=$?
set -e
child=""
exit "$status"
