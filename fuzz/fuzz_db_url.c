/* fuzz_db_url.c: database URLs (SPEC §4) as `zbso serve` and `zbso migrate` take them from
 * the command line, the environment or a `.env` file. The input is "URL[\nUSER[\nPASSWORD]]"
 * (USER and PASSWORD stand for ZEUS_BSO_DB_USER / ZEUS_BSO_DB_PASSWORD). Runs
 * store_backend_for_url (a memory:// URL is also opened and closed), config_redact_url (the
 * URL in the start-up log) and pgurl_parse / dburl_mask (the PostgreSQL backend's URL).
 * Checks that a backend is picked for the supported prefixes and named after the scheme
 * (mariadb:// is the mysql backend),
 * that a refusal names the supported schemes; that the redacted URL is dburl_mask's text
 * cut to fit its buffer; that a parsed PostgreSQL URL picks the postgresql backend, has
 * unique keywords with NUL-terminated values inside the struct, gets USER/PASSWORD only
 * where the URL gave none, names the masked URL in every message, and that its masked form
 * never parses back to the password it hid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/config.h"
#include "fuzz.h"
#include "store/netdb/pgurl.h"
#include "store/store.h"

/* Prefixes that must pick a backend (SPEC §4, and memory:// for tests). */
static const char *const known[] = {"sqlite:///", "sqlite+aiosqlite:///", "postgresql://",
                                    "postgresql+asyncpg://", "postgres://", "mysql://",
                                    "mysql+asyncmy://", "mysql+aiomysql://", "mysql+pymysql://",
                                    "mysql+mysqldb://", "mysql+mysqlconnector://", "mariadb://",
                                    "mariadb+mariadbconnector://", "memory://"};

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void check_backend(const char *url)
{
    zbso_err err;
    err_clear(&err);
    const store_backend *b = store_backend_for_url(url, &err);
    bool must = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        must |= starts_with(url, known[i]);
    if (!b) {
        FUZZ_CHECK(!must);
        FUZZ_CHECK(err.code == ZBSO_EINVAL && strstr(err.msg, "supported") != NULL);
        return;
    }
    FUZZ_CHECK(b->name != NULL && b->open != NULL && b->close != NULL && b->exec != NULL);
    /* "sqlite" for sqlite:/// and sqlite+aiosqlite:///, "postgresql" for postgresql://,
     * postgresql+asyncpg:// and postgres://, "mysql" for mysql[+driver]:// and
     * mariadb[+driver]://,
     * "memory" for memory://. */
    FUZZ_CHECK(starts_with(url, b->name) ||
               (strcmp(b->name, "mysql") == 0 && starts_with(url, "mariadb")) ||
               (strcmp(b->name, "postgresql") == 0 && starts_with(url, "postgres://")));
    if (strcmp(b->name, "memory") == 0) {
        store *st = NULL;
        FUZZ_CHECK(store_open(url, NULL, &st, &err) == 0 && st != NULL);
        store_close(st);
    }
}

/* config_redact_url is dburl_mask (one masking rule for every message), cut to fit: a
 * prefix of the full masked text, NUL-terminated within cap. */
static void check_redact(const char *url)
{
    static const size_t caps[] = {1, 2, 16, CFG_URL_MAX + 1};
    char *full = malloc(4 * PGURL_URL_MAX + 8);
    FUZZ_CHECK(full != NULL);
    dburl_mask(url, full, 4 * PGURL_URL_MAX + 8);
    size_t full_len = strlen(full);
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t cap = caps[i];
        char *out = malloc(cap);
        FUZZ_CHECK(out != NULL);
        config_redact_url(url, out, cap);
        size_t n = strnlen(out, cap);
        FUZZ_CHECK(n < cap);
        FUZZ_CHECK(n <= full_len && strncmp(out, full, n) == 0);
        free(out);
    }
    free(full);
}

/* The password keywords the mask must hide. */
static const char *const secrets[] = {"password", "sslpassword"};

/* Structure of a parse that succeeded: NULL-terminated arrays, keywords once each, values
 * in u->text (or a static sslmode spelling). */
static void check_pgurl_struct(const pgurl *u)
{
    FUZZ_CHECK(u->n <= PGURL_PARAMS_MAX && u->keys[u->n] == NULL && u->values[u->n] == NULL);
    FUZZ_CHECK(u->text_len <= sizeof u->text);
    for (size_t i = 0; i < u->n; i++) {
        FUZZ_CHECK(u->keys[i] != NULL && u->values[i] != NULL);
        FUZZ_CHECK(pgurl_get(u, u->keys[i]) == u->values[i]); /* no second one */
        const char *v = u->values[i];
        if (v >= u->text && v < u->text + u->text_len)
            FUZZ_CHECK(memchr(v, '\0', (size_t)(u->text + u->text_len - v)) != NULL);
        else
            FUZZ_CHECK(strcmp(u->keys[i], "sslmode") == 0);
    }
}

/* The masked URL, parsed again, must not give back a password the original gave. */
static void check_mask_hides(const pgurl *u)
{
    if (strlen(u->masked) >= PGURL_URL_MAX)
        return; /* cut short: what is left need not parse alike */
    pgurl *again = malloc(sizeof *again);
    FUZZ_CHECK(again != NULL);
    zbso_err err;
    err_clear(&err);
    if (pgurl_parse(u->masked, NULL, NULL, again, &err) == 0) {
        for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
            const char *was = pgurl_get(u, secrets[i]), *now = pgurl_get(again, secrets[i]);
            if (was && now && strcmp(was, "***") != 0)
                FUZZ_CHECK(strcmp(was, now) != 0);
        }
    }
    free(again);
}

static void check_pgurl(const char *url, const char *user, const char *password)
{
    pgurl *u = malloc(sizeof *u), *bare = malloc(sizeof *bare);
    char masked[PGURL_URL_MAX + 1], want[ZBSO_ERR_MSG_MAX];
    zbso_err err;
    FUZZ_CHECK(u != NULL && bare != NULL);
    err_clear(&err);
    dburl_mask(url, masked, sizeof masked);
    int rc = pgurl_parse(url, NULL, NULL, bare, &err);
    FUZZ_CHECK(strcmp(bare->masked, masked) == 0);
    if (rc < 0) {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == rc);
        snprintf(want, sizeof want, "database URL \"%.200s\"", masked);
        FUZZ_CHECK(strncmp(err.msg, want, strlen(want)) == 0);
    } else {
        FUZZ_CHECK(rc == 0);
        const store_backend *b = store_backend_for_url(url, &err);
        FUZZ_CHECK(b != NULL && strcmp(b->name, "postgresql") == 0);
        check_pgurl_struct(bare);
        check_mask_hides(bare);
    }
    /* With USER and PASSWORD: they fill only what the URL left out. */
    err_clear(&err);
    int rc2 = pgurl_parse(url, user, password, u, &err);
    if (rc < 0)
        FUZZ_CHECK(rc2 < 0);
    if (rc2 == 0) {
        check_pgurl_struct(u);
        const char *given[] = {user, password}, *keys[] = {"user", "password"};
        for (size_t i = 0; i < 2; i++) {
            const char *from_url = pgurl_get(bare, keys[i]), *got = pgurl_get(u, keys[i]);
            if (from_url)
                FUZZ_CHECK(got && strcmp(got, from_url) == 0);
            else if (given[i] && given[i][0])
                FUZZ_CHECK(got && strcmp(got, given[i]) == 0);
            else
                FUZZ_CHECK(got == NULL);
        }
    }
    free(bare);
    free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = fuzz_cstr(data, size);
    if (!url)
        return -1;
    char *user = strchr(url, '\n'), *password = NULL;
    if (user) {
        *user++ = '\0';
        password = strchr(user, '\n');
        if (password)
            *password++ = '\0';
    }
    check_backend(url);
    check_redact(url);
    check_pgurl(url, user, password);
    free(url);
    return 0;
}
