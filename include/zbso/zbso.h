/* zbso.h: the one public header of libzbso (error codes now; the client and monitor API
 * join it with the client issue). Plain C types only, so ctypes can bind it. */
#ifndef ZBSO_ZBSO_H
#define ZBSO_ZBSO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: 0 is success, failures are negative. Each has a fixed meaning that the
 * HTTP layer maps to one status (src/http/status.c) and zbso_strerror() names. */
enum zbso_error {
    ZBSO_OK = 0,
    ZBSO_EINVAL = -1,      /* invalid input: a value out of range, wrong type (HTTP 422) */
    ZBSO_ENOTFOUND = -2,   /* unknown job or trial (404) */
    ZBSO_ECONFLICT = -3,   /* conflicts with stored state (409) */
    ZBSO_ENOMEM = -4,      /* out of memory (500) */
    ZBSO_ESTORE = -5,      /* the database failed (500) */
    ZBSO_EUNAVAIL = -6,    /* the database is unreachable for now; retry (503) */
    ZBSO_EAUTH = -7,       /* missing or wrong bearer token (401) */
    ZBSO_ETOOBIG = -8,     /* request body over the limit (413) */
    ZBSO_ENOCONV = -9,     /* no batch size converged during pruning (500) */
    ZBSO_ESCHEMA = -10,    /* database schema older or newer than this binary */
    ZBSO_EMETHOD = -11,    /* method not allowed on this path (405) */
    ZBSO_EIO = -12,        /* operating system I/O error */
    ZBSO_EINTERNAL = -13,  /* a bug: an invariant did not hold (500) */
    ZBSO_ECONFIG = -14,    /* client: bad configuration (seed 000 ZeusBSOConfigError) */
    ZBSO_EORDER = -15,     /* client: calls out of order (ZeusBSOOperationOrderError) */
    ZBSO_EBADOP = -16,     /* client: operation not allowed (ZeusBSOBadOperationError) */
    ZBSO_ERUNTIME = -17,   /* client: server or network failure (ZeusBSORuntimError) */
    ZBSO_ETRAINFAIL = -18, /* client: training stopped without converging (ZeusBSOTrainFailError) */
};

/* Returns a static, human-readable name for an error code; never NULL. */
const char *zbso_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
