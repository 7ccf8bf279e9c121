/* config.c: defaults, finding and reading `.env` (parsed by util/dotenv.c), and ZEUS_BSO_*
 * environment variables; the value parsers the flags share. File and environment access
 * live only in config_load. */
#include "cli/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/spec.h"
#include "store/netdb/pgurl.h"
#include "util/dotenv.h"
#include "util/log.h"

void config_defaults(cli_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->database_url, sizeof cfg->database_url, "%s", "sqlite:///zbso.db");
    snprintf(cfg->host, sizeof cfg->host, "%s", "127.0.0.1");
    cfg->port = 8000;
    cfg->log_level = ZLOG_INFO;
    cfg->echo_sql = false;
    cfg->trial_timeout_s = 86400.0;
    cfg->idle_timeout_s = 60;
    cfg->header_timeout_s = 10.0;
    cfg->body_timeout_s = 30.0;
    cfg->drain_timeout_s = 10.0;
    cfg->max_connections_per_ip = 256;
}

int config_copy(const char *what, const char *text, char *dst, size_t cap, zbso_err *err)
{
    size_t n = strlen(text);
    if (n >= cap)
        return err_set(err, ZBSO_EINVAL, "%s is %zu bytes long; at most %zu are allowed",
                       what, n, cap - 1);
    memcpy(dst, text, n + 1);
    return 0;
}

int config_parse_port(const char *what, const char *text, int *out, zbso_err *err)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (text[0] == '\0' || !isdigit((unsigned char)text[0]) || *end != '\0' || errno != 0 ||
        v < 0 || v > 65535)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not a port number (an integer 0-65535)",
                       what, text);
    *out = (int)v;
    return 0;
}

int config_parse_timeout(const char *what, const char *text, double *out, zbso_err *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    /* strtod accepts "nan", "inf" and hex floats; a timeout is plain decimal seconds. */
    bool plain = text[0] != '\0';
    for (const char *p = text; *p; p++)
        if (!isdigit((unsigned char)*p) && *p != '.')
            plain = false;
    if (!plain || *end != '\0' || errno != 0 || !isfinite(v) || v < 0)
        return err_set(err, ZBSO_EINVAL,
                       "%s '%s' is not a number of seconds (>= 0; 0 disables the timeout)",
                       what, text);
    *out = v;
    return 0;
}

int config_parse_count(const char *what, const char *text, unsigned max, unsigned *out,
                       zbso_err *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || *end != '\0' || errno != 0 || v > max)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not a whole number from 0 to %u", what,
                       text, max);
    *out = (unsigned)v;
    return 0;
}

int config_parse_bool(const char *what, const char *text, bool *out, zbso_err *err)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return err_set(err, ZBSO_EINVAL, "%s '%s' is not a boolean (true or false)", what, text);
}

int config_parse_policy(const char *what, const char *text, zbso_policy *out, zbso_err *err)
{
    if (spec_policy_parse(text, out) < 0)
        return err_set(err, ZBSO_EINVAL, "%s '%s' is not a batch size policy (zeus or smart)",
                       what, text);
    return 0;
}

/* The checks of one token t set by `from`: refused blank, the example's placeholder, a
 * control character or a space at either end; *weak when shorter than CFG_TOKEN_MIN_BYTES. */
static int check_secret(const char *t, const char *from, bool *weak, zbso_err *err)
{
    size_t n = strlen(t);
    *weak = false;
    size_t blank = strspn(t, " \t\r\n");
    if (blank == n)
        return err_set(err, ZBSO_EINVAL, "%s is set but %s: set a token of at least %d "
                       "random bytes (e.g. the output of `openssl rand -hex 32`), or unset "
                       "the variable to run without authentication", from,
                       n ? "blank" : "empty", CFG_TOKEN_MIN_BYTES);
    static const char *const placeholders[] = {"change-me", "changeme", "change_me"};
    for (size_t i = 0; i < sizeof placeholders / sizeof placeholders[0]; i++)
        if (strcasecmp(t, placeholders[i]) == 0)
            return err_set(err, ZBSO_EINVAL, "%s is the deployment example's placeholder "
                           "'%s': replace it with a random token (e.g. `openssl rand -hex "
                           "32`)", from, placeholders[i]);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
            return err_set(err, ZBSO_EINVAL, "%s has a control character (0x%02x) at byte "
                           "%zu: no Authorization header can carry it (a secret file's "
                           "trailing newline?)", from, (unsigned char)t[i], i);
    if (t[0] == ' ' || t[n - 1] == ' ')
        return err_set(err, ZBSO_EINVAL, "%s %s with a space: a header's value is trimmed, "
                       "so no client could send it", from, t[0] == ' ' ? "starts" : "ends");
    *weak = n < CFG_TOKEN_MIN_BYTES;
    return 0;
}

int config_check_token(const cli_config *cfg, bool *weak, zbso_err *err)
{
    *weak = false;
    if (cfg->api_token_from[0] != '\0' &&
        check_secret(cfg->api_token, cfg->api_token_from, weak, err) < 0)
        return err->code;
    /* The scoped tokens (issue 26) under the same rules when set; an empty one means that
     * class has no token (its requests are 401), never that authentication is off. */
    bool scoped_weak;
    if (cfg->read_token[0] &&
        check_secret(cfg->read_token, "ZBSO_READ_TOKEN", &scoped_weak, err) < 0)
        return err->code;
    if (cfg->client_token[0] &&
        check_secret(cfg->client_token, "ZBSO_CLIENT_TOKEN", &scoped_weak, err) < 0)
        return err->code;
    return 0;
}

void config_redact_url(const char *url, char *out, size_t cap)
{
    /* One masking rule for every message: the PostgreSQL backend's, which knows every
     * place a URL can carry a password (user info, password= and sslpassword= in the
     * query, a password with an unencoded '/'). SQLite URLs have none and come out as
     * they are. */
    dburl_mask(url, out, cap);
}

/* ---- loading ------------------------------------------------------------------------ */

enum cfg_key {
    K_DATABASE_URL, K_SERVER_PORT, K_HOST, K_LOG_LEVEL, K_ECHO_SQL, K_DB_USER,
    K_DB_PASSWORD, K_TRIAL_TIMEOUT, K_API_TOKEN, K_IDLE_TIMEOUT, K_HEADER_TIMEOUT,
    K_DRAIN_TIMEOUT, K_MAX_CONNECTIONS_PER_IP, K_LOG_FILE, K_METRICS_PER_JOB,
    K_BODY_TIMEOUT, K_READ_TOKEN, K_CLIENT_TOKEN, K_API_TOKEN_FILE, K_READ_TOKEN_FILE,
    K_CLIENT_TOKEN_FILE, K_POLICY, K_CARBON_INTENSITY, K_ENERGY_PRICE, K_CURRENCY, K_COUNT
};

static const char *const key_names[K_COUNT] = {
    "ZEUS_BSO_DATABASE_URL", "ZEUS_BSO_SERVER_PORT", "ZEUS_BSO_HOST",
    "ZEUS_BSO_LOG_LEVEL", "ZEUS_BSO_ECHO_SQL", "ZEUS_BSO_DB_USER",
    "ZEUS_BSO_DB_PASSWORD", "ZEUS_BSO_TRIAL_TIMEOUT", "ZEUS_BSO_API_TOKEN",
    "ZEUS_BSO_IDLE_TIMEOUT", "ZEUS_BSO_HEADER_TIMEOUT", "ZEUS_BSO_DRAIN_TIMEOUT",
    "ZEUS_BSO_MAX_CONNECTIONS_PER_IP", "ZEUS_BSO_LOG_FILE", "ZEUS_BSO_METRICS_PER_JOB",
    "ZEUS_BSO_BODY_TIMEOUT",
    "ZBSO_READ_TOKEN", "ZBSO_CLIENT_TOKEN", "ZEUS_BSO_API_TOKEN_FILE", "ZBSO_READ_TOKEN_FILE",
    "ZBSO_CLIENT_TOKEN_FILE", "ZBSO_POLICY",
    "ZBSO_CARBON_INTENSITY", "ZBSO_ENERGY_PRICE", "ZBSO_CURRENCY",
};

/* Values of our keys found in a `.env` file (heap copies; the last assignment wins). */
typedef struct dotenv_values {
    char *v[K_COUNT];
} dotenv_values;

static int keep_known(void *ctx, const char *key, const char *value)
{
    dotenv_values *dv = ctx;
    for (int k = 0; k < K_COUNT; k++) {
        if (strcmp(key, key_names[k]) != 0)
            continue;
        char *copy = strdup(value);
        if (!copy)
            return ZBSO_ENOMEM;
        free(dv->v[k]);
        dv->v[k] = copy;
    }
    return 0;
}

/* Reads the whole file at path into *out (NUL-terminated, caller frees). Returns 1 when
 * read, 0 when there is no such file, or a negative code with err set. */
static int read_small_file(const char *path, char **out, size_t *n_out, zbso_err *err)
{
    int rc = 0;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return err_set(err, ZBSO_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    buf = malloc(DOTENV_MAX_BYTES + 1);
    if (!buf) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory reading %s", path);
        goto out;
    }
    size_t n = fread(buf, 1, DOTENV_MAX_BYTES + 1, f);
    if (ferror(f)) {
        rc = err_set(err, ZBSO_EIO, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    if (n > DOTENV_MAX_BYTES) {
        rc = err_set(err, ZBSO_EINVAL, "%s is larger than %u bytes", path,
                     (unsigned)DOTENV_MAX_BYTES);
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *n_out = n;
    buf = NULL;
    rc = 1;
out:
    free(buf);
    fclose(f);
    return rc;
}

/* Finds the first `.env` in the working directory or its parents and parses it into dv.
 * path receives the file's name ("" when none). Returns 0 or a negative code. */
static int load_dotenv(dotenv_values *dv, char *path, size_t cap, zbso_err *err)
{
    int rc = 0;
    char *text = NULL;
    char dir[PATH_MAX];
    path[0] = '\0';
    if (!getcwd(dir, sizeof dir))
        return 0; /* a deleted or unreachable working directory has no .env to offer */
    for (;;) {
        size_t n_text = 0;
        int n = snprintf(path, cap, "%s/.env", strcmp(dir, "/") == 0 ? "" : dir);
        if (n < 0 || (size_t)n >= cap) {
            path[0] = '\0';
            goto out;
        }
        rc = read_small_file(path, &text, &n_text, err);
        if (rc < 0)
            goto out;
        if (rc == 1) {
            zbso_err perr;
            err_clear(&perr);
            rc = dotenv_parse(text, n_text, keep_known, dv, &perr);
            if (rc == ZBSO_ENOMEM)
                rc = err_set(err, rc, "out of memory reading %s", path);
            else if (rc < 0)
                rc = err_set(err, rc, "%s: %s", path, perr.msg);
            goto out;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || strcmp(dir, "/") == 0) {
            path[0] = '\0';
            goto out;
        }
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
out:
    free(text);
    return rc < 0 ? rc : 0;
}

/* NAME_FILE (issue 26, as the container entrypoint does): reads the secret of variable
 * `name` from the file `path` into out (cap bytes), dropping the trailing newlines a
 * secret file usually ends with. Refused when NAME itself was set too (out non-empty:
 * the _FILE keys come after theirs), or the file cannot be read or is too long. */
static int read_secret_file(const char *what, const char *name, const char *path, char *out,
                            size_t cap, zbso_err *err)
{
    if (out[0])
        return err_set(err, ZBSO_EINVAL, "both %s and %s are set; give one", name, what);
    if (path[0] == '\0')
        return err_set(err, ZBSO_EINVAL, "%s is empty; name the file holding %s", what, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, ZBSO_EINVAL, "%s '%s' cannot be read: %s", what, path,
                       strerror(errno));
    size_t n = fread(out, 1, cap - 1, f);
    bool more = n == cap - 1 && fgetc(f) != EOF;
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || more) {
        memset(out, 0, cap);
        return err_set(err, ZBSO_EINVAL, "%s '%s': %s", what, path,
                       bad ? "read error" : "the secret is too long");
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    out[n] = '\0';
    if (memchr(out, '\0', n)) {
        memset(out, 0, cap);
        return err_set(err, ZBSO_EINVAL, "%s '%s' holds a NUL byte", what, path);
    }
    return 0;
}

/* Applies one variable's value to cfg. what names it (and its file) in messages. */
static int apply(cli_config *cfg, int k, const char *what, const char *v, zbso_err *err)
{
    switch (k) {
    case K_DATABASE_URL:
        return config_copy(what, v, cfg->database_url, sizeof cfg->database_url, err);
    case K_SERVER_PORT:
        return config_parse_port(what, v, &cfg->port, err);
    case K_HOST:
        if (v[0] == '\0')
            return err_set(err, ZBSO_EINVAL, "%s is empty; give an address to listen on", what);
        return config_copy(what, v, cfg->host, sizeof cfg->host, err);
    case K_LOG_LEVEL: {
        /* Refused once the flags are read (cli_start): --log-level may override it. */
        cfg->log_level = log_level_parse(v);
        if (cfg->log_level < 0)
            snprintf(cfg->log_level_bad, sizeof cfg->log_level_bad, "%s", v);
        return 0;
    }
    case K_ECHO_SQL:
        return config_parse_bool(what, v, &cfg->echo_sql, err);
    case K_DB_USER:
        return config_copy(what, v, cfg->db_user, sizeof cfg->db_user, err);
    case K_DB_PASSWORD:
        return config_copy(what, v, cfg->db_password, sizeof cfg->db_password, err);
    case K_TRIAL_TIMEOUT:
        return config_parse_timeout(what, v, &cfg->trial_timeout_s, err);
    case K_API_TOKEN:
        snprintf(cfg->api_token_from, sizeof cfg->api_token_from, "%s", what);
        return config_copy(what, v, cfg->api_token, sizeof cfg->api_token, err);
    case K_IDLE_TIMEOUT:
        return config_parse_count(what, v, CFG_TIMEOUT_MAX_S, &cfg->idle_timeout_s, err);
    case K_HEADER_TIMEOUT:
        return config_parse_timeout(what, v, &cfg->header_timeout_s, err);
    case K_DRAIN_TIMEOUT:
        return config_parse_timeout(what, v, &cfg->drain_timeout_s, err);
    case K_MAX_CONNECTIONS_PER_IP:
        return config_parse_count(what, v, CFG_COUNT_MAX, &cfg->max_connections_per_ip, err);
    case K_LOG_FILE:
        return config_copy(what, v, cfg->log_file, sizeof cfg->log_file, err);
    case K_METRICS_PER_JOB:
        return config_parse_bool(what, v, &cfg->metrics_per_job, err);
    case K_POLICY:
        return config_parse_policy(what, v, &cfg->policy, err);
    case K_BODY_TIMEOUT:
        return config_parse_timeout(what, v, &cfg->body_timeout_s, err);
    case K_READ_TOKEN:
        return config_copy(what, v, cfg->read_token, sizeof cfg->read_token, err);
    case K_CLIENT_TOKEN:
        return config_copy(what, v, cfg->client_token, sizeof cfg->client_token, err);
    case K_API_TOKEN_FILE:
        snprintf(cfg->api_token_from, sizeof cfg->api_token_from, "%s", what);
        return read_secret_file(what, "ZEUS_BSO_API_TOKEN", v, cfg->api_token,
                                sizeof cfg->api_token, err);
    case K_READ_TOKEN_FILE:
        return read_secret_file(what, "ZBSO_READ_TOKEN", v, cfg->read_token,
                                sizeof cfg->read_token, err);
    case K_CLIENT_TOKEN_FILE:
        return read_secret_file(what, "ZBSO_CLIENT_TOKEN", v, cfg->client_token,
                                sizeof cfg->client_token, err);
    case K_CARBON_INTENSITY:
        return config_copy(what, v, cfg->carbon_intensity, sizeof cfg->carbon_intensity, err);
    case K_ENERGY_PRICE:
        return config_copy(what, v, cfg->energy_price, sizeof cfg->energy_price, err);
    case K_CURRENCY:
        return config_copy(what, v, cfg->currency, sizeof cfg->currency, err);
    default:
        return err_set(err, ZBSO_EINTERNAL, "unknown configuration key %d", k);
    }
}

int config_load(cli_config *cfg, zbso_err *err)
{
    dotenv_values dv = {{0}};
    char what[CFG_URL_MAX + 64];
    int rc = load_dotenv(&dv, cfg->dotenv_path, sizeof cfg->dotenv_path, err);
    if (rc < 0)
        goto out;
    for (int k = 0; k < K_COUNT; k++) {
        const char *v = getenv(key_names[k]);
        if (v) {
            snprintf(what, sizeof what, "%s", key_names[k]);
        } else if (dv.v[k]) {
            v = dv.v[k];
            snprintf(what, sizeof what, "%s (from %s)", key_names[k], cfg->dotenv_path);
        } else {
            continue;
        }
        rc = apply(cfg, k, what, v, err);
        if (rc < 0)
            goto out;
    }
out:
    for (int k = 0; k < K_COUNT; k++)
        free(dv.v[k]);
    return rc;
}
