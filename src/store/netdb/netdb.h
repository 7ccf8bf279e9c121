/* netdb.h: the engine of the databases behind a socket (PostgreSQL, MySQL/MariaDB), for
 * their drivers only: the connection pool, the unit-of-work runner with its reruns, the
 * replacement of stale connections, failure bookkeeping and statistics, written once in
 * netdb.c. A driver is a table of small functions (netdb_driver) holding its client
 * library's calls and its SQL, nothing of the pool. Callers use store.h; nothing outside
 * src/store includes this (docs/internals/STORE.md). */
#ifndef ZBSO_STORE_NETDB_H
#define ZBSO_STORE_NETDB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/storeInt.h"

#define NETDB_DRIVER_VERSION 1
#define NETDB_SHOWN_MAX 256   /* bytes of the masked URL kept for messages */
#define NETDB_POOL_MAX 16     /* connections per store; more callers wait for one */
#define NETDB_ATTEMPTS 3      /* runs of a unit that meets a retryable conflict */

typedef struct netdb netdb;
typedef struct netdb_driver netdb_driver;

/* The engine's part of a pooled connection: a driver's connection struct starts with it
 * (struct pg_conn { netdb_conn base; PGconn *db; ... }). */
typedef struct netdb_conn {
    struct netdb_conn *next_free;
    /* The COMMIT or ROLLBACK that ended the last unit is sent, its result not read yet:
     * nobody waits on the end of a read unit or of a failed one. */
    bool end_pending;
} netdb_conn;

/* A store: a driver's store struct starts with it (driver->store_size bytes in all,
 * zeroed by netdb_open). */
struct netdb {
    store base;
    const netdb_driver *drv;
    char shown[NETDB_SHOWN_MAX]; /* the URL with its password masked, for messages */
    bool echo_sql;               /* log every statement at INFO (ZEUS_BSO_ECHO_SQL) */

    pthread_mutex_t mu;          /* guards the four fields below */
    pthread_cond_t cv;           /* a connection came back, or a slot opened */
    netdb_conn *free_conns;
    int n_open;                  /* open or being opened */
    int n_free;
};

/* One unit of work in progress: its connection and what its statements met. Drivers'
 * statement runners read and set these flags; the runner acts on them. */
typedef struct netdb_txn {
    store_txn base;
    netdb *st;
    netdb_conn *c;
    bool aborted;                /* a statement failed: the unit cannot commit, and its
                                  * later statements get `first` again */
    bool broken;                 /* the connection is lost */
    bool retry;                  /* running the unit again may succeed */
    bool begun;                  /* the transaction has started (or its BEGIN is sent) */
    bool stale;                  /* the connection was found lost by the first statement,
                                  * before anything of the unit ran on the server */
    bool schema_locked;          /* holds a session-level schema lock (MySQL's GET_LOCK)
                                  * that the driver's end functions release */
    zbso_err first;              /* the first failure, for a unit that carries on */
    /* The last id that job_get found missing: an insert of it that meets a row means
     * another transaction committed the job meanwhile, and a rerun will see it. */
    char missing_job[ZBSO_ID_MAX + 1];
} netdb_txn;

/* What a driver makes of a failed statement (its classify step). */
typedef struct netdb_fault {
    int code;             /* the store code (ZBSO_EUNAVAIL, ZBSO_ECONFLICT, ...) */
    const char *cause;    /* for faults a retry may outlive, the words a message gives
                           * them ("a lock or statement timeout"); else NULL */
    bool broken;          /* the connection is gone */
    bool retry;           /* a rerun of the unit may not meet it (deadlock, serialization) */
    bool statement_only;  /* the server rolled back the statement alone (MySQL's
                           * duplicate key): the unit may go on */
} netdb_fault;

/* What schema_unit is to do: store.c's plan (store.h, schema_run). */
typedef struct netdb_schema_arg {
    store_schema_plan_fn plan;
    void *ctx;
} netdb_schema_arg;

/* A driver: its SQL and client-library calls, reached only through this table. Every
 * function is called with no engine lock held; a connection is used by one thread at a
 * time. */
struct netdb_driver {
    int version;                     /* NETDB_DRIVER_VERSION */
    const char *name;                /* "postgresql": the prefix of its messages */
    const store_backend *backend;    /* the store.h backend it serves */
    size_t store_size;               /* bytes of its store struct (netdb first) */
    const store_txn_ops *ops;        /* the domain operations on a netdb_txn */
    /* Parses url (opt's db_user and db_password fill what it lacks) into the driver's
     * part of st and writes st->shown. Returns 0 or ZBSO_EINVAL naming the masked URL. */
    int (*init)(netdb *st, const char *url, const store_options *opt, zbso_err *err);
    /* Opens a connection (a struct starting with netdb_conn, zeroed there). Returns 0
     * with *out, or ZBSO_EUNAVAIL with err naming st->shown and the library's reason. */
    int (*connect)(netdb *st, netdb_conn **out, zbso_err *err);
    /* Closes c (reading a pending end first when the library needs it); c may be NULL. */
    void (*disconnect)(netdb_conn *c);
    /* Runs once on a new store's first connection: reads the server's durability
     * settings and warns or adjusts. Returns 0 or ZBSO_EUNAVAIL. */
    int (*check)(netdb *st, netdb_conn *c, zbso_err *err);
    /* Reads the result of the end sent by end(); false when the connection turned out
     * lost or is still inside a transaction. */
    bool (*settle)(netdb_conn *c);
    /* Whether c may go back to the pool: connected, and either its end is pending or it
     * is outside any transaction. */
    bool (*reusable)(netdb_conn *c);
    /* Commits t's read-write transaction and waits for it (the answer rests on it).
     * Returns 0, or the failure recorded with netdb_txn_fail. */
    int (*commit)(netdb_txn *t, zbso_err *err);
    /* Ends t's transaction otherwise (a read unit's COMMIT, a failed unit's ROLLBACK),
     * without waiting where it can: sets t->c->end_pending, or t->broken when the end
     * could not be sent. */
    void (*end)(netdb_txn *t, bool commit);
    /* Units of work: the schema (arg: netdb_schema_arg) and the write probe (/healthz,
     * store_health). */
    store_work_fn schema_unit;
    store_work_fn write_probe_unit;
};

/* Opens a store of drv at url: drv->init, then one connection for drv->check. Returns
 * 0 with *out, or init's, connect's or check's failure (nothing left open). */
int netdb_open(const netdb_driver *drv, const char *url, const store_options *opt,
               store **out, zbso_err *err);

/* store_backend functions of every netdb store: a driver's backend table points at
 * them. close waits for every connection to come back, then closes them all. */
void netdb_close(store *st);
int netdb_exec(store *st, store_work_fn fn, void *arg, zbso_err *err);
int netdb_exec_read(store *st, store_work_fn fn, void *arg, zbso_err *err);
int netdb_schema_run(store *st, store_schema_plan_fn plan, void *ctx, zbso_err *err);
int netdb_health(store *st, zbso_err *err);

/* The store.h backend table of a netdb driver: the schema's members are the driver's
 * (name, its open function, which calls netdb_open with the driver, the newest schema
 * version, the steps, the schema lock statement), every other member netdb.c's. */
#define NETDB_BACKEND(name_, open_, latest_, steps_, lock_sql_)                            \
    {                                                                                     \
        .name = (name_), .open = (open_), .close = netdb_close, .exec = netdb_exec,       \
        .latest_schema_version = (latest_), .schema_steps = (steps_),                     \
        .schema_lock_sql = (lock_sql_), .schema_run = netdb_schema_run,                   \
        .exec_read = netdb_exec_read, .health = netdb_health,                             \
    }

/* Records a failed statement of t: the first failure that is not statement_only marks t
 * aborted and is kept in t->first; f->broken marks t broken (and the code becomes
 * ZBSO_EUNAVAIL), f->retry marks t for a rerun. The message is "<name>: <what> failed on
 * <shown>: <cause>: <msg> (<detail>)", or "... for job "<id>" failed: ..." when job_id
 * is given and the code is not ZBSO_EINVAL (a value the database refused may be
 * unprintable). msg is made one line. err (may be NULL) gets this failure. Returns its
 * code. */
int netdb_txn_fail(netdb_txn *t, const netdb_fault *f, const char *msg, const char *detail,
                   const char *what, const char *job_id, zbso_err *err);

/* Returns t's first failure again (into err when not NULL), for a unit that carries on
 * after it. */
int netdb_failed_before(netdb_txn *t, zbso_err *err);

/* m as one line into out (cap >= 1): CR and LF become spaces, trailing spaces go;
 * NULL or "" gives "unknown error". */
void netdb_one_line(const char *m, char *out, size_t cap);

#endif
