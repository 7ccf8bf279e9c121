# server_fixture.sh: the skeleton every private test database server shares, sourced by
# tests/pg/with_pg.sh and tests/mysql/with_mysql.sh (bash, set -euo pipefail): a temp dir
# of its own, cleanup on exit and on signals, a watchdog that cleans up when the script is
# SIGKILLed, a generated password, a free port on 127.0.0.1 with retries when another
# process takes it first, and the command run in the background so that a signal reaches
# the trap. What differs (installing, starting, stopping the server) stays in the script,
# as hooks:
#   fixture_kill DIR   stops the server of DIR at once (no waiting for clients). The
#                      watchdog runs it in a fresh bash after this script is gone: it may
#                      use only exported variables and exported functions.
# Order of use: fixture_usage, finding the programs, fixture_begin, the install,
# fixture_start, exports, fixture_run.

# fixture_die MSG...: the script's message and exit 1 (its name from FIXTURE_NAME).
fixture_die() {
    echo "$FIXTURE_NAME: $*" >&2
    exit 1
}

# fixture_usage ARGS...: exit 2 with the usage when no command was given.
fixture_usage() {
    if (($# == 0)); then
        echo "usage: $FIXTURE_NAME CMD [ARGS...]" >&2
        exit 2
    fi
}

# fixture_begin PREFIX OWNER: makes FIXTURE_DIR (/tmp/PREFIX-XXXXXX, mode 700, owned by OWNER when not
# empty), installs the traps and starts the watchdog.
fixture_begin() {
    local prefix=$1 owner=$2
    FIXTURE_DIR="$(mktemp -d "/tmp/$prefix-XXXXXX")"
    FIXTURE_CHILD=""
    trap fixture_cleanup EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    trap 'exit 129' HUP
    [[ -z "$owner" ]] || chown "$owner": "$FIXTURE_DIR"
    chmod 700 "$FIXTURE_DIR"
    # In a session of its own, output going nowhere, so that nobody waits on a pipe it
    # holds.
    export -f fixture_kill
    setsid bash -c '
        while kill -0 "$1" 2>/dev/null; do sleep 1; done
        fixture_kill "$2"
        rm -rf "$2"' "${FIXTURE_NAME%.sh}_watchdog" "$$" "$FIXTURE_DIR" \
        </dev/null >/dev/null 2>&1 &
}

# The EXIT trap: ends the command, stops the server, removes the dir, keeps the status.
fixture_cleanup() {
    local status=$?
    trap - EXIT INT TERM HUP
    if [[ -n "$FIXTURE_CHILD" ]] && kill -0 "$FIXTURE_CHILD" 2>/dev/null; then
        kill -TERM "$FIXTURE_CHILD" 2>/dev/null || true
        wait "$FIXTURE_CHILD" 2>/dev/null || true
    fi
    fixture_kill "$FIXTURE_DIR" >/dev/null 2>&1 || true
    rm -rf "$FIXTURE_DIR"
    exit "$status"
}

# Prints a password of 24 letters and digits.
fixture_password() {
    head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 24
}

# Prints a TCP port free on 127.0.0.1 now.
fixture_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# fixture_start START LOG PATTERN: runs START PORT with a free port, up to 3 times while
# the server's LOG says another process took the port first (grep -E PATTERN). Sets
# FIXTURE_PORT. Returns START's status of the last try.
fixture_start() {
    local start=$1 log=$2 pattern=$3 attempt
    for attempt in 1 2 3; do
        FIXTURE_PORT="$(fixture_free_port)"
        if "$start" "$FIXTURE_PORT"; then
            return 0
        fi
        grep -Eq "$pattern" "$log" 2>/dev/null || return 1
    done
    return 1
}

# fixture_run CMD ARGS...: runs the command in the background, so that a signal to the
# script interrupts the wait and the trap stops the server, and exits with its status.
fixture_run() {
    local status
    "$@" &
    FIXTURE_CHILD=$!
    set +e
    wait "$FIXTURE_CHILD"
    status=$?
    set -e
    FIXTURE_CHILD=""
    exit "$status"
}
