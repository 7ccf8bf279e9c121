/* config.h: the server configuration of SPEC §5: defaults, a `.env` file, the environment
 * (which wins over `.env`) and, applied by the commands, command-line flags. Built as the
 * zbso_config library (the executable and the fuzz targets link it); the `.env` text
 * parser is util/dotenv.h. Only config_load touches files and the environment. */
#ifndef ZBSO_CLI_CONFIG_H
#define ZBSO_CLI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/types.h"
#include "util/err.h"

#define CFG_URL_MAX 4096         /* bytes of a database URL, without the NUL */
#define CFG_HOST_MAX 255
#define CFG_SECRET_MAX 1023      /* user, password, API token */
#define CFG_TIMEOUT_MAX_S 31536000u /* a whole-second timeout: at most a year */
#define CFG_COUNT_MAX 1000000u   /* a count of connections */
#define DOTENV_MAX_BYTES (1u << 20) /* a larger `.env` file is refused */

typedef struct cli_config {
    char database_url[CFG_URL_MAX + 1];
    char host[CFG_HOST_MAX + 1];
    int port;                        /* 0..65535; 0 asks for an ephemeral port */
    int log_level;                   /* enum log_level; -1: the environment's is unknown */
    char log_level_bad[64];          /* that unknown name, for the message */
    bool echo_sql;
    char db_user[CFG_SECRET_MAX + 1];     /* "" when not configured */
    char db_password[CFG_SECRET_MAX + 1];
    double trial_timeout_s;          /* >= 0; 0 disables stale-trial failing */
    char api_token[CFG_SECRET_MAX + 1];   /* "" means no authentication */
    char api_token_from[CFG_URL_MAX + 64];/* where the token was set ("ZEUS_BSO_API_TOKEN",
                                             "... (from .env)"); "" when it was not set */
    char read_token[CFG_SECRET_MAX + 1];  /* ZBSO_READ_TOKEN: GETs of the views; "" none */
    char client_token[CFG_SECRET_MAX + 1];/* ZBSO_CLIENT_TOKEN: the Zeus protocol; "" none */
    unsigned idle_timeout_s;         /* idle connections are closed after this; 0 never */
    double header_timeout_s;         /* a request head must arrive within this; 0 no limit */
    double body_timeout_s;           /* a request body must arrive within this after its
                                        head; 0 no limit */
    double drain_timeout_s;          /* at SIGTERM, in-flight requests get this long */
    unsigned max_connections_per_ip; /* connections from one client address; 0 no limit */
    char log_file[CFG_URL_MAX + 1];  /* "" logs to stderr; else appended to, SIGHUP reopens */
    bool metrics_per_job;            /* /metrics has per-job series */
    zbso_policy policy;              /* new jobs' policy when their spec names none */
    char dotenv_path[CFG_URL_MAX + 1];    /* the `.env` file that was read, or "" */
    /* Issue 25, all "" when not configured (then no CO2e or price figure anywhere):
     * g CO2e per kWh, or the path of a CSV of timestamp,g_per_kwh; the energy price per
     * kWh; its ISO 4217 currency. Checked by cli_footprint_load. */
    char carbon_intensity[CFG_URL_MAX + 1];
    char energy_price[64];
    char currency[8];
} cli_config;

/* Fills cfg with SPEC §5's defaults: sqlite:///zbso.db, 127.0.0.1:8000, INFO, no echo,
 * trial timeout 86400 s, no token; and zbso's own: idle timeout 60 s, header timeout 10 s,
 * body timeout 30 s,
 * drain timeout 10 s, 256 connections per client address, log to stderr. */
void config_defaults(cli_config *cfg);

/* Applies the first `.env` found in the working directory or one of its parents, then the
 * ZEUS_BSO_* environment variables (which win), on top of cfg. Returns 0, or ZBSO_EINVAL /
 * ZBSO_EIO with err naming the variable (and the file) and the offending value. An unknown
 * ZEUS_BSO_LOG_LEVEL falls back to INFO, as Zeus does. */
int config_load(cli_config *cfg, zbso_err *err);

/* Value parsers shared by the environment and the flags; `what` names the source in the
 * message ("--port", "ZEUS_BSO_SERVER_PORT"). Each returns 0 or ZBSO_EINVAL. */
int config_parse_port(const char *what, const char *text, int *out, zbso_err *err);
int config_parse_timeout(const char *what, const char *text, double *out, zbso_err *err);
int config_parse_bool(const char *what, const char *text, bool *out, zbso_err *err);
/* A whole number 0..max (decimal digits only). */
int config_parse_count(const char *what, const char *text, unsigned max, unsigned *out,
                       zbso_err *err);
/* A batch size policy: exactly "zeus" or "smart" (SPEC §2). */
int config_parse_policy(const char *what, const char *text, zbso_policy *out, zbso_err *err);
/* Copies text into dst (capacity cap bytes including the NUL); ZBSO_EINVAL when longer. */
int config_copy(const char *what, const char *text, char *dst, size_t cap, zbso_err *err);

/* The shortest API token that is not warned about: 16 bytes, 128 bits if random. */
#define CFG_TOKEN_MIN_BYTES 16

/* Checks the API token a server is to require. Authentication is off only when the
 * variable was not set at all: set but empty (or blank) is refused, as are the deploy
 * examples' placeholder "change-me", a token with a control character (no header can
 * carry it) and one that starts or ends with a space (a header's value is trimmed). Each
 * refusal names the variable (and the .env file it came from), never the token. Returns
 * 0, or ZBSO_EINVAL with err set. A token shorter than CFG_TOKEN_MIN_BYTES is accepted;
 * *weak is set then, for a warning. Pure. */
int config_check_token(const cli_config *cfg, bool *weak, zbso_err *err);

/* Copies url into out (capacity cap) with every password replaced by `***` (dburl_mask:
 * `user:***@`, `password=***`, `sslpassword=***`), so URLs can be logged without their
 * secrets. Truncates to fit. */
void config_redact_url(const char *url, char *out, size_t cap);

#endif
