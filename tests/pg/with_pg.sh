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

FIXTURE_NAME=with_pg.sh
# shellcheck source=../netdb/server_fixture.sh
source "$here/../netdb/server_fixture.sh"
die() { fixture_die "$@"; }
fixture_usage "$@"

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

# The watchdog's too: a fresh bash that knows only what is exported.
export ZBSO_FIXTURE_PG_BIN="$bin"
fixture_kill() {
    [[ -f "$1/data/postmaster.pid" ]] || return 0
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$ZBSO_FIXTURE_PG_BIN/pg_ctl" -D "$1/data" -m immediate -w stop
    else
        "$ZBSO_FIXTURE_PG_BIN/pg_ctl" -D "$1/data" -m immediate -w stop
    fi
}
owner=""
((${#as_pg[@]} == 0)) || owner=postgres
fixture_begin zbso-pg "$owner"
dir="$FIXTURE_DIR"

user=zbso
password="$(fixture_password)"
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

# Starts the cluster on port $1 (the configuration written again for each try).
pg_start() {
    cat >"$dir/data/zbso.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $1
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
    "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        >"$dir/pg_ctl.log" 2>&1
}
if ! fixture_start pg_start "$dir/server.log" "could not bind|Address already in use"; then
    cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null || true
    die "PostgreSQL did not start (logs above)"
fi
port="$FIXTURE_PORT"

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

fixture_run "$@"
