/* cmd_serve.c: `zbso serve`: configuration -> store -> HTTP server, then waits for SIGTERM or
 * SIGINT and shuts down in order (drain, then the store); SIGHUP reopens the log file.
 * No request handling here: that is src/http's. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "core/spec.h"
#include "cli/footprint.h"
#include "http/http.h"
#include "service/service.h"
#include "store/store.h"
#include "util/log.h"

static const char serve_usage[] =
    "usage: zbso serve [--host H] [--port P] [--db URL] [--log-level L] [--log-file F]\n"
    "                  [--trial-timeout S] [--idle-timeout S] [--header-timeout S]\n"
    "                  [--body-timeout S]\n"
    "                  [--drain-timeout S] [--max-connections-per-ip N] [--echo-sql]\n"
    "                  [--migrate] [--metrics-per-job] [--carbon-intensity G_PER_KWH|FILE]\n"
    "                  [--energy-price PRICE_PER_KWH [--currency CODE]]\n"
    "\n"
    "  --host H           address to listen on (ZEUS_BSO_HOST, default 127.0.0.1)\n"
    "  --port P           TCP port, 0 for any free one (ZEUS_BSO_SERVER_PORT, default 8000)\n"
    "  --db URL           the database (ZEUS_BSO_DATABASE_URL, default sqlite:///zbso.db):\n"
    "                     sqlite:///path (sqlite:////absolute/path),\n"
    "                     postgresql://user:password@host:port/db (also postgres://,\n"
    "                     postgresql+asyncpg://), mysql://user:password@host:port/db\n"
    "                     (MySQL or MariaDB; also mariadb://, mysql+asyncmy://, ...)\n"
    "  --log-level L      NOTSET|DEBUG|INFO|WARN|ERROR|CRITICAL (ZEUS_BSO_LOG_LEVEL)\n"
    "  --log-file F       append the log to F instead of stderr; SIGHUP reopens it\n"
    "                     (ZEUS_BSO_LOG_FILE)\n"
    "  --trial-timeout S  fail Dispatched trials silent for S seconds, 0 never\n"
    "                     (ZEUS_BSO_TRIAL_TIMEOUT, default 86400)\n"
    "  --idle-timeout S   close connections idle for S whole seconds, 0 never\n"
    "                     (ZEUS_BSO_IDLE_TIMEOUT, default 60)\n"
    "  --header-timeout S close connections whose request head is not complete S seconds\n"
    "                     after its first byte, 0 never (ZEUS_BSO_HEADER_TIMEOUT, default 10)\n"
    "  --body-timeout S   answer 408 and close when a request body is not complete S seconds\n"
    "                     after its head, 0 never (ZEUS_BSO_BODY_TIMEOUT, default 30)\n"
    "  --drain-timeout S  at SIGTERM/SIGINT, give in-flight requests S seconds to be\n"
    "                     answered (ZEUS_BSO_DRAIN_TIMEOUT, default 10)\n"
    "  --max-connections-per-ip N\n"
    "                     connections one client address may hold, 0 no limit\n"
    "                     (ZEUS_BSO_MAX_CONNECTIONS_PER_IP, default 256)\n"
    "  --echo-sql         log every SQL statement (ZEUS_BSO_ECHO_SQL)\n"
    "  --migrate          upgrade an older database schema instead of refusing it\n"
    "  --metrics-per-job  add series per job (labelled job_id) to GET /metrics\n"
    "                     (ZEUS_BSO_METRICS_PER_JOB)\n"
    "  --policy zeus|smart\n"
    "                     batch size policy of jobs whose spec names none (ZBSO_POLICY,\n"
    "                     default zeus); a job's own \"policy\" wins\n"
    "  --carbon-intensity G_PER_KWH|FILE\n"
    "                     grid intensity in g CO2e per kWh, or a CSV of timestamp,g_per_kwh\n"
    "                     applied to each trial's interval (ZBSO_CARBON_INTENSITY; unset: no\n"
    "                     CO2e figure anywhere)\n"
    "  --energy-price P   price of a kWh (ZBSO_ENERGY_PRICE; unset: no price anywhere)\n"
    "  --currency CODE    ISO 4217 code of that price, e.g. EUR (ZBSO_CURRENCY)\n"
    "\n"
    "Also read: ZEUS_BSO_DB_USER, ZEUS_BSO_DB_PASSWORD, ZEUS_BSO_API_TOKEN, and a .env file\n"
    "in the working directory or a parent. Flags win over the environment, which wins over\n"
    ".env. Prints \"zbso serve listening on http://HOST:PORT\" once it accepts connections.\n";

enum { OPT_HOST = CLI_OPT_OWN, OPT_PORT, OPT_LOG_LEVEL, OPT_TRIAL_TIMEOUT, OPT_ECHO_SQL,
       OPT_MIGRATE, OPT_LOG_FILE, OPT_IDLE_TIMEOUT, OPT_HEADER_TIMEOUT, OPT_DRAIN_TIMEOUT,
       OPT_MAX_PER_IP, OPT_METRICS_PER_JOB, OPT_POLICY, OPT_BODY_TIMEOUT,
       OPT_CARBON_INTENSITY, OPT_ENERGY_PRICE, OPT_CURRENCY };

static const struct option serve_options[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"db", required_argument, NULL, CLI_OPT_DB},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"trial-timeout", required_argument, NULL, OPT_TRIAL_TIMEOUT},
    {"echo-sql", no_argument, NULL, OPT_ECHO_SQL},
    {"migrate", no_argument, NULL, OPT_MIGRATE},
    {"log-file", required_argument, NULL, OPT_LOG_FILE},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT},
    {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
    {"max-connections-per-ip", required_argument, NULL, OPT_MAX_PER_IP},
    {"metrics-per-job", no_argument, NULL, OPT_METRICS_PER_JOB},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"carbon-intensity", required_argument, NULL, OPT_CARBON_INTENSITY},
    {"energy-price", required_argument, NULL, OPT_ENERGY_PRICE},
    {"currency", required_argument, NULL, OPT_CURRENCY},
    {"help", no_argument, NULL, CLI_OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Applies one of serve's own flags on top of cfg (cli_flags.apply); ctx is the bool that
 * --migrate sets. */
static int apply_flag(int opt, const char *arg, cli_config *cfg, void *ctx, zbso_err *err)
{
    switch (opt) {
    case OPT_HOST:
        if (arg[0] == '\0')
            return err_set(err, ZBSO_EINVAL, "--host is empty; give an address to listen on");
        return config_copy("--host", arg, cfg->host, sizeof cfg->host, err);
    case OPT_PORT:
        return config_parse_port("--port", arg, &cfg->port, err);
    case OPT_LOG_LEVEL: {
        int level = log_level_parse(arg);
        if (level < 0)
            return err_set(err, ZBSO_EINVAL, "--log-level '%s' is not one of NOTSET, DEBUG, "
                           "INFO, WARN, ERROR, CRITICAL", arg);
        cfg->log_level = level;
        return 0;
    }
    case OPT_TRIAL_TIMEOUT:
        return config_parse_timeout("--trial-timeout", arg, &cfg->trial_timeout_s, err);
    case OPT_ECHO_SQL:
        cfg->echo_sql = true;
        return 0;
    case OPT_MIGRATE:
        *(bool *)ctx = true;
        return 0;
    case OPT_LOG_FILE:
        return config_copy("--log-file", arg, cfg->log_file, sizeof cfg->log_file, err);
    case OPT_IDLE_TIMEOUT:
        return config_parse_count("--idle-timeout", arg, CFG_TIMEOUT_MAX_S,
                                  &cfg->idle_timeout_s, err);
    case OPT_HEADER_TIMEOUT:
        return config_parse_timeout("--header-timeout", arg, &cfg->header_timeout_s, err);
    case OPT_BODY_TIMEOUT:
        return config_parse_timeout("--body-timeout", arg, &cfg->body_timeout_s, err);
    case OPT_DRAIN_TIMEOUT:
        return config_parse_timeout("--drain-timeout", arg, &cfg->drain_timeout_s, err);
    case OPT_METRICS_PER_JOB:
        cfg->metrics_per_job = true;
        return 0;
    case OPT_POLICY:
        return config_parse_policy("--policy", arg, &cfg->policy, err);
    case OPT_CARBON_INTENSITY:
        return config_copy("--carbon-intensity", arg, cfg->carbon_intensity,
                           sizeof cfg->carbon_intensity, err);
    case OPT_ENERGY_PRICE:
        return config_copy("--energy-price", arg, cfg->energy_price, sizeof cfg->energy_price,
                           err);
    case OPT_CURRENCY:
        return config_copy("--currency", arg, cfg->currency, sizeof cfg->currency, err);
    default: /* OPT_MAX_PER_IP, the only other flag of serve_options */
        return config_parse_count("--max-connections-per-ip", arg, CFG_COUNT_MAX,
                                  &cfg->max_connections_per_ip, err);
    }
}

static const cli_flags serve_flags = {serve_options, apply_flag, NULL};

/* Formats host for a URL: IPv6 literals go in brackets. */
static void url_host(const char *host, char *out, size_t cap)
{
    if (strchr(host, ':') && host[0] != '[')
        snprintf(out, cap, "[%s]", host);
    else
        snprintf(out, cap, "%s", host);
}

/* Whether host is a loopback address, reachable from this machine only. */
static bool loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

/* Raises the soft limit on open files to the hard one (the soft limit is often 1024 while
 * systemd and most hosts allow far more), so the connection limit derived from it is what
 * the operator allowed. Failure leaves the soft limit as it was and says so. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t soft = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        log_warn("cannot raise the open file limit from %llu to %llu: %s",
                 (unsigned long long)soft, (unsigned long long)rl.rlim_max, strerror(errno));
}

/* The scoped tokens (issue 26) come with the API token, which alone may delete jobs and
 * write power profiles; and each class has its own token, so a request's class is never
 * ambiguous. */
static int check_tokens(const cli_config *cfg, zbso_err *err)
{
    const char *names[3] = {"ZEUS_BSO_API_TOKEN", "ZBSO_READ_TOKEN", "ZBSO_CLIENT_TOKEN"};
    const char *v[3] = {cfg->api_token, cfg->read_token, cfg->client_token};
    if (!v[0][0] && (v[1][0] || v[2][0]))
        return err_set(err, ZBSO_EINVAL, "%s is set but ZEUS_BSO_API_TOKEN is not: the scoped "
                       "tokens need the API token, which alone may delete jobs and write "
                       "power profiles", v[1][0] ? names[1] : names[2]);
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (v[i][0] && strcmp(v[i], v[j]) == 0)
                return err_set(err, ZBSO_EINVAL, "%s and %s are the same token; give each "
                               "class its own", names[i], names[j]);
    return 0;
}

int cli_serve(int argc, char **argv)
{
    cli_config cfg;
    zbso_err err;
    bool migrate = false;
    cli_footprint footprint = {0};
    store *st = NULL;
    http_server *srv = NULL;
    int status = CLI_EXIT_FAIL;
    err_clear(&err);

    int rc = cli_start("serve", serve_usage, argc, argv, &cfg, &serve_flags, &migrate);
    if (rc >= 0) {
        status = rc;
        goto out;
    }
    bool weak_token = false;
    if (config_check_token(&cfg, &weak_token, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if (check_tokens(&cfg, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        goto out;
    }

    if (cli_footprint_load(&cfg, &footprint, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        status = CLI_EXIT_USAGE;
        goto out;
    }

    /* Every thread the store and libmicrohttpd start inherits this mask, so the signals
     * reach only sigwait below and shutdown happens in one place, in order. SIGHUP is
     * taken too: it must never kill the server. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    /* A client that hangs up mid-response must not kill the server. */
    signal(SIGPIPE, SIG_IGN);
    if (cfg.log_file[0] && log_open_file(cfg.log_file, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        goto out;
    }
    raise_fd_limit();

    store_options sopt = cli_store_options(&cfg);
    sopt.create_if_empty = true;
    sopt.migrate = migrate;
    if (store_open(cfg.database_url, &sopt, &st, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        goto out;
    }

    /* The service's counts for /metrics; lives until the server has stopped. */
    static svc_stats stats;
    svc_env env = svc_env_system(cfg.trial_timeout_s);
    env.stats = &stats;
    env.default_policy = cfg.policy;
    env.footprint = cli_footprint_get(&footprint);
    http_config hcfg = {
        .host = cfg.host,
        .port = cfg.port,
        .api_token = cfg.api_token[0] ? cfg.api_token : NULL,
        .read_token = cfg.read_token[0] ? cfg.read_token : NULL,
        .client_token = cfg.client_token[0] ? cfg.client_token : NULL,
        .per_ip_limit = cfg.max_connections_per_ip,
        .idle_timeout_s = cfg.idle_timeout_s,
        .header_timeout_s = cfg.header_timeout_s,
        .body_timeout_s = cfg.body_timeout_s,
        .version = ZBSO_VERSION,
        .metrics_per_job = cfg.metrics_per_job,
    };
    if (http_server_start(&hcfg, st, &env, &srv, &err) < 0) {
        fprintf(stderr, "zbso serve: %s\n", err.msg);
        goto out;
    }
    char host[CFG_HOST_MAX + 3];
    url_host(cfg.host, host, sizeof host);
    printf("zbso serve listening on http://%s:%d\n", host, http_server_port(srv));
    fflush(stdout);
    char shown_url[CFG_URL_MAX + 8];
    config_redact_url(cfg.database_url, shown_url, sizeof shown_url);
    log_info("serving %s%s%s on http://%s:%d (trial timeout %.0f s, default policy %s)",
             shown_url, cfg.dotenv_path[0] ? ", config from " : "", cfg.dotenv_path, host,
             http_server_port(srv), cfg.trial_timeout_s, spec_policy_name(cfg.policy));
    if (hcfg.api_token)
        log_info("authentication is on: every request but GET /healthz and the dashboard's "
                 "files needs the token of %s (Bearer, or HTTP Basic's password)",
                 cfg.api_token_from);
    else
        log_msg(loopback(cfg.host) ? ZLOG_INFO : ZLOG_WARN, "authentication is off "
                "(ZEUS_BSO_API_TOKEN is not set): whoever reaches http://%s:%d can read, "
                "change and delete every job", host, http_server_port(srv));
    if (weak_token)
        log_warn("%s is %zu bytes long: use at least %d random bytes (e.g. `openssl rand "
                 "-hex 32`)", cfg.api_token_from, strlen(cfg.api_token), CFG_TOKEN_MIN_BYTES);
    if (hcfg.read_token || hcfg.client_token)
        log_info("scoped tokens: %s%s%s", hcfg.read_token ? "read (ZBSO_READ_TOKEN)" : "",
                 hcfg.read_token && hcfg.client_token ? ", " : "",
                 hcfg.client_token ? "client (ZBSO_CLIENT_TOKEN)" : "");

    int sig = 0;
    for (;;) {
        if (sigwait(&signals, &sig) != 0) {
            fprintf(stderr, "zbso serve: sigwait failed\n");
            goto out;
        }
        if (sig != SIGHUP)
            break;
        if ((rc = log_reopen(&err)) < 0)
            log_error("SIGHUP: %s", err.msg);
        else if (rc == 0)
            log_info("SIGHUP: reopened the log file %s", cfg.log_file);
        else
            log_info("SIGHUP ignored: the log goes to stderr, there is no file to reopen");
    }
    log_info("received %s: finishing in-flight requests (drain timeout %g s)",
             sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg.drain_timeout_s);
    status = CLI_EXIT_OK;
out:
    if (http_server_stop(srv, cfg.drain_timeout_s) > 0) {
        /* Requests still run in the store: closing it under them is not safe, and their
         * answers are lost anyway. The store's commits are durable as they are. */
        fflush(NULL);
        _exit(CLI_EXIT_FAIL);
    }
    store_close(st);
    cli_footprint_free(&footprint);
    return status;
}
