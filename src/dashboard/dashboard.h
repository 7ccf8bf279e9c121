/* dashboard.h: the read-only web dashboard's files (SPEC §5) and the API docs' (/docs),
 * compiled into the binary:
 * their paths, media types, headers and bytes. Pure data, no I/O. The files hold no job
 * data: every figure the page shows is fetched by the browser from the inspection API,
 * with the bearer token when the server has one, so serving them needs no token. */
#ifndef ZBSO_DASHBOARD_DASHBOARD_H
#define ZBSO_DASHBOARD_DASHBOARD_H

#include <stddef.h>

/* The paths the server answers with the dashboard (GET only). */
#define DASH_PATH_INDEX "/"
#define DASH_PATH_JS "/app.js"
#define DASH_PATH_CSS "/app.css"
/* The interactive API docs (Swagger UI on /openapi.json) and their files. */
#define DASH_PATH_DOCS "/docs"
#define DASH_PATH_DOCS_JS "/docs/docs.js"
#define DASH_PATH_SWAGGER_JS "/docs/swagger-ui-bundle.js"
#define DASH_PATH_SWAGGER_CSS "/docs/swagger-ui.css"

typedef struct dash_asset {
    const char *path;            /* one of DASH_PATH_* */
    const char *content_type;    /* the Content-Type, with its charset */
    const char *body;            /* len bytes, NUL-ended; static */
    size_t len;
    const char *const *headers;  /* name, value, name, value, ..., NULL: the headers every
                                    answer with this file carries (caching, CSP, nosniff) */
} dash_asset;

/* Fills *out (OUT) with the file served at path and returns 0, or returns -1 (out
 * unchanged) when path is not one of DASH_PATH_*. */
int dash_asset_find(const char *path, dash_asset *out);

/* Every file, for tests: their number, and the i-th into *out (OUT; -1 past the end). */
size_t dash_asset_count(void);
int dash_asset_at(size_t i, dash_asset *out);

#endif
