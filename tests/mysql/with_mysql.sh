#!/usr/bin/env bash
# with_mysql.sh CMD ARGS...: runs CMD with a private MariaDB server of its own: a fresh data
# dir (mariadb-install-db) in a temp dir, on 127.0.0.1 and a free port, its own socket and
# pid file, a user zbso with a generated password and every privilege, durable commits
# (innodb_flush_log_at_trx_commit=1, sync_binlog=1). Stops the server and removes the dir
# when CMD ends (also on failure or a signal) and exits with CMD's status. Fails loudly,
# never skips, when MariaDB cannot be found or started.
#
# CMD sees:
#   ZBSO_MYSQL_URL       mysql://zbso:PASSWORD@127.0.0.1:PORT/zbso (an empty database)
#   ZBSO_MYSQL_HOST      127.0.0.1
#   ZBSO_MYSQL_PORT      the port
#   ZBSO_MYSQL_USER      the user's name (zbso; ALL PRIVILEGES ON *.* WITH GRANT OPTION)
#   ZBSO_MYSQL_PASSWORD  its generated password (letters and digits)
#   ZBSO_MYSQL_BIN       the dir of the client programs (mariadb, mariadb-admin, ...)
#   ZBSO_MYSQL_SERVER    the server program (mariadbd)
#   ZBSO_MYSQL_CNF       the server's option file
#   ZBSO_MYSQL_DATA      the data dir
#   ZBSO_MYSQL_SOCKET    the unix socket
#   ZBSO_MYSQL_LOG       the server's error log
#   ZBSO_MYSQL_CTL       a command (tests/mysql/myctl.sh) that controls this server:
#     "$ZBSO_MYSQL_CTL" stop [fast|immediate]  stop it (fast: SIGTERM, a clean shutdown;
#                                              immediate: SIGKILL, recovery at the next start)
#     "$ZBSO_MYSQL_CTL" start                  start it again, same port, same data
#     "$ZBSO_MYSQL_CTL" createdb NAME          create an empty database NAME; prints its URL
#     "$ZBSO_MYSQL_CTL" dropdb NAME            drop it (connections to it are cut off)
#     "$ZBSO_MYSQL_CTL" url [NAME]             prints the URL of database NAME (default zbso)
#     "$ZBSO_MYSQL_CTL" sql [MARIADB ARGS...]  the mariadb client as zbso on database zbso
#   An outage of 5 s:  "$ZBSO_MYSQL_CTL" stop && sleep 5 && "$ZBSO_MYSQL_CTL" start
#
# The server is small so that it starts in a fraction of a second (every test program
# starts one): a 32 MiB buffer pool, a 16 MiB redo log, no performance_schema, no binary
# log. Its character set is utf8mb4 (utf8mb4_general_ci), as Debian's mariadb-server
# configures it.
#
# Environment in: ZBSO_MYSQL_BIN to pick the client programs' dir (default: the dir of
# mariadb-install-db on PATH, else /usr/bin); mariadbd is looked for there and in ../sbin.
# Run as root (as CI does), the data belongs to the mysql user (created by the
# mariadb-server package) and mariadbd runs with --user=mysql.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

FIXTURE_NAME=with_mysql.sh
# shellcheck source=../netdb/server_fixture.sh
source "$here/../netdb/server_fixture.sh"
die() { fixture_die "$@"; }
fixture_usage "$@"

bin="${ZBSO_MYSQL_BIN:-}"
if [[ -z "$bin" ]]; then
    if p="$(command -v mariadb-install-db)"; then
        bin="$(dirname "$p")"
    else
        bin=/usr/bin
    fi
fi
server=""
for s in "$bin/mariadbd" "$bin/../sbin/mariadbd"; do
    if [[ -x "$s" ]]; then
        server="$(cd "$(dirname "$s")" && pwd)/mariadbd"
        break
    fi
done
[[ -x "$bin/mariadb-install-db" && -x "$bin/mariadb" && -x "$bin/mariadb-admin" &&
    -n "$server" ]] ||
    die "MariaDB server programs not found (mariadb-install-db, mariadb, mariadb-admin in" \
        "$bin; mariadbd there or in $bin/../sbin); install the Debian package" \
        "mariadb-server (scripts/setup.sh does) or set ZBSO_MYSQL_BIN"

as_user=()
if [[ $(id -u) -eq 0 ]]; then
    id mysql >/dev/null 2>&1 ||
        die "running as root needs the mysql user (created by the mariadb-server package)"
    as_user=(--user=mysql)
fi

# A throwaway server: SIGKILL, as "stop immediate" does. The watchdog's too: a fresh bash
# that knows only what is exported.
export ZBSO_FIXTURE_MYCTL="$here/myctl.sh"
fixture_kill() {
    "$ZBSO_FIXTURE_MYCTL" kill-by-pidfile "$1/mariadbd.pid"
}
owner=""
((${#as_user[@]} == 0)) || owner=mysql
fixture_begin zbso-my "$owner"
dir="$FIXTURE_DIR"

user=zbso
password="$(fixture_password)"

write_cnf() {
    cat >"$dir/my.cnf" <<EOF
[mariadbd]
datadir = $dir/data
port = $1
bind-address = 127.0.0.1
socket = $dir/mysqld.sock
pid-file = $dir/mariadbd.pid
log-error = $dir/server.log
# A tmpdir of its own: servers sharing /tmp remove each other's #sql-temptable files (seen:
# mariadb-install-db failing "Error on delete of '/tmp/#sql-temptable-...MAD'" while other
# test programs started theirs).
tmpdir = $dir/tmp
skip-name-resolve
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
innodb_flush_log_at_trx_commit = 1
sync_binlog = 1
max_connections = 300
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_temp_data_file_path = ibtmp1:1M:autoextend
performance_schema = OFF
EOF
    chmod 644 "$dir/my.cnf"
}

mkdir -p "$dir/tmp"
((${#as_user[@]} == 0)) || chown mysql: "$dir/tmp"

# The system tables (root reachable only through the unix socket by the OS user that runs
# this: --auth-root-authentication-method=socket; nothing here uses it).
write_cnf 3306
if ! "$bin/mariadb-install-db" --defaults-file="$dir/my.cnf" "${as_user[@]}" \
    --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
    >"$dir/install.log" 2>&1; then
    cat "$dir/install.log" "$dir/server.log" >&2 2>/dev/null || true
    die "mariadb-install-db failed (log above)"
fi

# The user and database, made by the first start's --init-file before the server accepts
# any connection (CREATE USER cannot run in mariadb-install-db's bootstrap).
(umask 077 && cat >"$dir/init.sql" <<EOF
CREATE USER '$user'@'%' IDENTIFIED BY '$password';
GRANT ALL PRIVILEGES ON *.* TO '$user'@'%' WITH GRANT OPTION;
CREATE DATABASE zbso;
EOF
)
[[ ${#as_user[@]} -eq 0 ]] || chown mysql: "$dir/init.sql"

export ZBSO_MYSQL_HOST=127.0.0.1
export ZBSO_MYSQL_USER="$user"
export ZBSO_MYSQL_PASSWORD="$password"
export ZBSO_MYSQL_BIN="$bin"
export ZBSO_MYSQL_SERVER="$server"
export ZBSO_MYSQL_CNF="$dir/my.cnf"
export ZBSO_MYSQL_DATA="$dir/data"
export ZBSO_MYSQL_SOCKET="$dir/mysqld.sock"
export ZBSO_MYSQL_LOG="$dir/server.log"
export ZBSO_MYSQL_CTL="$here/myctl.sh"

# Starts the server on port $1 (the option file written again for each try).
my_start() {
    write_cnf "$1"
    export ZBSO_MYSQL_PORT="$1"
    : >"$dir/server.log"
    [[ ${#as_user[@]} -eq 0 ]] || chown mysql: "$dir/server.log"
    "$ZBSO_MYSQL_CTL" start --init-file="$dir/init.sql" >"$dir/start.log" 2>&1
}
started=""
if fixture_start my_start "$dir/server.log" "Address already in use"; then
    started=1
fi
port="$FIXTURE_PORT"
rm -f "$dir/init.sql"
if [[ -z "$started" ]]; then
    cat "$dir/start.log" "$dir/server.log" >&2 2>/dev/null || true
    die "MariaDB did not start (logs above)"
fi
export ZBSO_MYSQL_URL="mysql://$user:$password@127.0.0.1:$port/zbso"

fixture_run "$@"
