/* pruneInt.h: the walk of one pruning round (SPEC §3.1), private to the core. prune.c
 * decides the next step with it and rounds.c replays the rounds with it, so the two follow
 * one set of rules. Pure, like the rest of the core. */
#ifndef ZBSO_CORE_PRUNEINT_H
#define ZBSO_CORE_PRUNEINT_H

#include "core/optimizer.h"

typedef enum prune_stop {
    PRUNE_STOP_END = 0,        /* the walk ended: every batch size it reached has a result */
    PRUNE_STOP_UNEXPLORED = 1, /* at stop_bs, which has no exploration this round */
    PRUNE_STOP_DISPATCHED = 2, /* at stop_bs, whose exploration this round is Dispatched */
} prune_stop;

/* One round: its list and default, set by prune_walk_start or prune_walk_next; and what
 * prune_walk_round found. */
typedef struct prune_walk {
    int64_t round;                           /* 0, 1, ... */
    int64_t default_bs;                      /* the round's default */
    int64_t order[ZBSO_MAX_BATCH_SIZES];     /* the round's list in walk order: down from
                                              * the default (itself first), then up */
    size_t n_order;
    size_t n_down;                           /* order[0..n_down-1] is the way down */
    /* Filled by prune_walk_round: */
    int64_t explored[ZBSO_MAX_BATCH_SIZES];  /* reached, with a result, in walk order */
    size_t n_explored;
    int64_t conv[ZBSO_MAX_BATCH_SIZES];      /* of those, converged, in walk order */
    size_t n_conv;
    prune_stop stop;
    int64_t stop_bs;                         /* UNEXPLORED, DISPATCHED: where it stopped */
    double min_cost;                         /* the cheapest converged (INFINITY: none) */
    int64_t min_bs;                          /* its batch size (first on ties) */
} prune_walk;

/* Checks the explorations e[0..n-1] (Exploration trials that are not Failed, in
 * trial-number order) and the job's batch sizes, and sets *w to round 0 with the spec's
 * batch sizes and default. Returns 0; ZBSO_EINTERNAL (err says which) when a trial is
 * Failed or not an Exploration, or the job has more than ZBSO_MAX_BATCH_SIZES. */
int prune_walk_start(const zbso_job *job, const zbso_trial *e, size_t n, prune_walk *w,
                     zbso_err *err);

/* Walks round w->round over e[0..n-1] (the round-r exploration of a batch size is its
 * (r+1)-th in e): down from the default, stopping at the first non-converged one, then up
 * the same way; the whole walk stops at a batch size with no round-r exploration or a
 * Dispatched one. Fills the walk's results. Cannot fail. */
void prune_walk_round(const zbso_job *job, const zbso_trial *e, size_t n, prune_walk *w);

/* Sets *w to the next round: the converged batch sizes of this one (w->n_conv > 0), the
 * cheapest of them its default. */
void prune_walk_next(prune_walk *w);

#endif
