#!/usr/bin/env bash
# test_cli_mysql.sh ZBSO: the CLI on MySQL/MariaDB URLs, run under
# tests/mysql/with_mysql.sh, as tests/pg/test_cli_pg.sh does for PostgreSQL: `zbso migrate
# --sql` prints MariaDB's SQL without connecting (its URL points at a port nothing listens
# on) for every spelling of the scheme, the printed SQL applied by the mariadb client is
# the schema zbso expects, `zbso migrate` creates it (0 -> 1) and finds it current,
# `zbso serve` refuses a newer schema naming both versions, serves Zeus's docker-compose
# URL (mysql+asyncmy://USER:PASSWORD@HOST:PORT/Zeus, from ZEUS_BSO_DATABASE_URL) as is,
# and a unix socket (?unix_socket=); ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD fill a URL
# without them; ssl-mode=REQUIRED is refused by a server without TLS; and no output shows
# a password.
set -euo pipefail

zbso="$(realpath "${1:?usage: test_cli_mysql.sh PATH_TO_ZBSO}")"
: "${ZBSO_MYSQL_CTL:?run under tests/mysql/with_mysql.sh}"
tmp="$(mktemp -d /tmp/zbso-cli-my-XXXXXX)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" # no .env of the repository's applies here
unset ZEUS_BSO_DATABASE_URL ZEUS_BSO_DB_USER ZEUS_BSO_DB_PASSWORD
pw="$ZBSO_MYSQL_PASSWORD"
port="$ZBSO_MYSQL_PORT"

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
sql() {
    "$ZBSO_MYSQL_CTL" sql -N --batch "$@"
}

closed_port="$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"

# the newest schema version, from the binary (no test holds the number)
latest="$("$zbso" migrate --to 1000000 --db "mysql://127.0.0.1:$closed_port/x" 2>&1 || true)"
latest="$(sed -n 's/.*is beyond the latest mysql schema version \([0-9]*\).*/\1/p' <<<"$latest")"
[[ -n "$latest" ]] || fail "migrate --to 1000000 did not name the latest version"

# --sql: the whole schema, for every spelling, touching no database
for scheme in mysql mysql+asyncmy mysql+aiomysql mysql+pymysql mysql+mysqldb \
    mysql+mysqlconnector mariadb mariadb+mariadbconnector; do
    url="$scheme://someone:SqlSecret1@127.0.0.1:$closed_port/nowhere"
    if ! "$zbso" migrate --sql --db "$url" >"$tmp/sql.out" 2>"$tmp/sql.err"; then
        fail "migrate --sql --db $scheme://... exited non-zero: $(cat "$tmp/sql.err")"
    fi
    expect_in "$tmp/sql.out" "BEGIN;"
    expect_in "$tmp/sql.out" "SELECT GET_LOCK('zbso_schema', 60);"
    expect_in "$tmp/sql.out" "CREATE TABLE IF NOT EXISTS jobs ("
    expect_in "$tmp/sql.out" "job_id VARBINARY(300) NOT NULL PRIMARY KEY"
    expect_in "$tmp/sql.out" "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
    expect_in "$tmp/sql.out" "CREATE TABLE IF NOT EXISTS reports ("
    expect_in "$tmp/sql.out" "INSERT INTO zbso_schema (version) VALUES (1);"
    expect_in "$tmp/sql.out" "CREATE TABLE IF NOT EXISTS power_profiles ("
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = 2;"
    expect_in "$tmp/sql.out" "ADD COLUMN policy VARCHAR(16) NOT NULL DEFAULT ''zeus''"
    expect_in "$tmp/sql.out" "UPDATE zbso_schema SET version = $latest;"
    [[ "$(tail -n 1 "$tmp/sql.out")" == "COMMIT;" ]] || fail "--sql does not end with COMMIT;"
    expect_not_in "$tmp/sql.out" "PRAGMA"
    expect_not_in "$tmp/sql.out" "BIGINT[]"
    expect_not_in "$tmp/sql.out" "pg_advisory"
    expect_not_in "$tmp/sql.err" "SqlSecret1"
done
# --from 1: power profiles and later steps; --from the latest: nothing left to create;
# beyond it: no such version, named
"$zbso" migrate --sql --from 1 --db "mysql://127.0.0.1:$closed_port/x" >"$tmp/up1.out"
expect_in "$tmp/up1.out" "CREATE TABLE IF NOT EXISTS power_profiles ("
expect_not_in "$tmp/up1.out" "CREATE TABLE IF NOT EXISTS jobs"
"$zbso" migrate --sql --from "$latest" --db "mysql://127.0.0.1:$closed_port/x" >"$tmp/up.out"
expect_not_in "$tmp/up.out" "CREATE TABLE"
expect_not_in "$tmp/up.out" "ALTER TABLE"
status=0
"$zbso" migrate --sql --from $((latest + 1)) --db "mysql://127.0.0.1:$closed_port/x" \
    >"$tmp/up2.out" 2>"$tmp/up2.err" || status=$?
[[ $status -eq 2 ]] || fail "migrate --sql --from $((latest + 1)) exited $status, not 2"
expect_in "$tmp/up2.err" "versions 0..$latest exist"

# the printed SQL, applied by the mariadb client, is the schema zbso expects
url="$("$ZBSO_MYSQL_CTL" createdb cli_sql)"
sql -D cli_sql <"$tmp/sql.out" >/dev/null || fail "mariadb could not apply migrate --sql's output"
"$zbso" migrate --db "$url" >"$tmp/m.out" 2>"$tmp/m.err" || fail "migrate after the client: $(cat "$tmp/m.err")"
expect_in "$tmp/m.out" "schema version $latest -> $latest"
[[ "$(sql -D cli_sql -e "SELECT version FROM zbso_schema")" == "$latest" ]] ||
    fail "zbso_schema of the applied SQL does not hold $latest"

# migrate on an empty database: 0 -> the latest, then current; the password never shown
url="$("$ZBSO_MYSQL_CTL" createdb cli_migrate)"
"$zbso" migrate --db "$url" >"$tmp/m1.out" 2>"$tmp/m1.err" || fail "migrate: $(cat "$tmp/m1.err")"
expect_in "$tmp/m1.out" "schema version 0 -> $latest"
expect_in "$tmp/m1.out" "mysql://$ZBSO_MYSQL_USER:***@127.0.0.1:$port/cli_migrate"
"$zbso" migrate --db "$url" >"$tmp/m2.out" 2>"$tmp/m2.err" || fail "migrate again: $(cat "$tmp/m2.err")"
expect_in "$tmp/m2.out" "schema version $latest -> $latest"
# the credentials come from the environment this time
ZEUS_BSO_DB_USER="$ZBSO_MYSQL_USER" ZEUS_BSO_DB_PASSWORD="$pw" \
    "$zbso" migrate --db "mysql+asyncmy://127.0.0.1:$port/cli_migrate" \
    >"$tmp/m3.out" 2>"$tmp/m3.err" || fail "migrate with ZEUS_BSO_DB_*: $(cat "$tmp/m3.err")"
expect_in "$tmp/m3.out" "schema version $latest -> $latest"
for f in m1 m2 m3; do
    expect_not_in "$tmp/$f.out" "$pw"
    expect_not_in "$tmp/$f.err" "$pw"
done

# a newer schema: serve refuses it naming both versions and zbso migrate's way out
sql -D cli_migrate -e "UPDATE zbso_schema SET version = $((latest + 1))"
status=0
timeout 30 "$zbso" serve --port 0 --db "$url" >"$tmp/s.out" 2>"$tmp/s.err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || fail "serve on schema version $((latest + 1)) exited $status"
expect_in "$tmp/s.err" "schema version $((latest + 1)), newer than this binary's $latest"
expect_not_in "$tmp/s.out" "listening"
expect_not_in "$tmp/s.err" "$pw"

# serve_until_listening LOG ARGS...: starts zbso serve ARGS in the background, waits for
# its listening line; sets server_pid and listen (host:port).
serve_until_listening() {
    local log="$1"
    shift
    "$zbso" serve --port 0 "$@" >"$log.out" 2>"$log.err" &
    server_pid=$!
    listen=""
    for _ in $(seq 300); do
        listen="$(sed -n 's|^zbso serve listening on http://||p' "$log.out")"
        [[ -n "$listen" ]] && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    fail "serve $* did not start: $(cat "$log.err")"
    return 1
}
stop_server() {
    kill -TERM "$server_pid"
    local status=0
    wait "$server_pid" || status=$?
    server_pid=""
    [[ $status -eq 0 ]] || fail "serve exited $status after SIGTERM"
}

# Zeus's docker-compose URL as is, from ZEUS_BSO_DATABASE_URL: mysql+asyncmy://, a
# database named Zeus
"$ZBSO_MYSQL_CTL" createdb Zeus >/dev/null
zeus_url="mysql+asyncmy://$ZBSO_MYSQL_USER:$pw@127.0.0.1:$port/Zeus"
if ZEUS_BSO_DATABASE_URL="$zeus_url" serve_until_listening "$tmp/zeus"; then
    code="$(curl -s -o "$tmp/zeus.body" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"job_id": "zeus-compose", "job_id_prefix": "zeus", "batch_sizes": [32, 64],
             "default_batch_size": 32, "max_power": 300, "number_of_gpus": 1,
             "gpu_model": "A40"}' "http://$listen/jobs")"
    [[ "$code" == 201 ]] || fail "POST /jobs on the compose URL answered $code: $(cat "$tmp/zeus.body")"
    stop_server
    [[ "$(sql -D Zeus -e "SELECT job_id FROM jobs")" == zeus-compose ]] ||
        fail "the job is not in database Zeus"
    expect_in "$tmp/zeus.err" "mysql+asyncmy://$ZBSO_MYSQL_USER:***@127.0.0.1:$port/Zeus"
    expect_not_in "$tmp/zeus.err" "$pw"
    expect_not_in "$tmp/zeus.out" "$pw"
fi

# the unix socket, with query options
sock_url="mysql://$ZBSO_MYSQL_USER:$pw@localhost/cli_migrate?unix_socket=$ZBSO_MYSQL_SOCKET"
sock_url="$sock_url&charset=utf8mb4&ssl-mode=DISABLED"
sql -D cli_migrate -e "UPDATE zbso_schema SET version = $latest"
if serve_until_listening "$tmp/sock" --db "$sock_url"; then
    code="$(curl -s -o /dev/null -w '%{http_code}' "http://$listen/healthz")"
    [[ "$code" == 200 ]] || fail "GET /healthz over the socket answered $code"
    stop_server
    expect_in "$tmp/sock.err" "mysql://$ZBSO_MYSQL_USER:***@localhost/cli_migrate?unix_socket="
    expect_not_in "$tmp/sock.err" "$pw"
fi

# ssl-mode=REQUIRED against a server without TLS: refused, not plaintext
status=0
"$zbso" migrate --db "$url?ssl-mode=REQUIRED" >"$tmp/tls.out" 2>"$tmp/tls.err" || status=$?
[[ $status -ne 0 ]] || fail "migrate with ssl-mode=REQUIRED connected to a server without TLS"
expect_not_in "$tmp/tls.err" "$pw"

# a wrong password, and a server that is not there: clear failures, no password shown
status=0
"$zbso" migrate --db "mysql://$ZBSO_MYSQL_USER:WrongSecret2@127.0.0.1:$port/cli_migrate" \
    >"$tmp/w.out" 2>"$tmp/w.err" || status=$?
[[ $status -ne 0 ]] || fail "migrate with a wrong password succeeded"
expect_in "$tmp/w.err" "Access denied"
expect_in "$tmp/w.err" "/cli_migrate"
expect_not_in "$tmp/w.err" "WrongSecret2"
status=0
"$zbso" migrate --db "mysql://u:DownSecret3@127.0.0.1:$closed_port/db" \
    >"$tmp/d.out" 2>"$tmp/d.err" || status=$?
[[ $status -ne 0 ]] || fail "migrate against a closed port succeeded"
expect_in "$tmp/d.err" "cannot connect"
expect_in "$tmp/d.err" "127.0.0.1:$closed_port"
expect_not_in "$tmp/d.err" "DownSecret3"
# a malformed URL names itself, masked
status=0
"$zbso" migrate --db "mysql://u:BadSecret4@127.0.0.1:99999/db" >"$tmp/b.out" 2>"$tmp/b.err" ||
    status=$?
[[ $status -ne 0 ]] || fail "migrate with port 99999 succeeded"
expect_in "$tmp/b.err" "mysql://u:***@127.0.0.1:99999/db"
expect_in "$tmp/b.err" "99999"
expect_not_in "$tmp/b.err" "BadSecret4"

if ((failures > 0)); then
    echo "test_cli_mysql.sh: $failures failure(s)" >&2
    exit 1
fi
echo "test_cli_mysql.sh: all passed"
