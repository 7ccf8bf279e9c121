#!/usr/bin/env bash
# test_with_pg.sh: with_pg.sh itself: the command's exit status comes back, the server is
# reachable with the exported password (and not without it), a database made by pgctl.sh
# is empty, the server is stopped and its dir removed afterwards (also when with_pg.sh is
# killed by SIGTERM, or by SIGKILL through its watchdog), and a missing PostgreSQL fails
# loudly instead of skipping.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d /tmp/zbso-with-pg-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# Inside: facts about the server for the checks below, then exit 3.
inner='set -e
echo "$ZBSO_PG_DATA $ZBSO_PG_PORT $ZBSO_PG_BIN" >"$1/facts"
"$ZBSO_PG_BIN/psql" -X -tA "$ZBSO_PG_URL" -c "SHOW fsync" >"$1/fsync"
"$ZBSO_PG_BIN/psql" -X -tA "$ZBSO_PG_URL" -c "SHOW password_encryption" >"$1/enc"
PGPASSWORD=wrong "$ZBSO_PG_BIN/psql" -X -tA -h 127.0.0.1 -p "$ZBSO_PG_PORT" -U "$ZBSO_PG_USER" \
    -d zbso -c "SELECT 1" >/dev/null 2>&1 && echo yes >"$1/wrong_pw_ok"
url="$("$ZBSO_PG_CTL" createdb fresh_one)"
"$ZBSO_PG_BIN/psql" -X -tA "$url" -c "SELECT count(*) FROM pg_tables WHERE schemaname = '"'"'public'"'"'" >"$1/tables"
exit 3'
status=0
"$here/with_pg.sh" bash -c "$inner" inner "$tmp" || status=$?
[[ $status -eq 3 ]] || fail "with_pg.sh returned $status, not the command's 3"
read -r data port bin <"$tmp/facts" || fail "no facts from inside"
[[ "$(cat "$tmp/fsync")" == on ]] || fail "fsync is $(cat "$tmp/fsync")"
[[ "$(cat "$tmp/enc")" == scram-sha-256 ]] || fail "password_encryption is $(cat "$tmp/enc")"
[[ ! -e "$tmp/wrong_pw_ok" ]] || fail "a wrong password was accepted"
[[ "$(cat "$tmp/tables")" == 0 ]] || fail "a fresh database has tables"
[[ ! -e "$data" ]] || fail "data dir $data was left behind"
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    fail "the server on port $port still runs"
fi

# SIGTERM to with_pg.sh: the command is stopped, then the server, then the dir removed
"$here/with_pg.sh" bash -c 'echo "$ZBSO_PG_DATA $ZBSO_PG_PORT" >"$1/facts2"; sleep 60' x "$tmp" &
pid=$!
for _ in $(seq 100); do
    [[ -s "$tmp/facts2" ]] && break
    sleep 0.1
done
read -r data port <"$tmp/facts2" || fail "no facts from the killed run"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[[ $status -eq 143 ]] || fail "with_pg.sh killed by SIGTERM returned $status, not 143"
[[ ! -e "$data" ]] || fail "data dir $data was left behind after SIGTERM"
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    fail "the server on port $port still runs after SIGTERM"
fi

# SIGKILL to with_pg.sh (no trap runs): its watchdog stops the server and removes the dir
"$here/with_pg.sh" bash -c 'echo "$ZBSO_PG_DATA $ZBSO_PG_PORT $$" >"$1/facts3"; sleep 60' x "$tmp" &
pid=$!
for _ in $(seq 100); do
    [[ -s "$tmp/facts3" ]] && break
    sleep 0.1
done
read -r data port inner_pid <"$tmp/facts3" || fail "no facts from the SIGKILLed run"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
kill -TERM "$inner_pid" 2>/dev/null || true
for _ in $(seq 150); do
    [[ -e "$data" ]] || break
    sleep 0.1
done
[[ ! -e "$data" ]] || fail "data dir $data was left behind after SIGKILL"
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    fail "the server on port $port still runs after SIGKILL"
fi

# no PostgreSQL: a loud failure, and the command never runs
status=0
ZBSO_PG_BIN=/nonexistent "$here/with_pg.sh" touch "$tmp/ran" 2>"$tmp/err" || status=$?
[[ $status -ne 0 ]] || fail "with_pg.sh without PostgreSQL succeeded"
[[ ! -e "$tmp/ran" ]] || fail "the command ran without PostgreSQL"
grep -q "PostgreSQL server binaries not found" "$tmp/err" || fail "no clear message: $(cat "$tmp/err")"

if ((failures > 0)); then
    echo "test_with_pg.sh: $failures failure(s)" >&2
    exit 1
fi
echo "test_with_pg.sh: all passed"
