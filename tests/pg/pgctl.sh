#!/usr/bin/env bash
# pgctl.sh: controls the PostgreSQL server that with_pg.sh started (it exports this script
# as ZBSO_PG_CTL and the ZBSO_PG_* variables it reads). Subcommands:
#   stop [fast|immediate]   stop the server (fast: clients are cut off; immediate: as if
#                           it crashed, recovery at the next start)
#   start                   start it again: same data dir, same port
#   createdb NAME           create an empty database; prints its URL
#   dropdb NAME             drop a database, cutting off its connections
#   url [NAME]              prints the URL of database NAME (default zbso)
#   psql [ARGS...]          psql on database zbso as the superuser
# Exits non-zero with a message on failure.
set -euo pipefail

die() {
    echo "pgctl.sh: $*" >&2
    exit 1
}

for v in ZBSO_PG_BIN ZBSO_PG_DATA ZBSO_PG_PORT ZBSO_PG_USER ZBSO_PG_PASSWORD ZBSO_PG_LOG; do
    [[ -n "${!v:-}" ]] || die "$v is not set; run under tests/pg/with_pg.sh"
done

as_pg=()
if [[ $(id -u) -eq 0 ]]; then
    as_pg=(runuser -u postgres --)
fi

export PGPASSWORD="$ZBSO_PG_PASSWORD"
conn=(-h 127.0.0.1 -p "$ZBSO_PG_PORT" -U "$ZBSO_PG_USER")

# A database name is an identifier here: letters, digits, '_'; no quoting needed.
check_name() {
    [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] || die "bad database name '$1'"
}

url() {
    echo "postgresql://$ZBSO_PG_USER:$ZBSO_PG_PASSWORD@127.0.0.1:$ZBSO_PG_PORT/$1"
}

cmd="${1:-}"
shift || true
case "$cmd" in
stop)
    mode="${1:-fast}"
    [[ "$mode" == fast || "$mode" == immediate ]] || die "stop mode '$mode' is not fast or immediate"
    "${as_pg[@]}" "$ZBSO_PG_BIN/pg_ctl" -D "$ZBSO_PG_DATA" -m "$mode" -w -t 60 stop >/dev/null
    ;;
start)
    "${as_pg[@]}" "$ZBSO_PG_BIN/pg_ctl" -D "$ZBSO_PG_DATA" -l "$ZBSO_PG_LOG" -w -t 60 start \
        >/dev/null || die "PostgreSQL did not start; see $ZBSO_PG_LOG"
    ;;
createdb)
    check_name "${1:-}"
    "$ZBSO_PG_BIN/createdb" "${conn[@]}" "$1"
    url "$1"
    ;;
dropdb)
    check_name "${1:-}"
    "$ZBSO_PG_BIN/dropdb" "${conn[@]}" --force "$1"
    ;;
url)
    name="${1:-zbso}"
    check_name "$name"
    url "$name"
    ;;
psql)
    "$ZBSO_PG_BIN/psql" "${conn[@]}" -d zbso -X -v ON_ERROR_STOP=1 "$@"
    ;;
*)
    die "usage: pgctl.sh stop [fast|immediate] | start | createdb NAME | dropdb NAME | url [NAME] | psql [ARGS]"
    ;;
esac
