/* bso_embedded.c: `zbso run`'s optimizer in this process: the service layer over a
 * database of its own, so no server is needed and decisions are made by the same code as
 * the server's. Reads no configuration: src/cli hands it the store options and policy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/runInt.h"
#include "service/service.h"


typedef struct embedded {
    run_bso base;
    store *st;
    svc_env env;
} embedded;

static int emb_register(run_bso *b, const zbso_job_spec *spec, zbso_job_spec *out,
                        zbso_err *err)
{
    embedded *e = (embedded *)b;
    bool created;
    return svc_register_job(e->st, &e->env, spec, out, &created, NULL, err);
}

static int emb_next(run_bso *b, const char *job_id, zbso_trial_id *out, zbso_err *err)
{
    embedded *e = (embedded *)b;
    return svc_next_batch_size(e->st, &e->env, job_id, NULL, out, NULL, err);
}

static int emb_report(run_bso *b, const zbso_training_result *r, zbso_report_response *out,
                      zbso_err *err)
{
    embedded *e = (embedded *)b;
    return svc_report(e->st, &e->env, r, out, NULL, err);
}

static int emb_end(run_bso *b, const zbso_trial_id *t, zbso_err *err)
{
    embedded *e = (embedded *)b;
    return svc_end_trial(e->st, &e->env, t, NULL, err);
}

static int emb_profile_get(run_bso *b, const char *job_id, int64_t bs, zbso_power_profile *out,
                           zbso_err *err)
{
    embedded *e = (embedded *)b;
    return svc_profile_get(e->st, &e->env, job_id, bs, out, NULL, err);
}

static int emb_profile_put(run_bso *b, const char *job_id, const zbso_power_profile *p,
                           zbso_err *err)
{
    embedded *e = (embedded *)b;
    zbso_power_profile *out = malloc(sizeof *out);
    int rc = out ? svc_profile_put(e->st, &e->env, job_id, p, out, NULL, err)
                 : err_set(err, ZBSO_ENOMEM, "out of memory storing a power profile");
    free(out);
    return rc;
}

static void emb_close(run_bso *b)
{
    embedded *e = (embedded *)b;
    store_close(e->st);
    free(e);
}

static const run_bso_ops embedded_ops = {emb_register, emb_next, emb_report, emb_end,
                                         emb_profile_get, emb_profile_put, emb_close};

int run_bso_embedded_open(const run_options *o, run_bso **out, zbso_err *err)
{
    char url[RUN_PATH_MAX + 16];
    const char *db = o->db;
    store_options opt = o->store;
    embedded *e = NULL;
    int rc;

    *out = NULL;
    opt.create_if_empty = true;
    /* A URL as every other command takes it; a bare path is a SQLite file. */
    int n = strstr(db, "://") != NULL ? snprintf(url, sizeof url, "%s", db)
                                      : snprintf(url, sizeof url, "sqlite:///%s", db);
    if (n < 0 || (size_t)n >= sizeof url)
        return err_set(err, ZBSO_EINVAL, "--db '%.80s...' is too long", db);
    if ((e = calloc(1, sizeof *e)) == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening %s", url);
    if ((rc = store_open(url, &opt, &e->st, err)) < 0) {
        free(e);
        return rc;
    }
    e->base.ops = &embedded_ops;
    e->base.server_url = NULL;
    e->env = svc_env_system(o->trial_timeout_s);
    e->env.default_policy = o->default_policy;
    *out = &e->base;
    return 0;
}

void run_bso_close(run_bso *b)
{
    if (b != NULL)
        b->ops->close(b);
}
