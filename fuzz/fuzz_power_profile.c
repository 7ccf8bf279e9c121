/* fuzz_power_profile.c: PUT /power_profiles bodies (codec_power_profile_parse) and what a
 * client reads back (codec_power_profile_read), both on every input. What parses satisfies
 * SPEC §6.1's value rules (checked again here, independently of opt_pl_measurements_check)
 * and round-trips bit for bit through the encoder; a refused body gives a 422 body that
 * reads back. What a client then does with the profile (opt_plo_init_done under every
 * selector, as libzbso and `zbso run` adopt a stored profile) sets only a limit the
 * profile holds and the GPUs take. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/powerlimit.h"
#include "fuzz.h"

/* The largest limit SPEC §6.1 lets a profile hold, W (written out, not OPT_PL_MAX_W). */
#define SANE_MAX_W 100000

static void check_profile(const char *job_id, const zbso_power_profile *p)
{
    size_t n = strnlen(job_id, ZBSO_ID_MAX + 1);
    FUZZ_CHECK(n >= 1 && n <= ZBSO_ID_MAX);
    FUZZ_CHECK(p->batch_size > 0 && p->trial_number >= 0 && p->profile_steps >= 0);
    FUZZ_CHECK(p->n >= 1 && p->n <= ZBSO_MAX_POWER_LIMITS);
    for (size_t i = 0; i < p->n; i++) {
        FUZZ_CHECK(p->m[i].power_limit_w > 0 && p->m[i].power_limit_w <= SANE_MAX_W);
        FUZZ_CHECK(isfinite(p->m[i].time_s) && p->m[i].time_s > 0);
        FUZZ_CHECK(isfinite(p->m[i].energy_j) && p->m[i].energy_j >= 0);
        for (size_t k = 0; k < i; k++)
            FUZZ_CHECK(p->m[k].power_limit_w != p->m[i].power_limit_w);
    }
}

static void round_trip(const char *job_id, const zbso_power_profile *p)
{
    zbso_power_profile *again = malloc(sizeof *again);
    char id[ZBSO_ID_MAX + 1];
    zbso_err err;
    size_t len = 0;
    char *text = codec_power_profile_dump(job_id, p, &len);
    FUZZ_CHECK(again != NULL && text != NULL && strlen(text) == len);
    char *copy = fuzz_copy(text, len);
    err_clear(&err);
    FUZZ_CHECK(codec_power_profile_parse(copy, len, id, again, &err) == 0);
    FUZZ_CHECK(strcmp(id, job_id) == 0);
    FUZZ_CHECK(again->batch_size == p->batch_size && again->trial_number == p->trial_number &&
               again->observer == p->observer && again->profile_steps == p->profile_steps &&
               again->n == p->n);
    /* Seventeen significant digits read back bit for bit. */
    FUZZ_CHECK(memcmp(again->m, p->m, p->n * sizeof p->m[0]) == 0);
    free(copy);
    free(text);
    free(again);
}

/* Adopts p as a client would on GPUs of constraints [100, 700] W (and 1 mW..100 kW): the
 * limit set is within the constraints and one the profile lists or one of the limits the
 * GPUs would profile, or the profile is refused. */
static void adopt(const zbso_power_profile *p)
{
    static const opt_plo_config cfgs[] = {
        {1, 10, 40, 25, 100000, 700000},
        {0, 0, 1, 100, 1, SANE_MAX_W * INT64_C(1000)},
    };
    const opt_pl_selector sels[] = {
        {OPT_PL_ZEUS_COST, 0.5, 1, 0}, {OPT_PL_ZEUS_COST, 1.0, 8, 0},
        {OPT_PL_ENERGY, 0, 0, 0}, {OPT_PL_TIME, 0, 0, 0}, {OPT_PL_MAX_SLOWDOWN, 0, 0, 1.1},
    };
    opt_plo *sm = malloc(sizeof *sm);
    FUZZ_CHECK(sm != NULL);
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++)
        for (size_t s = 0; s < sizeof sels / sizeof sels[0]; s++) {
            opt_plo_action a;
            zbso_err err;
            if (opt_plo_init_done(sm, &cfgs[c], &sels[s], p->m, p->n, &a, &err) < 0) {
                FUZZ_CHECK(err.msg[0] != '\0');
                continue;
            }
            FUZZ_CHECK(a.done && a.set_limit_mw == sm->optimal_mw);
            FUZZ_CHECK(a.set_limit_mw >= cfgs[c].min_limit_mw &&
                       a.set_limit_mw <= cfgs[c].max_limit_mw);
            bool listed = false;
            for (size_t i = 0; i < p->n; i++)
                listed = listed || a.set_limit_mw / 1000 == p->m[i].power_limit_w;
            for (size_t i = 0; i < sm->n_limits; i++)
                listed = listed || a.set_limit_mw == sm->limits_mw[i];
            FUZZ_CHECK(listed);
        }
    free(sm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zbso_power_profile *p = malloc(sizeof *p), *r = malloc(sizeof *r);
    char id[ZBSO_ID_MAX + 1];
    zbso_err err, err_r;
    err_clear(&err);
    err_clear(&err_r);
    char *buf = fuzz_copy(data, size);
    FUZZ_CHECK(p != NULL && r != NULL);
    int rc = codec_power_profile_parse(buf, size, id, p, &err);
    int rc_r = codec_power_profile_read(buf, size, r, &err_r);
    free(buf);
    if (rc == 0) {
        check_profile(id, p);
        round_trip(id, p);
        adopt(p);
    } else {
        FUZZ_CHECK(rc == ZBSO_EINVAL && err.code == rc);
        FUZZ_CHECK(strcmp(err.where, "body") == 0);
        fuzz_check_error_body(&err, true);
    }
    /* read takes what parse takes, plus created_at (a finite number when given). */
    if (rc_r == 0) {
        FUZZ_CHECK(rc == 0 && r->n == p->n && isfinite(r->created_at));
        FUZZ_CHECK(memcmp(r->m, p->m, p->n * sizeof p->m[0]) == 0);
    }
    free(p);
    free(r);
    return 0;
}
