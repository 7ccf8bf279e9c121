#!/usr/bin/env bash
# myctl.sh: controls the MariaDB server that with_mysql.sh started (it exports this script
# as ZBSO_MYSQL_CTL and the ZBSO_MYSQL_* variables it reads). Subcommands:
#   stop [fast|immediate]   stop the server (fast: SIGTERM, clients are cut off and the
#                           server shuts down cleanly; immediate: SIGKILL, as if it
#                           crashed, InnoDB recovers at the next start)
#   start                   start it again: same data dir, same port (waits until it
#                           answers; fails naming the log when it does not)
#   createdb NAME           create an empty database; prints its URL
#   dropdb NAME             drop a database, cutting off the connections that use it
#   url [NAME]              prints the URL of database NAME (default zbso)
#   sql [ARGS...]           the mariadb client as zbso on database zbso (ARGS such as
#                           -e 'SQL', -N, --batch, or -D NAME for another database)
# with_mysql.sh also uses `kill-by-pidfile PIDFILE` (SIGKILL of the mariadbd whose pid the
# file holds, waiting for it to be gone). Exits non-zero with a message on failure.
set -euo pipefail

die() {
    echo "myctl.sh: $*" >&2
    exit 1
}

# alive PID: the process exists and is not a zombie.
alive() {
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [[ "${stat%% *}" != Z ]]
}

# The pid in pidfile $1 when it names a live mariadbd, else nothing.
server_pid() {
    local pid
    pid="$(cat "$1" 2>/dev/null)" || return 0
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    alive "$pid" && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == mariadbd ]] && echo "$pid"
    return 0
}

# wait_gone PID SECONDS: until PID is gone; fails after SECONDS.
wait_gone() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        alive "$1" || return 0
        sleep 0.05
    done
    return 1
}

if [[ "${1:-}" == kill-by-pidfile ]]; then
    pid="$(server_pid "${2:?kill-by-pidfile PIDFILE}")"
    [[ -z "$pid" ]] && exit 0
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 30 || die "mariadbd $pid did not die"
    exit 0
fi

for v in ZBSO_MYSQL_BIN ZBSO_MYSQL_SERVER ZBSO_MYSQL_CNF ZBSO_MYSQL_PORT ZBSO_MYSQL_USER \
    ZBSO_MYSQL_PASSWORD ZBSO_MYSQL_LOG; do
    [[ -n "${!v:-}" ]] || die "$v is not set; run under tests/mysql/with_mysql.sh"
done

dir="$(dirname "$ZBSO_MYSQL_CNF")"
pidfile="$dir/mariadbd.pid"
export MYSQL_PWD="$ZBSO_MYSQL_PASSWORD"
client=(--no-defaults --protocol=TCP -h 127.0.0.1 -P "$ZBSO_MYSQL_PORT" -u "$ZBSO_MYSQL_USER"
        --default-character-set=utf8mb4)

# A database name is an identifier here: letters, digits, '_'; no quoting needed.
check_name() {
    [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]{0,63}$ ]] || die "bad database name '$1'"
}

url() {
    echo "mysql://$ZBSO_MYSQL_USER:$ZBSO_MYSQL_PASSWORD@127.0.0.1:$ZBSO_MYSQL_PORT/$1"
}

sql() {
    "$ZBSO_MYSQL_BIN/mariadb" "${client[@]}" --database=zbso "$@"
}

cmd="${1:-}"
shift || true
case "$cmd" in
stop)
    mode="${1:-fast}"
    [[ "$mode" == fast || "$mode" == immediate ]] || die "stop mode '$mode' is not fast or immediate"
    pid="$(server_pid "$pidfile")"
    [[ -n "$pid" ]] || die "no mariadbd runs (pid file $pidfile)"
    if [[ "$mode" == fast ]]; then
        kill -TERM "$pid"
        wait_gone "$pid" 60 || die "mariadbd $pid did not stop within 60 s; see $ZBSO_MYSQL_LOG"
    else
        kill -KILL "$pid"
        wait_gone "$pid" 30 || die "mariadbd $pid did not die"
    fi
    ;;
start)
    # (with_mysql.sh's first start passes --init-file=... as an extra server option)
    pid="$(server_pid "$pidfile")"
    [[ -z "$pid" ]] || die "mariadbd $pid already runs"
    rm -f "$pidfile"
    as_user=()
    [[ $(id -u) -ne 0 ]] || as_user=(--user=mysql)
    setsid "$ZBSO_MYSQL_SERVER" --defaults-file="$ZBSO_MYSQL_CNF" "${as_user[@]}" "$@" \
        </dev/null >>"$dir/mariadbd.out" 2>&1 &
    pid=$!
    # Ready: the server wrote its pid file (after it bound the port) and answers a ping
    # (mariadb-admin ping succeeds on any answer, "access denied" included).
    for ((i = 0; i < 1200; i++)); do
        alive "$pid" || break
        if [[ "$(cat "$pidfile" 2>/dev/null)" == "$pid" ]] &&
            "$ZBSO_MYSQL_BIN/mariadb-admin" "${client[@]}" --connect-timeout=5 ping \
                >/dev/null 2>&1; then
            exit 0
        fi
        sleep 0.05
    done
    if alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        die "mariadbd did not answer within 60 s; see $ZBSO_MYSQL_LOG"
    fi
    echo >&2
    die "mariadbd exited at its start; the end of $ZBSO_MYSQL_LOG:"$'\n'"$(tail -n 5 "$ZBSO_MYSQL_LOG")"
    ;;
createdb)
    check_name "${1:-}"
    sql -e "CREATE DATABASE $1"
    url "$1"
    ;;
dropdb)
    check_name "${1:-}"
    # MariaDB has no DROP DATABASE ... FORCE: kill the connections using the database,
    # then drop it; a client that reconnected in between holds its locks for at most
    # lock_wait_timeout, and the whole is tried again.
    for try in 1 2 3 4 5; do
        ids="$(sql -N --batch -e "SELECT id FROM information_schema.processlist
            WHERE db = '$1' AND id <> CONNECTION_ID()")"
        for id in $ids; do
            sql -e "KILL $id" 2>/dev/null || true # it may have ended meanwhile
        done
        if sql -e "SET SESSION lock_wait_timeout = 5; DROP DATABASE $1" 2>"$dir/dropdb.err"
        then
            exit 0
        fi
        grep -q "Lock wait timeout" "$dir/dropdb.err" || break
    done
    die "DROP DATABASE $1 failed: $(cat "$dir/dropdb.err")"
    ;;
url)
    name="${1:-zbso}"
    check_name "$name"
    url "$name"
    ;;
sql)
    sql "$@"
    ;;
*)
    die "usage: myctl.sh stop [fast|immediate] | start | createdb NAME | dropdb NAME | url [NAME] | sql [ARGS]"
    ;;
esac
