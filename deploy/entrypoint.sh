#!/bin/sh
# zbso-entrypoint: the image's entrypoint. For each ZEUS_BSO_* variable that may hold a
# secret, NAME_FILE names a file to read NAME from (compose and Kubernetes secrets are
# files), then zbso runs with the image's arguments: `serve` by default, or `migrate`, ...
set -eu

for name in ZEUS_BSO_API_TOKEN ZEUS_BSO_DB_PASSWORD ZEUS_BSO_DB_USER ZEUS_BSO_DATABASE_URL; do
    eval "file=\${${name}_FILE-}"
    [ -n "$file" ] || continue
    if eval "[ -n \"\${${name}+set}\" ]"; then
        echo "zbso-entrypoint: both $name and ${name}_FILE are set; give one" >&2
        exit 2
    fi
    if [ ! -r "$file" ]; then
        echo "zbso-entrypoint: ${name}_FILE '$file' cannot be read" >&2
        exit 2
    fi
    # $(...) drops the trailing newline(s) a secret file usually ends with.
    value=$(cat "$file")
    unset "${name}_FILE"
    # compose writes an empty secret for a ZEUS_BSO_API_TOKEN its .env leaves unset: that
    # is no token, which zbso serve takes only from an unset variable (an empty one it
    # refuses, as a token lost on the way).
    if [ "$name" = ZEUS_BSO_API_TOKEN ] && [ -z "$value" ]; then
        echo "zbso-entrypoint: ${name}_FILE '$file' is empty: no API token" >&2
        continue
    fi
    export "$name=$value"
done

exec /usr/local/bin/zbso "$@"
