/* fuzz_dotenv.c: `.env` text (SPEC §5) through dotenv_parse, and the values it yields
 * through the configuration's value parsers, as config_load applies them. Checks that every
 * key is a well-formed key of at most DOTENV_KEY_MAX bytes and every value a C string of at
 * most DOTENV_VALUE_MAX bytes, that a callback's non-zero return stops the parse at once
 * and is returned, that a second parse gives the same assignments, and that a refusal
 * names a line of the text. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/config.h"
#include "fuzz.h"
#include "util/dotenv.h"
#include "util/log.h"

#define STOPPED 7 /* what the callback returns to stop the parse */

typedef struct seen {
    size_t calls;
    size_t stop_at;          /* stop (return STOPPED) on this call; 0: never */
    unsigned long hash;      /* of every key and value, in order */
} seen;

static unsigned long mix(unsigned long h, const char *s)
{
    for (; *s; s++)
        h = h * 131 + (unsigned char)*s;
    return h * 131 + 1;
}

/* Applies a value as config_load would for the key it belongs to; the outcome only has
 * to be a clean success or a clean refusal. */
static void apply(const char *key, const char *value)
{
    cli_config cfg;
    zbso_err err;
    int rc = 0;
    config_defaults(&cfg);
    err_clear(&err);
    if (strcmp(key, "ZEUS_BSO_SERVER_PORT") == 0) {
        rc = config_parse_port(key, value, &cfg.port, &err);
        FUZZ_CHECK(rc < 0 || (cfg.port >= 0 && cfg.port <= 65535));
    } else if (strcmp(key, "ZEUS_BSO_TRIAL_TIMEOUT") == 0) {
        rc = config_parse_timeout(key, value, &cfg.trial_timeout_s, &err);
        FUZZ_CHECK(rc < 0 || cfg.trial_timeout_s >= 0);
    } else if (strcmp(key, "ZEUS_BSO_ECHO_SQL") == 0) {
        rc = config_parse_bool(key, value, &cfg.echo_sql, &err);
    } else if (strcmp(key, "ZEUS_BSO_LOG_LEVEL") == 0) {
        int level = log_level_parse(value);
        FUZZ_CHECK(level >= -1);
    } else if (strcmp(key, "ZEUS_BSO_DATABASE_URL") == 0) {
        rc = config_copy(key, value, cfg.database_url, sizeof cfg.database_url, &err);
        FUZZ_CHECK(rc < 0 || strcmp(cfg.database_url, value) == 0);
        char redacted[CFG_URL_MAX + 1];
        config_redact_url(cfg.database_url, redacted, sizeof redacted);
    } else {
        rc = config_copy(key, value, cfg.api_token, sizeof cfg.api_token, &err);
        FUZZ_CHECK(rc < 0 || strcmp(cfg.api_token, value) == 0);
    }
    FUZZ_CHECK(rc == 0 || (rc == ZBSO_EINVAL && err.code == rc && err.msg[0] != '\0'));
}

static int on_pair(void *ctx, const char *key, const char *value)
{
    seen *s = ctx;
    size_t nk = strlen(key), nv = strlen(value);
    FUZZ_CHECK(nk >= 1 && nk <= DOTENV_KEY_MAX);
    FUZZ_CHECK(isalpha((unsigned char)key[0]) || key[0] == '_');
    for (size_t i = 0; i < nk; i++)
        FUZZ_CHECK(isalnum((unsigned char)key[i]) || strchr("_.-", key[i]) != NULL);
    FUZZ_CHECK(nv <= DOTENV_VALUE_MAX);
    s->calls++;
    s->hash = mix(mix(s->hash, key), value);
    if (s->stop_at && s->calls == s->stop_at)
        return STOPPED;
    apply(key, value);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    seen all = {0}, again = {0};
    zbso_err err, err2;
    err_clear(&err);
    err_clear(&err2);
    char *text = fuzz_copy(data, size);
    int rc = dotenv_parse(text, size, on_pair, &all, &err);
    FUZZ_CHECK(rc == 0 || rc == ZBSO_EINVAL);
    if (rc < 0) {
        unsigned line = 0;
        size_t newlines = 0;
        for (size_t i = 0; i < size; i++)
            newlines += text[i] == '\n';
        FUZZ_CHECK(err.code == rc && sscanf(err.msg, ".env line %u:", &line) == 1);
        FUZZ_CHECK(line >= 1 && line <= newlines + 1);
    }
    /* Stopping at the last assignment: same assignments, the callback's code back. */
    again.stop_at = all.calls;
    int rc2 = dotenv_parse(text, size, on_pair, &again, &err2);
    FUZZ_CHECK(again.calls == all.calls && again.hash == all.hash);
    FUZZ_CHECK(all.calls == 0 ? rc2 == rc : rc2 == STOPPED);
    free(text);
    return 0;
}
