/* sqlite_engine.c: the engine of the default backend: one SQLite file in WAL mode, one
 * writer thread that runs every read-write unit of work and commits them in groups, a
 * pool of read-only connections for read units run in their callers' threads, and a
 * checkpointer thread that keeps WAL checkpoints off the writer; the statement cache and
 * the translation of SQLite codes, as pg_engine.c and mysql_engine.c hold their
 * libraries'. The SQL and the domain operations are sqlite_ops.c's. Together the two are
 * the only files that talk to libsqlite3; SQLite codes never leave them untranslated.
 *
 * Design notes.
 * - Durability: synchronous=FULL in WAL mode, so a COMMIT returns after the WAL is
 *   fsynced; sq_exec wakes its caller only after that COMMIT, so an answer never rests
 *   on a change that a crash could take back.
 * - Group commit: the writer takes up to SQ_GROUP_MAX queued units, runs them in one
 *   BEGIN IMMEDIATE ... COMMIT, each in its own SAVEPOINT so that a failing unit rolls
 *   back alone, and pays one fsync for the group. One writer also serializes every
 *   unit on a job, which is what job_get(for_update) promises.
 * - Reads: WAL readers see only committed (hence synced) frames, so read units run on
 *   pooled read-only connections in the caller's thread and never queue behind writes.
 * - Checkpoints: SQLite's autocheckpoint would run on the writer and stall the queue for
 *   an fsync of the database file; the WAL hook hands them to a checkpointer thread,
 *   and past SQ_WAL_MAX_PAGES the writer restarts the WAL itself to bound the file.
 * - Units never nest: a unit that calls exec or exec_read on its own store would wait
 *   on itself, so both refuse with ZBSO_EINTERNAL.
 * - Storage faults (a full disk, I/O errors, a read-only or locked file) fail the group
 *   with ZBSO_EUNAVAIL; SQLite rolls it back and the writer goes on with the next one.
 *   After every commit, before any caller is answered, the writer checks that the
 *   database file and its WAL are still the ones at the path (sqlite_file.c): a commit
 *   into a deleted or replaced file is never acknowledged, every later unit fails, and
 *   the writer copies the committed state back to disk. The checkpointer looks once a
 *   second while idle, so a deletion is noticed without writes too. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store/sqlite/sqliteInt.h"
#include "util/clock.h"
#include "util/log.h"

#define SQ_GROUP_MAX 256         /* units of work per group commit */
#define SQ_BUSY_TIMEOUT_MS 5000  /* waiting for another process's write lock */
#define SQ_READERS_MAX 16        /* read-only connections; more callers wait for one */
/* WAL pages after a commit that make a checkpoint due: SQLite's own autocheckpoint
 * default, which the checkpointer thread takes over from the writer. */
#define SQ_CKPT_PAGES 1000
/* WAL pages after a commit that make the writer checkpoint itself, with RESTART: the WAL
 * starts over only when a writer finds it wholly checkpointed and no reader in it, which
 * a busy server may never give the checkpointer, so this bounds the file (64 MiB). */
#define SQ_WAL_MAX_PAGES 16384
/* How many nice steps the writer thread runs above the rest of the process (see
 * writer_raise_priority). */
#define SQ_WRITER_NICE_BOOST 10
/* Seconds between checks, while idle, that the database files are still at their path. */
#define SQ_FILE_CHECK_S 1

/* A caller blocked in sq_exec; lives on the caller's stack until done is set. */
typedef struct sq_unit {
    store_work_fn fn;
    void *arg;
    zbso_err *err;
    int rc;
    bool done;
    pthread_cond_t cv;
    struct sq_unit *next;
    zbso_err own_err;            /* err when the caller passed NULL */
} sq_unit;

typedef struct sq_store {
    store base;
    sq_conn w;                   /* used only by the writer thread once it runs */
    pthread_t writer;
    bool writer_started;
    pthread_mutex_t mu;          /* guards head, tail, stopping, check_due, units' done */
    pthread_cond_t cv_work;
    sq_unit *head, *tail;
    bool stopping;
    bool check_due;              /* the writer is to check the files (file_check) */

    /* Storage faults (docs/DESIGN.md, "Storage faults"). */
    sq_file_id id;               /* the files as opened */
    atomic_bool gone;            /* set once: the files went away; every unit fails */
    char gone_msg[ZBSO_ERR_MSG_MAX]; /* why; written before gone is set */
    bool rescued;                /* writer only: the committed state is safe on disk */
    time_t rescue_at;            /* writer only: when to try the rescue again */
    atomic_bool write_failed;    /* the last write failed for a storage fault */

    /* Readers: opened on demand, at most SQ_READERS_MAX, kept until close. */
    pthread_mutex_t rmu;         /* guards the four fields below */
    pthread_cond_t rcv;          /* a reader came back to the pool */
    sq_conn *free_readers;
    int n_readers;               /* open or being opened */
    int n_free;
    bool echo_sql;

    /* The checkpointer: its own connection, woken by the writer's WAL hook. */
    sqlite3 *ckpt_db;
    pthread_t ckpt;
    bool ckpt_started;
    pthread_mutex_t cmu;         /* guards ckpt_due, ckpt_stop and ckpt_frames */
    pthread_cond_t ccv;
    bool ckpt_due, ckpt_stop;
    int ckpt_frames;             /* WAL frames the last checkpoint left checkpointed */

    char path[SQ_PATH_MAX];
} sq_store;

/* ---- statements and error translation ---- */

int sq_fault(sqlite3 *db, int rc, char *cause, size_t cap)
{
    int sys = db != NULL ? sqlite3_system_errno(db) : 0;
    const char *what;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        what = "the database is locked by another connection or process";
        break;
    case SQLITE_FULL:
        what = "the disk is full";
        break;
    case SQLITE_IOERR:
        switch (rc) {
        case SQLITE_IOERR_WRITE:
            what = "I/O error while writing";
            break;
        case SQLITE_IOERR_FSYNC:
        case SQLITE_IOERR_DIR_FSYNC:
            what = "I/O error while syncing to disk";
            break;
        case SQLITE_IOERR_READ:
        case SQLITE_IOERR_SHORT_READ:
            what = "I/O error while reading";
            break;
        default:
            what = "I/O error";
            break;
        }
        break;
    case SQLITE_READONLY:
        what = "the database cannot be written";
        break;
    case SQLITE_CANTOPEN:
        what = "a database file cannot be opened";
        break;
    default:
        cause[0] = '\0';
        return ZBSO_ESTORE;
    }
    if (sys != 0 && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
        snprintf(cause, cap, "%s: %s", what, strerror(sys));
    else
        snprintf(cause, cap, "%s", what);
    return ZBSO_EUNAVAIL;
}

int sq_fail(sq_conn *c, int rc, const char *what, const char *job_id, zbso_err *err)
{
    char cause[160];
    int code = sq_fault(c->db, rc, cause, sizeof cause);
    if (code == ZBSO_EUNAVAIL && job_id == NULL)
        return err_set(err, code, "sqlite: %s failed on %s: %s (%s, code %d)", what, c->path,
                       cause, sqlite3_errmsg(c->db), rc);
    if (code == ZBSO_EUNAVAIL)
        return err_set(err, code, "sqlite: %s for job \"%.300s\" failed on %s: %s (%s, code"
                       " %d)", what, job_id, c->path, cause, sqlite3_errmsg(c->db), rc);
    if (job_id == NULL)
        return err_set(err, code, "sqlite: %s failed on %s: %s (code %d)", what, c->path,
                       sqlite3_errmsg(c->db), rc);
    return err_set(err, code, "sqlite: %s for job \"%.300s\" failed: %s (code %d)", what,
                   job_id, sqlite3_errmsg(c->db), rc);
}

int sq_code(sq_conn *c)
{
    char cause[160];
    return sq_fault(c->db, sqlite3_extended_errcode(c->db), cause, sizeof cause);
}

sqlite3_stmt *sq_stmt(sq_conn *c, int id, zbso_err *err)
{
    if (c->stmts[id] == NULL) {
        int rc = sqlite3_prepare_v3(c->db, sq_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &c->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            char what[240];
            snprintf(what, sizeof what, "preparing \"%.200s\"", sq_stmt_sql[id]);
            sq_fail(c, rc, what, NULL, err);
            return NULL;
        }
    }
    return c->stmts[id];
}

int sq_run(sq_conn *c, int id, const char *what, const char *job_id, zbso_err *err)
{
    sqlite3_stmt *s = sq_stmt(c, id, err);
    if (s == NULL)
        return sq_code(c);
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sq_fail(c, rc, what, job_id, err);
    sqlite3_reset(s);
    return out;
}

/* The store whose read unit this thread is running, to refuse a nested unit. */
static _Thread_local const sq_store *read_unit;

/* Fails every unit of a group with the same database error. */
static void group_fail(sq_unit *g, int code, const char *why)
{
    for (sq_unit *u = g; u != NULL; u = u->next)
        u->rc = err_set(u->err, code, "%s", why);
}

/* Returns the message of a store whose files went away, into err; ZBSO_EUNAVAIL. */
static int gone_fail(const sq_store *st, zbso_err *err)
{
    return err_set(err, ZBSO_EUNAVAIL, "%s", st->gone_msg);
}

/* Marks st's files gone (once): from now on every unit fails with msg. The writer writes
 * the database back (file_rescue) once the callers of the group at hand are answered. */
static void file_gone(sq_store *st, const char *msg)
{
    if (atomic_load(&st->gone))
        return;
    snprintf(st->gone_msg, sizeof st->gone_msg, "%s", msg);
    atomic_store(&st->gone, true);
    log_error("%s", msg);
}

/* Writer thread: writes the committed state of a store whose files went away back to
 * disk, at most once a second until it succeeds. */
static void file_rescue(sq_store *st)
{
    char where[SQ_PATH_MAX + 64];
    zbso_err e;
    time_t now = time(NULL);
    if (!atomic_load(&st->gone) || st->rescued || now < st->rescue_at)
        return;
    st->rescue_at = now + 1;
    if (sq_file_rescue(st->w.db, &st->id, st->path, where, sizeof where, &e) < 0) {
        log_error("database %s: the committed state (every acknowledged change) could not be"
                  " written back yet: %s; it is still readable by this process, which tries"
                  " again", st->path, e.msg);
        return;
    }
    st->rescued = true;
    log_error("database %s: its committed state, every acknowledged change included, was"
              " written back to %s; restart zbso serve%s", st->path, where,
              strcmp(where, st->path) == 0 ? "" : " once that file is where it belongs");
}

/* Writer thread: checks that the files are still the ones opened, and if not, marks them
 * gone and rescues the database. */
static void file_check(sq_store *st)
{
    zbso_err e;
    if (!atomic_load(&st->gone) && sq_file_id_check(&st->id, st->path, &e) < 0)
        file_gone(st, e.msg);
    file_rescue(st);
}

/* True for the results after which no write can succeed until the storage recovers (not
 * a lock another process holds: that ends by itself). */
static bool is_storage_fault(int rc)
{
    int prim = rc & 0xff;
    return prim == SQLITE_FULL || prim == SQLITE_IOERR || prim == SQLITE_READONLY ||
           prim == SQLITE_CANTOPEN;
}

/* Runs a group of units in one transaction, each in its own savepoint, and commits once.
 * Sets every unit's rc (and err on failure). A failed transaction is rolled back whole,
 * and the connection is ready for the next group. After the commit, and before any
 * caller is answered, checks that the files written are still the database's: a commit
 * into a deleted or replaced file is not acknowledged (ZBSO_EUNAVAIL). */
static void run_group(sq_store *st, sq_unit *g)
{
    sq_conn *c = &st->w;
    sq_txn txn = {.base = {.ops = &sq_ops}, .c = c};
    zbso_err e;
    char why[ZBSO_ERR_MSG_MAX];
    if (atomic_load(&st->gone)) {
        gone_fail(st, &e);
        group_fail(g, e.code, e.msg);
        return;
    }
    int64_t changes = sqlite3_total_changes64(c->db);
    int rc = sq_run(c, S_BEGIN, "BEGIN IMMEDIATE", NULL, &e);
    if (rc < 0) {
        group_fail(g, rc, e.msg);
        return;
    }
    for (sq_unit *u = g; u != NULL; u = u->next) {
        rc = sq_run(c, S_SAVEPOINT, "SAVEPOINT", NULL, &e);
        if (rc < 0)
            goto broken;
        u->rc = u->fn(&txn.base, u->arg, u->err);
        if (sqlite3_get_autocommit(c->db)) {
            /* SQLite rolled the whole transaction back (I/O error, disk full): the
             * group's earlier work is gone too. */
            rc = sq_fail(c, sqlite3_extended_errcode(c->db), "a unit of the group (the"
                         " transaction was rolled back)", NULL, &e);
            goto broken;
        }
        if (u->rc < 0) {
            rc = sq_run(c, S_ROLLBACK_TO, "ROLLBACK TO", NULL, &e);
            if (rc < 0)
                goto broken;
        }
        rc = sq_run(c, S_RELEASE, "RELEASE", NULL, &e);
        if (rc < 0)
            goto broken;
    }
    rc = sq_run(c, S_COMMIT, "COMMIT", NULL, &e);
    if (rc == 0) {
        if (sq_file_id_check(&st->id, st->path, &e) < 0) {
            file_gone(st, e.msg);
            group_fail(g, ZBSO_EUNAVAIL, st->gone_msg);
        } else if (sqlite3_total_changes64(c->db) != changes) {
            atomic_store(&st->write_failed, false);
        }
        return;
    }
broken:
    snprintf(why, sizeof why, "%s", e.msg);
    if (is_storage_fault(sqlite3_extended_errcode(c->db)))
        atomic_store(&st->write_failed, true);
    if (!sqlite3_get_autocommit(c->db))
        sq_run(c, S_ROLLBACK, "ROLLBACK", NULL, &e);
    group_fail(g, rc, why);
}

/* Every caller of exec waits for a commit, and a commit waits for the writer thread, so on
 * a CPU kept busy by request threads the writer must not queue behind them: it asks for
 * SQ_WRITER_NICE_BOOST nice steps above the process (a larger share of the CPU, and to run
 * sooner when woken). Raising a priority needs CAP_SYS_NICE or RLIMIT_NICE; without them
 * the writer keeps the process's priority, which is only slower, and says so at DEBUG.
 * Linux applies setpriority(PRIO_PROCESS, tid) to that one thread. */
static void writer_raise_priority(const sq_store *st)
{
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, tid);
    if (errno != 0)
        return;
    int want = nice_now - SQ_WRITER_NICE_BOOST < -20 ? -20 : nice_now - SQ_WRITER_NICE_BOOST;
    if (want < nice_now && setpriority(PRIO_PROCESS, tid, want) != 0)
        log_debug("database %s: the writer thread stays at nice %d (%d needs CAP_SYS_NICE):"
                  " commits may wait behind request threads on a busy CPU", st->path,
                  nice_now, want);
}

/* The writer thread: takes up to SQ_GROUP_MAX queued units at a time, runs them as one
 * group, and wakes their callers. Leaves once stopping is set and the queue is empty. */
static void *writer_main(void *arg)
{
    sq_store *st = arg;
    writer_raise_priority(st);
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (st->head == NULL && !st->stopping && !st->check_due)
            pthread_cond_wait(&st->cv_work, &st->mu);
        if (st->check_due) {
            st->check_due = false;
            pthread_mutex_unlock(&st->mu);
            file_check(st);
            pthread_mutex_lock(&st->mu);
            continue;
        }
        if (st->head == NULL)
            break;
        sq_unit *g = st->head, *last = g;
        for (int n = 1; n < SQ_GROUP_MAX && last->next != NULL; n++)
            last = last->next;
        st->head = last->next;
        if (st->head == NULL)
            st->tail = NULL;
        last->next = NULL;
        pthread_mutex_unlock(&st->mu);
        run_group(st, g);
        pthread_mutex_lock(&st->mu);
        while (g != NULL) {
            /* Read next first: once done is set the unit's owner may return. */
            sq_unit *next = g->next;
            g->done = true;
            pthread_cond_signal(&g->cv);
            g = next;
        }
        if (atomic_load(&st->gone) && !st->rescued) {
            pthread_mutex_unlock(&st->mu);
            file_rescue(st);
            pthread_mutex_lock(&st->mu);
        }
    }
    pthread_mutex_unlock(&st->mu);
    /* A file deleted since the last commit: the close would checkpoint into it. */
    file_check(st);
    return NULL;
}

/* Queues fn for the writer and waits. Returns fn's code, ZBSO_ESTORE/EUNAVAIL when the
 * group's transaction failed (then nothing of fn's work is stored) or when the database
 * files went away (then fn's work may be stored, but is not acknowledged), or ZBSO_EINTERNAL
 * when called from inside a unit of work (it would wait on itself forever, or for a read
 * unit, hold a snapshot that the write cannot see through). */
static int sq_exec(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    sq_store *st = (sq_store *)base;
    if (pthread_equal(pthread_self(), st->writer) || read_unit == st)
        return err_set(err, ZBSO_EINTERNAL, "store_exec called inside a unit of work on %s",
                       st->path);
    if (atomic_load(&st->gone))
        return gone_fail(st, err);
    sq_unit u = {.fn = fn, .arg = arg, .rc = 0};
    u.err = err != NULL ? err : &u.own_err;
    pthread_cond_init(&u.cv, NULL);
    pthread_mutex_lock(&st->mu);
    if (st->tail != NULL)
        st->tail->next = &u;
    else
        st->head = &u;
    st->tail = &u;
    pthread_cond_signal(&st->cv_work);
    while (!u.done)
        pthread_cond_wait(&u.cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    pthread_cond_destroy(&u.cv);
    return u.rc;
}

/* Finalizes c's statements and closes its connection (a NULL db is a no-op). */
static void conn_close(sq_conn *c)
{
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize(c->stmts[i]);
        c->stmts[i] = NULL;
    }
    if (sqlite3_close(c->db) != SQLITE_OK)
        log_error("closing database %s: %s", c->path, sqlite3_errmsg(c->db));
    c->db = NULL;
}

static int trace_cb(unsigned type, void *ctx, void *p, void *x);

/* Opens a read-only connection to st's file. Returns 0 with *out (the caller's, freed
 * with conn_close and free) or ZBSO_ENOMEM / sq_fault's code (ZBSO_EUNAVAIL for a file
 * that cannot be opened) with err naming the path. */
static int reader_open(sq_store *st, sq_conn **out, zbso_err *err)
{
    int rc = 0;
    sq_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening a reader of %s", st->path);
        goto out;
    }
    c->path = st->path;
    /* NOMUTEX: a reader belongs to one caller at a time, handed over under st->rmu. */
    rc = sqlite3_open_v2(st->path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        /* A file that cannot be opened (deleted meanwhile: read_failed then says so) is a
         * storage fault like the writer's, 503 and not 500. */
        char cause[160];
        int code = c->db != NULL ? sq_fault(c->db, rc, cause, sizeof cause) : ZBSO_ENOMEM;
        rc = err_set(err, code, "cannot open a reader of database file %s: %s",
                     st->path, c->db != NULL ? sqlite3_errmsg(c->db) : "out of memory");
        goto out;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, SQ_BUSY_TIMEOUT_MS);
    if (st->echo_sql)
        sqlite3_trace_v2(c->db, SQLITE_TRACE_STMT, trace_cb, NULL);
    *out = c;
    c = NULL;
out:
    if (c != NULL) {
        conn_close(c);
        free(c);
    }
    return rc;
}

/* Takes a reader from the pool, opening one while fewer than SQ_READERS_MAX exist, else
 * waiting for one to come back. Returns 0 with *out, or reader_open's failure. */
static int reader_get(sq_store *st, sq_conn **out, zbso_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&st->rmu);
    while (st->free_readers == NULL && st->n_readers == SQ_READERS_MAX)
        pthread_cond_wait(&st->rcv, &st->rmu);
    sq_conn *c = st->free_readers;
    if (c != NULL) {
        st->free_readers = c->next_free;
        st->n_free--;
        pthread_mutex_unlock(&st->rmu);
        *out = c;
        goto out;
    }
    /* Count the new reader now, so that opening it needs no lock held. */
    st->n_readers++;
    pthread_mutex_unlock(&st->rmu);
    rc = reader_open(st, out, err);
    if (rc < 0) {
        pthread_mutex_lock(&st->rmu);
        st->n_readers--;
        pthread_cond_signal(&st->rcv);
        pthread_mutex_unlock(&st->rmu);
    }
out:
    return rc;
}

/* Gives c back to the pool; a broken reader (still inside a transaction it could not
 * end) is closed instead, so the next caller opens a fresh one. */
static void reader_put(sq_store *st, sq_conn *c, bool broken)
{
    if (broken) {
        conn_close(c);
        free(c);
    }
    pthread_mutex_lock(&st->rmu);
    if (broken) {
        st->n_readers--;
    } else {
        c->next_free = st->free_readers;
        st->free_readers = c;
        st->n_free++;
    }
    pthread_cond_signal(&st->rcv);
    pthread_mutex_unlock(&st->rmu);
}

/* Returns rc, the result of a read unit. A storage fault met by a reader may come from
 * files that went away (a reader opened after the WAL was deleted meets an I/O error):
 * then err says so instead, and the writer is told to check. */
static int read_failed(sq_store *st, int rc, zbso_err *err)
{
    zbso_err e;
    if (rc != ZBSO_EUNAVAIL || sq_file_id_check(&st->id, st->path, &e) == 0)
        return rc;
    pthread_mutex_lock(&st->mu);
    st->check_due = true;
    pthread_cond_signal(&st->cv_work);
    pthread_mutex_unlock(&st->mu);
    return err_set(err, ZBSO_EUNAVAIL, "%s", e.msg);
}

/* Runs fn on a pooled reader inside BEGIN ... ROLLBACK: one snapshot, taken at the first
 * read, of what the writer has committed, and WAL readers see only committed frames,
 * which synchronous=FULL has synced before the writer's callers are answered. Returns
 * fn's code, a database error, or ZBSO_EINTERNAL inside a unit of work of st. */
static int sq_exec_read(store *base, store_work_fn fn, void *arg, zbso_err *err)
{
    sq_store *st = (sq_store *)base;
    sq_conn *c = NULL;
    int rc;
    if (pthread_equal(pthread_self(), st->writer) || read_unit == st)
        return err_set(err, ZBSO_EINTERNAL,
                       "store_exec_read called inside a unit of work on %s", st->path);
    if (atomic_load(&st->gone))
        return gone_fail(st, err);
    if ((rc = reader_get(st, &c, err)) < 0)
        return read_failed(st, rc, err);
    sq_txn txn = {.base = {.ops = &sq_ops, .read_only = true}, .c = c};
    rc = sq_run(c, S_BEGIN_READ, "BEGIN", NULL, err);
    if (rc == 0) {
        read_unit = st;
        rc = fn(&txn.base, arg, err);
        read_unit = NULL;
    }
    /* A read unit keeps nothing: ending it only releases the snapshot. */
    if (!sqlite3_get_autocommit(c->db))
        sq_run(c, S_ROLLBACK, "ROLLBACK", NULL, NULL);
    reader_put(st, c, !sqlite3_get_autocommit(c->db));
    return read_failed(st, rc, err);
}

/* Checkpointer thread, every SQ_FILE_CHECK_S while idle: when the database files are no
 * longer at their path, tells the writer, so that a deletion is noticed (and the
 * database rescued) even when no unit comes. */
static void watch_files(sq_store *st)
{
    zbso_err e;
    if (atomic_load(&st->gone) || sq_file_id_check(&st->id, st->path, &e) == 0)
        return;
    pthread_mutex_lock(&st->mu);
    st->check_due = true;
    pthread_cond_signal(&st->cv_work);
    pthread_mutex_unlock(&st->mu);
}

/* The checkpointer thread: runs a PASSIVE checkpoint each time the WAL hook says one is
 * due, and watches the files in between. PASSIVE never takes the write lock, so the
 * writer keeps committing while the database file is written and synced here. Leaves
 * once ckpt_stop is set; the last connection's close checkpoints what is left. */
static void *ckpt_main(void *arg)
{
    sq_store *st = arg;
    pthread_mutex_lock(&st->cmu);
    for (;;) {
        struct timespec until = clk_deadline(CLOCK_REALTIME, SQ_FILE_CHECK_S);
        while (!st->ckpt_due && !st->ckpt_stop &&
               pthread_cond_timedwait(&st->ccv, &st->cmu, &until) != ETIMEDOUT) {
        }
        if (st->ckpt_stop)
            break;
        if (!st->ckpt_due) {
            pthread_mutex_unlock(&st->cmu);
            watch_files(st);
            pthread_mutex_lock(&st->cmu);
            continue;
        }
        st->ckpt_due = false;
        pthread_mutex_unlock(&st->cmu);
        int n_done = 0;
        int rc = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                           NULL, &n_done);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
            log_warn("database %s: checkpoint failed: %s (code %d)", st->path,
                     sqlite3_errmsg(st->ckpt_db), rc);
        pthread_mutex_lock(&st->cmu);
        st->ckpt_frames = n_done > 0 ? n_done : 0;
    }
    pthread_mutex_unlock(&st->cmu);
    return NULL;
}

/* The writer connection's WAL hook, called after each commit (its locks released) with
 * the WAL's size in pages: once SQ_CKPT_PAGES of them are past the last checkpoint,
 * wakes the checkpointer instead of checkpointing here; past SQ_WAL_MAX_PAGES,
 * checkpoints here and waits for the readers to leave the WAL so that the next commit
 * starts it over. */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int n_pages)
{
    sq_store *st = ctx;
    if (n_pages >= SQ_WAL_MAX_PAGES) {
        int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
            log_warn("database %s: checkpoint failed: %s (code %d)", st->path,
                     sqlite3_errmsg(db), rc);
        return SQLITE_OK;
    }
    pthread_mutex_lock(&st->cmu);
    /* Fewer pages than the last checkpoint reached: the WAL has started over since. */
    int backlog = n_pages >= st->ckpt_frames ? n_pages - st->ckpt_frames : n_pages;
    if (backlog >= SQ_CKPT_PAGES && !st->ckpt_due) {
        st->ckpt_due = true;
        pthread_cond_signal(&st->ccv);
    }
    pthread_mutex_unlock(&st->cmu);
    return SQLITE_OK;
}

/* Opens the checkpointer's connection, hands the writer's automatic checkpoints over to
 * it and starts its thread. Returns 0 or ZBSO_ESTORE with err naming the path. */
static int ckpt_start(sq_store *st, zbso_err *err)
{
    int rc = sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, ZBSO_ESTORE, "cannot open the checkpointer's connection to %s: %s",
                       st->path, st->ckpt_db != NULL ? sqlite3_errmsg(st->ckpt_db)
                                                     : "out of memory");
    sqlite3_extended_result_codes(st->ckpt_db, 1);
    /* A connection finds the WAL only when it first reads; until then SQLite 3.40 takes
     * a checkpoint request for a no-op and reports success. */
    rc = sqlite3_exec(st->ckpt_db, "PRAGMA user_version", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, ZBSO_ESTORE, "cannot read %s from the checkpointer's connection:"
                       " %s", st->path, sqlite3_errmsg(st->ckpt_db));
    if (pthread_create(&st->ckpt, NULL, ckpt_main, st) != 0)
        return err_set(err, ZBSO_ESTORE, "cannot start the checkpointer thread for %s",
                       st->path);
    st->ckpt_started = true;
    /* The hook replaces SQLite's autocheckpoint, which would run on the writer thread
     * and stall every queued unit for the checkpoint's fsync of the database file. */
    sqlite3_wal_autocheckpoint(st->w.db, 0);
    sqlite3_wal_hook(st->w.db, wal_hook, st);
    return 0;
}

/* The schema runs as one writer unit (sqlite_ops.c has the SQL). */
static int sq_schema_run(store *base, store_schema_plan_fn plan, void *ctx, zbso_err *err)
{
    sq_schema_arg a = {plan, ctx};
    return sq_exec(base, sq_schema_unit, &a, err);
}

/* Logs each statement as it starts, with bound values (ZEUS_BSO_ECHO_SQL). */
static int trace_cb(unsigned type, void *ctx, void *p, void *x)
{
    char *sql = sqlite3_expanded_sql(p);
    log_info("sql: %s", sql != NULL ? sql : (const char *)x);
    sqlite3_free(sql);
    return 0;
}

/* Sets the connection up: WAL, synchronous=FULL, foreign keys, and reads once, which
 * opens (creates) the -wal file. Returns 0, or sq_fault's code with err naming the path
 * and the cause: a file that is not a database fails here, and so does a database that
 * SQLite could only open read-only. */
static int prepare_db(sq_conn *c, zbso_err *err)
{
    char *msg = NULL, cause[160];
    int rc = sqlite3_exec(c->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
                          " PRAGMA foreign_keys = ON; PRAGMA user_version;", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int code = sq_fault(c->db, rc, cause, sizeof cause);
        rc = err_set(err, code, "cannot use database file %s: %s%s%s", c->path,
                     msg != NULL ? msg : sqlite3_errmsg(c->db), cause[0] ? "; " : "", cause);
    } else if (sqlite3_db_readonly(c->db, "main") == 1) {
        rc = err_set(err, ZBSO_ESTORE, "cannot write database file %s: SQLite could open it"
                     " read-only only; zbso needs to write it", c->path);
    }
    sqlite3_free(msg);
    return rc;
}

static void sq_close(store *base);

/* Opens sqlite:///path (relative) or sqlite:////path (absolute), also spelt
 * sqlite+aiosqlite://, creating an empty file where none is, and starts the writer and
 * the checkpointer; store.c then checks the schema. Returns 0 with *out set, or
 * ZBSO_EINVAL (no path), ZBSO_ESTORE (cannot open or write the file or its directory,
 * not a database), ZBSO_EUNAVAIL (locked by another process, a storage fault). */
static int sq_open(const char *url, const store_options *opt, store **out, zbso_err *err)
{
    int rc = 0;
    sq_store *st = NULL;
    const char *sep = strstr(url, ":///");
    const char *path = sep != NULL ? sep + 4 : "";
    *out = NULL;
    if (path[0] == '\0' || strlen(path) >= sizeof st->path) {
        rc = err_set(err, ZBSO_EINVAL, "database URL \"%.200s\" has no usable file path"
                     " (write sqlite:///relative/path or sqlite:////absolute/path)", url);
        goto out;
    }
    st = calloc(1, sizeof *st);
    if (st == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening %s", path);
        goto out;
    }
    st->base.backend = &store_sqlite_backend;
    st->base.shown = st->path;
    st->id.db_fd = st->id.wal_fd = -1;
    snprintf(st->path, sizeof st->path, "%s", path);
    st->w.path = st->path;
    st->echo_sql = opt->echo_sql;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv_work, NULL);
    pthread_mutex_init(&st->rmu, NULL);
    pthread_cond_init(&st->rcv, NULL);
    pthread_mutex_init(&st->cmu, NULL);
    pthread_cond_init(&st->ccv, NULL);
    /* SQLite would quietly open a file it cannot write read-only, and fail later. */
    if ((rc = sq_file_check_writable(path, err)) < 0)
        goto out;
    /* NOMUTEX: after this function only the writer thread touches the connection. */
    rc = sqlite3_open_v2(path, &st->w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                         SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int sys = st->w.db != NULL ? sqlite3_system_errno(st->w.db) : 0;
        rc = err_set(err, ZBSO_ESTORE, "cannot open database file %s: %s%s%s", path,
                     st->w.db != NULL ? sqlite3_errmsg(st->w.db) : "out of memory",
                     sys != 0 ? ": " : "", sys != 0 ? strerror(sys) : "");
        goto out;
    }
    sqlite3_extended_result_codes(st->w.db, 1);
    sqlite3_busy_timeout(st->w.db, SQ_BUSY_TIMEOUT_MS);
    if (opt->echo_sql)
        sqlite3_trace_v2(st->w.db, SQLITE_TRACE_STMT, trace_cb, NULL);
    rc = prepare_db(&st->w, err);
    if (rc < 0)
        goto out;
    if ((rc = sq_file_id_open(&st->id, path, err)) < 0)
        goto out;
    if ((rc = ckpt_start(st, err)) < 0)
        goto out;
    if (pthread_create(&st->writer, NULL, writer_main, st) != 0) {
        rc = err_set(err, ZBSO_ESTORE, "cannot start the writer thread for %s", path);
        goto out;
    }
    st->writer_started = true;
    *out = &st->base;
    st = NULL;
out:
    if (st != NULL)
        sq_close(&st->base);
    return rc;
}

/* Makes closing db leave the files at path-wal and path-shm alone (PERSIST_WAL). */
static void keep_wal_names(sqlite3 *db)
{
    int on = 1;
    if (db != NULL)
        sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
}

/* Lets queued units and running read units finish, stops the writer and the
 * checkpointer, and closes every connection, the writer's last: closing the last
 * connection checkpoints the whole WAL into the database file and removes it. */
static void sq_close(store *base)
{
    sq_store *st = (sq_store *)base;
    if (st == NULL)
        return;
    if (st->writer_started) {
        pthread_mutex_lock(&st->mu);
        st->stopping = true;
        pthread_cond_signal(&st->cv_work);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->writer, NULL);
    }
    if (st->ckpt_started) {
        pthread_mutex_lock(&st->cmu);
        st->ckpt_stop = true;
        pthread_cond_signal(&st->ccv);
        pthread_mutex_unlock(&st->cmu);
        pthread_join(st->ckpt, NULL);
    }
    pthread_mutex_lock(&st->rmu);
    while (st->n_free < st->n_readers)
        pthread_cond_wait(&st->rcv, &st->rmu);
    pthread_mutex_unlock(&st->rmu);
    /* The last connection to close deletes path-wal and path-shm by name: once the files
     * went away, those names may be another database's. */
    bool keep_names = atomic_load(&st->gone);
    while (st->free_readers != NULL) {
        sq_conn *c = st->free_readers;
        st->free_readers = c->next_free;
        if (keep_names)
            keep_wal_names(c->db);
        conn_close(c);
        free(c);
    }
    if (keep_names) {
        keep_wal_names(st->ckpt_db);
        keep_wal_names(st->w.db);
    }
    if (sqlite3_close(st->ckpt_db) != SQLITE_OK)
        log_error("closing database %s: %s", st->path, sqlite3_errmsg(st->ckpt_db));
    conn_close(&st->w);
    sq_file_id_close(&st->id);
    pthread_cond_destroy(&st->ccv);
    pthread_mutex_destroy(&st->cmu);
    pthread_cond_destroy(&st->rcv);
    pthread_mutex_destroy(&st->rmu);
    pthread_cond_destroy(&st->cv_work);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* Cheap while all is well (no write): ZBSO_EUNAVAIL once the files went away, or when
 * they are found gone now (a probe unit then lets the writer rescue the database); after
 * a write failed for a storage fault, commits a probe write and answers by its result
 * (the first success ends that state). */
static int sq_health(store *base, zbso_err *err)
{
    sq_store *st = (sq_store *)base;
    zbso_err e;
    int rc;
    if (atomic_load(&st->gone))
        return gone_fail(st, err);
    if (sq_file_id_check(&st->id, st->path, &e) < 0 || atomic_load(&st->write_failed)) {
        rc = sq_exec(base, sq_write_probe_unit, NULL, err);
        if (rc == 0)
            atomic_store(&st->write_failed, false);
        return rc;
    }
    return 0;
}

const store_backend store_sqlite_backend = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .exec = sq_exec,
    .latest_schema_version = SQ_LATEST,
    .schema_steps = sq_schema_steps,
    .schema_run = sq_schema_run,
    .exec_read = sq_exec_read,
    .health = sq_health,
};
