#!/usr/bin/env bash
# test_cli_pg.sh ZBSO: the CLI on PostgreSQL URLs, run under tests/pg/with_pg.sh:
# `zbso migrate --sql` prints PostgreSQL's SQL without connecting (its URL points at a
# port nothing listens on), `zbso migrate` creates and upgrades the schema, `zbso serve`
# refuses an older schema naming `zbso migrate`, ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD
# fill a URL without them, and no message shows a password.
set -euo pipefail

zbso="$(realpath "${1:?usage: test_cli_pg.sh PATH_TO_ZBSO}")"
: "${ZBSO_PG_CTL:?run under tests/pg/with_pg.sh}"
tmp="$(mktemp -d /tmp/zbso-cli-pg-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" # no .env of the repository's applies here
unset ZEUS_BSO_DATABASE_URL ZEUS_BSO_DB_USER ZEUS_BSO_DB_PASSWORD

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
# expect_in FILE TEXT: FILE holds TEXT.
expect_in() {
    grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 600 "$1")"
}
expect_not_in() {
    ! grep -qF -- "$2" "$1" || fail "$1 shows '$2'"
}

closed_port="$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"

# the newest schema version, from the binary (no test holds the number)
latest="$("$zbso" migrate --to 1000000 --db "postgresql://127.0.0.1:$closed_port/x" 2>&1 || true)"
latest="$(sed -n 's/.*is beyond the latest postgresql schema version \([0-9]*\).*/\1/p' <<<"$latest")"
[[ -n "$latest" ]] || fail "migrate --to 1000000 did not name the latest version"

# --sql: the whole schema, for both spellings, touching no database
for scheme in postgresql postgresql+asyncpg; do
    url="$scheme://someone:SqlSecret1@127.0.0.1:$closed_port/nowhere"
    if ! "$zbso" migrate --sql --db "$url" >"$tmp/sql.out" 2>"$tmp/sql.err"; then
        fail "migrate --sql --db $scheme://... exited non-zero: $(cat "$tmp/sql.err")"
    fi
    expect_in "$tmp/sql.out" "BEGIN;"
    expect_in "$tmp/sql.out" "SELECT pg_advisory_xact_lock("
    expect_in "$tmp/sql.out" "CREATE TABLE jobs ("
    expect_in "$tmp/sql.out" "batch_sizes BIGINT[] NOT NULL"
    expect_in "$tmp/sql.out" "CREATE INDEX trials_by_batch_size"
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = 2;"
    expect_in "$tmp/sql.out" "CREATE UNIQUE INDEX trials_by_request_key ON trials (job_id, request_key);"
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = 3;"
    expect_in "$tmp/sql.out" "CREATE TABLE reports ("
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = 4;"
    expect_in "$tmp/sql.out" "CREATE TABLE power_profiles ("
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = 5;"
    expect_in "$tmp/sql.out" "ALTER TABLE jobs ADD COLUMN policy TEXT NOT NULL DEFAULT 'zeus',"
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = $latest;"
    [[ "$(tail -n 1 "$tmp/sql.out")" == "COMMIT;" ]] || fail "--sql does not end with COMMIT;"
    expect_not_in "$tmp/sql.out" "PRAGMA"
    expect_not_in "$tmp/sql.err" "SqlSecret1"
done
"$zbso" migrate --sql --from 1 --to 3 --db "postgresql://127.0.0.1:$closed_port/x" >"$tmp/up.out"
expect_not_in "$tmp/up.out" "CREATE TABLE"
expect_in "$tmp/up.out" "CREATE INDEX trials_by_status_lease"
# --from 2 --to 3: the request_key step alone
"$zbso" migrate --sql --from 2 --to 3 --db "postgresql://127.0.0.1:$closed_port/x" \
    >"$tmp/up3.out"
expect_in "$tmp/up3.out" "ALTER TABLE trials ADD COLUMN request_key TEXT;"
expect_not_in "$tmp/up3.out" "CREATE INDEX trials_by_status_lease"
expect_not_in "$tmp/up3.out" "reports"
# --from 3: the curve points' step alone
"$zbso" migrate --sql --from 3 --db "postgresql://127.0.0.1:$closed_port/x" >"$tmp/up4.out"
expect_in "$tmp/up4.out" "CREATE TABLE reports ("
expect_not_in "$tmp/up4.out" "request_key"

# the printed SQL, applied with psql, is the schema zbso expects
url="$("$ZBSO_PG_CTL" createdb cli_sql)"
"$ZBSO_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$url" -f "$tmp/sql.out" >/dev/null ||
    fail "psql could not apply migrate --sql's output"
"$zbso" migrate --db "$url" >"$tmp/m.out" 2>"$tmp/m.err" || fail "migrate after psql: $(cat "$tmp/m.err")"
expect_in "$tmp/m.out" "schema version $latest -> $latest"

# migrate to 1, serve refuses naming zbso migrate, migrate to the latest, serve would start
url="$("$ZBSO_PG_CTL" createdb cli_migrate)"
"$zbso" migrate --to 1 --db "$url" >"$tmp/m1.out" 2>"$tmp/m1.err" || fail "migrate --to 1: $(cat "$tmp/m1.err")"
expect_in "$tmp/m1.out" "schema version 0 -> 1"
expect_not_in "$tmp/m1.out" "$ZBSO_PG_PASSWORD"
status=0
timeout 30 "$zbso" serve --port 0 --db "$url" >"$tmp/s.out" 2>"$tmp/s.err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || fail "serve on schema version 1 exited $status"
expect_in "$tmp/s.err" "zbso migrate"
expect_in "$tmp/s.err" "version 1"
expect_not_in "$tmp/s.err" "$ZBSO_PG_PASSWORD"
# the credentials come from the environment this time
ZEUS_BSO_DB_USER="$ZBSO_PG_USER" ZEUS_BSO_DB_PASSWORD="$ZBSO_PG_PASSWORD" \
    "$zbso" migrate --db "postgresql+asyncpg://127.0.0.1:$ZBSO_PG_PORT/cli_migrate" \
    >"$tmp/m2.out" 2>"$tmp/m2.err" || fail "migrate with ZEUS_BSO_DB_*: $(cat "$tmp/m2.err")"
expect_in "$tmp/m2.out" "schema version 1 -> $latest"

# a wrong password, and a server that is not there: clear failures, no password shown
status=0
"$zbso" migrate --db "postgresql://$ZBSO_PG_USER:WrongSecret2@127.0.0.1:$ZBSO_PG_PORT/cli_migrate" \
    >"$tmp/w.out" 2>"$tmp/w.err" || status=$?
[[ $status -ne 0 ]] || fail "migrate with a wrong password succeeded"
expect_in "$tmp/w.err" "password authentication failed"
expect_not_in "$tmp/w.err" "WrongSecret2"
status=0
"$zbso" migrate --db "postgresql://u:DownSecret3@127.0.0.1:$closed_port/db" \
    >"$tmp/d.out" 2>"$tmp/d.err" || status=$?
[[ $status -ne 0 ]] || fail "migrate against a closed port succeeded"
expect_in "$tmp/d.err" "cannot connect"
expect_in "$tmp/d.err" "127.0.0.1:$closed_port"
expect_not_in "$tmp/d.err" "DownSecret3"
# a malformed URL names itself, masked
status=0
"$zbso" migrate --db "postgresql://u:BadSecret4@127.0.0.1:99999/db" >"$tmp/b.out" 2>"$tmp/b.err" ||
    status=$?
[[ $status -ne 0 ]] || fail "migrate with port 99999 succeeded"
expect_in "$tmp/b.err" "postgresql://u:***@127.0.0.1:99999/db"
expect_in "$tmp/b.err" "99999"
expect_not_in "$tmp/b.err" "BadSecret4"

if ((failures > 0)); then
    echo "test_cli_pg.sh: $failures failure(s)" >&2
    exit 1
fi
echo "test_cli_pg.sh: all passed"
