/* rounds.c: the pruning rounds of a job as they happened (SPEC §5, "Exploration"), replayed
 * from its explorations with the walk opt_prune_next decides by (pruneInt.h). Pure. */
#include <string.h>

#include "core/optimizer.h"
#include "core/pruneInt.h"

int opt_prune_rounds(const zbso_job *job, const zbso_trial *explorations, size_t n,
                     opt_prune_round *out, size_t cap, size_t *n_out, zbso_err *err)
{
    prune_walk w;
    int rc;

    *n_out = 0;
    if ((rc = prune_walk_start(job, explorations, n, &w, err)) < 0)
        return rc;
    for (; w.round < job->spec.num_pruning_rounds && *n_out < cap; prune_walk_next(&w)) {
        opt_prune_round *r = &out[(*n_out)++];
        prune_walk_round(job, explorations, n, &w);
        memset(r, 0, sizeof *r);
        r->round = w.round;
        r->default_batch_size = w.default_bs;
        memcpy(r->explored, w.explored, w.n_explored * sizeof w.explored[0]);
        r->n_explored = w.n_explored;
        memcpy(r->converged, w.conv, w.n_conv * sizeof w.conv[0]);
        r->n_converged = w.n_conv;
        r->complete = w.stop == PRUNE_STOP_END;
        /* Pruned: in a complete round, its list less the converged; in the round pruning
         * is in, only what is already decided, the explored less the converged (the rest
         * may still converge). conv is a subsequence of both lists (all in walk order):
         * one merge pass. */
        const int64_t *list = r->complete ? w.order : w.explored;
        size_t n_list = r->complete ? w.n_order : w.n_explored;
        for (size_t i = 0, k = 0; i < n_list; i++) {
            if (k < w.n_conv && w.conv[k] == list[i])
                k++;
            else
                r->pruned[r->n_pruned++] = list[i];
        }
        /* An incomplete round is the one pruning is in; a round with nothing converged
         * ends pruning (opt_prune_next answers ZBSO_ENOCONV from then on). */
        if (!r->complete || w.n_conv == 0)
            break;
    }
    return 0;
}
