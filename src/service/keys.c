/* keys.c: the idempotency keys of GET /jobs/batch_size in this process's memory
 * (service.h): a hash table of (job, key) -> trial with a bounded number of entries, the
 * oldest first out. Per process by design; the store-backed table is docs/DESIGN.md's
 * next step. No I/O; the clock is the caller's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/service.h"

typedef struct key_entry {
    struct key_entry *chain;       /* next in the bucket */
    struct key_entry *older, *newer;
    uint64_t hash;
    int64_t trial_number;
    double start_time;
    double expires_at;
    size_t job_len;
    char text[];                   /* job_id NUL key NUL */
} key_entry;

typedef struct mem_keys {
    svc_keys base;
    pthread_mutex_t lock;
    key_entry **buckets;
    size_t n_buckets;              /* a power of two */
    size_t n, capacity;
    key_entry *oldest, *newest;
} mem_keys;

/* FNV-1a over job_id, a NUL and key. */
static uint64_t hash_of(const char *job_id, const char *key)
{
    uint64_t h = 14695981039346656037ULL;
    for (const char *p = job_id;; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        if (!*p)
            break;
    }
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/* The entry of (job_id, key), or NULL. Caller holds the lock. */
static key_entry *lookup(mem_keys *m, uint64_t h, const char *job_id, const char *key)
{
    for (key_entry *e = m->buckets[h & (m->n_buckets - 1)]; e; e = e->chain)
        if (e->hash == h && strcmp(e->text, job_id) == 0 &&
            strcmp(e->text + e->job_len + 1, key) == 0)
            return e;
    return NULL;
}

/* Takes e out of the age list. */
static void unlink_age(mem_keys *m, key_entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        m->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        m->newest = e->older;
    e->older = e->newer = NULL;
}

/* Appends e to the age list as the newest. */
static void link_newest(mem_keys *m, key_entry *e)
{
    e->older = m->newest;
    e->newer = NULL;
    if (m->newest)
        m->newest->newer = e;
    else
        m->oldest = e;
    m->newest = e;
}

/* Removes and frees e. Caller holds the lock. */
static void drop(mem_keys *m, key_entry *e)
{
    key_entry **p = &m->buckets[e->hash & (m->n_buckets - 1)];
    while (*p != e)
        p = &(*p)->chain;
    *p = e->chain;
    unlink_age(m, e);
    m->n--;
    free(e);
}

static int mem_find(svc_keys *k, store_txn *t, const char *job_id, const char *key,
                    double now, int64_t *trial_number, double *start_time, zbso_err *err)
{
    mem_keys *m = (mem_keys *)k;
    int rc = ZBSO_ENOTFOUND;
    pthread_mutex_lock(&m->lock);
    key_entry *e = lookup(m, hash_of(job_id, key), job_id, key);
    if (e && e->expires_at > now) {
        *trial_number = e->trial_number;
        *start_time = e->start_time;
        rc = 0;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int mem_remember(svc_keys *k, store_txn *t, const char *job_id, const char *key,
                        int64_t trial_number, double start_time, double expires_at,
                        zbso_err *err)
{
    mem_keys *m = (mem_keys *)k;
    uint64_t h = hash_of(job_id, key);
    size_t job_len = strlen(job_id), key_len = strlen(key);
    int rc = 0;
    pthread_mutex_lock(&m->lock);
    key_entry *e = lookup(m, h, job_id, key);
    if (e) {
        unlink_age(m, e);
    } else {
        /* Expired entries first (start_time is now: the unit is dispatching the trial);
         * then, when full, the oldest live one. Every entry lives one lease, so the
         * oldest expires first. */
        while (m->oldest && (m->oldest->expires_at <= start_time || m->n >= m->capacity))
            drop(m, m->oldest);
        if (!(e = malloc(sizeof *e + job_len + key_len + 2))) {
            rc = err_set(err, ZBSO_ENOMEM, "out of memory remembering an idempotency key of "
                         "job %s", job_id);
            goto out;
        }
        e->hash = h;
        e->job_len = job_len;
        memcpy(e->text, job_id, job_len + 1);
        memcpy(e->text + job_len + 1, key, key_len + 1);
        e->chain = m->buckets[h & (m->n_buckets - 1)];
        m->buckets[h & (m->n_buckets - 1)] = e;
        m->n++;
    }
    e->trial_number = trial_number;
    e->start_time = start_time;
    e->expires_at = expires_at;
    link_newest(m, e);
out:
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static void mem_free(svc_keys *k)
{
    mem_keys *m = (mem_keys *)k;
    while (m->oldest)
        drop(m, m->oldest);
    pthread_mutex_destroy(&m->lock);
    free(m->buckets);
    free(m);
}

static const svc_keys_ops mem_ops = {mem_find, mem_remember, mem_free};

svc_keys *svc_keys_memory_new(size_t capacity)
{
    mem_keys *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &mem_ops;
    m->capacity = capacity ? capacity : 1;
    m->n_buckets = 16;
    while (m->n_buckets < m->capacity && m->n_buckets < ((size_t)1 << 30))
        m->n_buckets *= 2;
    if (!(m->buckets = calloc(m->n_buckets, sizeof *m->buckets)) ||
        pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m->buckets);
        free(m);
        return NULL;
    }
    return &m->base;
}

void svc_keys_free(svc_keys *k)
{
    if (k)
        k->ops->free(k);
}
