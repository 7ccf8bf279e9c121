#!/usr/bin/env bash
# test_with_mysql.sh: with_mysql.sh itself: the command's exit status comes back, the
# server is durable (innodb_flush_log_at_trx_commit=1, sync_binlog=1) and reachable with
# the exported password (and not without it, nor as root over TCP), myctl.sh's verbs do
# what they say (a database made by createdb is empty, stop/start keep the port and the
# committed data, also after a SIGKILL, dropdb cuts off a connection in the way), the
# server is stopped and its dir removed afterwards (also when with_mysql.sh is killed by
# SIGTERM, or by SIGKILL through its watchdog), and a missing MariaDB fails loudly
# instead of skipping. Prints how long the server took to be ready.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d /tmp/zbso-with-my-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# running PORT PID: something listens on 127.0.0.1:PORT, or PID is still a mariadbd (not
# a zombie waiting to be reaped).
running() {
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
        return 0
    fi
    local stat
    stat="$(cat "/proc/$2/stat" 2>/dev/null)" || return 1
    [[ "$(cat "/proc/$2/comm" 2>/dev/null)" == mariadbd && "${stat##*) }" != Z* ]]
}
# Inside with_mysql.sh: the server's data dir, port and pid.
facts='echo "$ZBSO_MYSQL_DATA $ZBSO_MYSQL_PORT $(cat "$(dirname "$ZBSO_MYSQL_CNF")/mariadbd.pid")"'

# Inside: facts about the server for the checks below, then exit 3.
inner='set -e
date +%s.%N >"$1/ready_at"
echo "$ZBSO_MYSQL_DATA $ZBSO_MYSQL_PORT $ZBSO_MYSQL_BIN" >"$1/facts"
ctl="$ZBSO_MYSQL_CTL"
"$ctl" sql -N --batch -e "SELECT @@innodb_flush_log_at_trx_commit, @@sync_binlog,
    @@character_set_server, @@performance_schema, @@bind_address, @@max_connections,
    @@skip_name_resolve, database(), current_user()" >"$1/vars"
case "$ZBSO_MYSQL_URL" in
    "mysql://$ZBSO_MYSQL_USER:$ZBSO_MYSQL_PASSWORD@127.0.0.1:$ZBSO_MYSQL_PORT/zbso") ;;
    *) echo "$ZBSO_MYSQL_URL" >"$1/bad_url" ;;
esac
[[ "$("$ctl" url)" == "$ZBSO_MYSQL_URL" ]] || echo url >"$1/bad_url"
MYSQL_PWD=wrong "$ZBSO_MYSQL_BIN/mariadb" --no-defaults --protocol=TCP -h 127.0.0.1 \
    -P "$ZBSO_MYSQL_PORT" -u "$ZBSO_MYSQL_USER" -e "SELECT 1" >/dev/null 2>&1 &&
    echo yes >"$1/wrong_pw_ok"
MYSQL_PWD= "$ZBSO_MYSQL_BIN/mariadb" --no-defaults --protocol=TCP -h 127.0.0.1 \
    -P "$ZBSO_MYSQL_PORT" -u root -e "SELECT 1" >/dev/null 2>&1 && echo yes >"$1/root_ok"
url="$("$ctl" createdb fresh_one)"
echo "$url" >"$1/fresh_url"
"$ctl" sql -N --batch -e "SELECT count(*) FROM information_schema.tables
    WHERE table_schema = '"'"'fresh_one'"'"'" >"$1/tables"
"$ctl" sql -e "CREATE TABLE kept (x INT) ENGINE=InnoDB; INSERT INTO kept VALUES (7)"
"$ctl" stop
"$ZBSO_MYSQL_BIN/mariadb-admin" --no-defaults --protocol=TCP -h 127.0.0.1 \
    -P "$ZBSO_MYSQL_PORT" --connect-timeout=2 ping >/dev/null 2>&1 && echo yes >"$1/up_after_stop"
"$ctl" start
"$ctl" sql -N --batch -e "INSERT INTO kept VALUES (8)"
"$ctl" stop immediate
"$ctl" start
"$ctl" sql -N --batch -e "SELECT group_concat(x ORDER BY x) FROM kept" >"$1/kept"
cat "$(dirname "$ZBSO_MYSQL_CNF")/mariadbd.pid" >"$1/pid"
# dropdb while a client sits in fresh_one with a transaction open
"$ctl" sql -D fresh_one -e "CREATE TABLE t (x INT) ENGINE=InnoDB"
"$ctl" sql -D fresh_one -e "BEGIN; SELECT * FROM t FOR UPDATE; SELECT SLEEP(60)" \
    >/dev/null 2>&1 &
holder=$!
sleep 0.5
"$ctl" dropdb fresh_one
wait "$holder" && echo yes >"$1/holder_survived"
"$ctl" sql -N --batch -e "SELECT count(*) FROM information_schema.schemata
    WHERE schema_name = '"'"'fresh_one'"'"'" >"$1/dropped"
"$ctl" createdb "bad-name" 2>/dev/null && echo yes >"$1/bad_name_ok"
exit 3'
status=0
start_at="$(date +%s.%N)"
"$here/with_mysql.sh" bash -c "$inner" inner "$tmp" || status=$?
[[ $status -eq 3 ]] || fail "with_mysql.sh returned $status, not the command's 3"
read -r data port bin <"$tmp/facts" || fail "no facts from inside"
read -r server_pid <"$tmp/pid" || fail "no pid from inside"
ready_s="$(python3 -c "print(f'{$(cat "$tmp/ready_at") - $start_at:.2f}')")"
echo "with_mysql.sh: the command ran ${ready_s} s after with_mysql.sh started" \
    "(mariadb-install-db and the server's start)"
want="1	1	utf8mb4	0	127.0.0.1	300	1	zbso	zbso@%"
[[ "$(cat "$tmp/vars")" == "$want" ]] || fail "server settings are '$(cat "$tmp/vars")', not '$want'"
[[ ! -e "$tmp/bad_url" ]] || fail "ZBSO_MYSQL_URL or myctl url is wrong: $(cat "$tmp/bad_url")"
[[ ! -e "$tmp/wrong_pw_ok" ]] || fail "a wrong password was accepted"
[[ ! -e "$tmp/root_ok" ]] || fail "root without a password was accepted over TCP"
[[ "$(cat "$tmp/fresh_url")" == "mysql://zbso:"*"@127.0.0.1:$port/fresh_one" ]] ||
    fail "createdb printed $(cat "$tmp/fresh_url")"
[[ "$(cat "$tmp/tables")" == 0 ]] || fail "a fresh database has tables"
[[ ! -e "$tmp/up_after_stop" ]] || fail "the server still answers after myctl stop"
[[ "$(cat "$tmp/kept")" == 7,8 ]] || fail "after stop/start and a SIGKILL, kept holds '$(cat "$tmp/kept")'"
[[ ! -e "$tmp/holder_survived" ]] || fail "dropdb did not cut off the connection in its way"
[[ "$(cat "$tmp/dropped")" == 0 ]] || fail "dropdb left database fresh_one"
[[ ! -e "$tmp/bad_name_ok" ]] || fail "createdb took the name bad-name"
[[ ! -e "$data" ]] || fail "data dir $data was left behind"
if running "$port" "$server_pid"; then
    fail "the server on port $port (pid $server_pid) still runs"
fi

# SIGTERM to with_mysql.sh: the command is stopped, then the server, then the dir removed
"$here/with_mysql.sh" bash -c "$facts"' >"$1/facts2"; sleep 60' x "$tmp" &
pid=$!
for _ in $(seq 300); do
    [[ -s "$tmp/facts2" ]] && break
    sleep 0.1
done
read -r data port server_pid <"$tmp/facts2" || fail "no facts from the killed run"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[[ $status -eq 143 ]] || fail "with_mysql.sh killed by SIGTERM returned $status, not 143"
[[ ! -e "$data" ]] || fail "data dir $data was left behind after SIGTERM"
if running "$port" "$server_pid"; then
    fail "the server on port $port (pid $server_pid) still runs after SIGTERM"
fi

# SIGKILL to with_mysql.sh (no trap runs): its watchdog kills the server, removes the dir
"$here/with_mysql.sh" bash -c "$facts"' $$ >"$1/facts3"; sleep 60' x "$tmp" &
pid=$!
for _ in $(seq 300); do
    [[ -s "$tmp/facts3" ]] && break
    sleep 0.1
done
read -r data port server_pid inner_pid <"$tmp/facts3" || fail "no facts from the SIGKILLed run"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
kill -TERM "$inner_pid" 2>/dev/null || true
for _ in $(seq 150); do
    [[ -e "$data" ]] || break
    sleep 0.1
done
[[ ! -e "$data" ]] || fail "data dir $data was left behind after SIGKILL"
if running "$port" "$server_pid"; then
    fail "the server on port $port (pid $server_pid) still runs after SIGKILL"
fi

# no MariaDB: a loud failure, and the command never runs
status=0
ZBSO_MYSQL_BIN=/nonexistent "$here/with_mysql.sh" touch "$tmp/ran" 2>"$tmp/err" || status=$?
[[ $status -ne 0 ]] || fail "with_mysql.sh without MariaDB succeeded"
[[ ! -e "$tmp/ran" ]] || fail "the command ran without MariaDB"
grep -q "MariaDB server programs not found" "$tmp/err" || fail "no clear message: $(cat "$tmp/err")"

# myctl.sh outside with_mysql.sh names what is missing
status=0
env -u ZBSO_MYSQL_PORT "$here/myctl.sh" url >/dev/null 2>"$tmp/err" || status=$?
[[ $status -ne 0 ]] || fail "myctl.sh without with_mysql.sh succeeded"
grep -q "run under tests/mysql/with_mysql.sh" "$tmp/err" || fail "myctl.sh said: $(cat "$tmp/err")"

if ((failures > 0)); then
    echo "test_with_mysql.sh: $failures failure(s)" >&2
    exit 1
fi
echo "test_with_mysql.sh: all passed"
