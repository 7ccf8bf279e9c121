/* dashboard.c: the table of the dashboard's and the API docs' files (dashboard.h). The
 * bytes come from index.html, app.js, app.css, docs.html, docs.js and
 * vendor/swagger-ui-dist/ beside this file, compiled in by src/http/embed.cmake.
 * Nothing here reads a file or the store. */
#include <string.h>

#include "dashboard/dashboard.h"

extern const char dash_index_html[];
extern const size_t dash_index_html_len;
extern const char dash_app_js[];
extern const size_t dash_app_js_len;
extern const char dash_app_css[];
extern const size_t dash_app_css_len;
extern const char dash_docs_html[];
extern const size_t dash_docs_html_len;
extern const char dash_docs_js[];
extern const size_t dash_docs_js_len;
extern const char dash_swagger_ui_bundle_js[];
extern const size_t dash_swagger_ui_bundle_js_len;
extern const char dash_swagger_ui_css[];
extern const size_t dash_swagger_ui_css_len;

/* no-cache: the browser asks again on every load (the files are small, and an upgraded
 * binary's files are used at once). The page may load scripts, styles and API answers from
 * this server only: no inline script, no other origin, not framed by another site. */
static const char *const HTML_HEADERS[] = {
    "Cache-Control", "no-cache",
    "X-Content-Type-Options", "nosniff",
    "Referrer-Policy", "no-referrer",
    "X-Frame-Options", "DENY",
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    NULL,
};

static const char *const ASSET_HEADERS[] = {
    "Cache-Control", "no-cache",
    "X-Content-Type-Options", "nosniff",
    NULL,
};

/* The generated lengths are objects, not constant expressions: the table points at them. */
static const struct {
    const char *path;
    const char *content_type;
    const char *body;
    const size_t *len;
    const char *const *headers;
} FILES[] = {
    {DASH_PATH_INDEX, "text/html; charset=utf-8", dash_index_html, &dash_index_html_len,
     HTML_HEADERS},
    {DASH_PATH_JS, "text/javascript; charset=utf-8", dash_app_js, &dash_app_js_len,
     ASSET_HEADERS},
    {DASH_PATH_CSS, "text/css; charset=utf-8", dash_app_css, &dash_app_css_len,
     ASSET_HEADERS},
    /* The API docs: the page has the dashboard's policy too (Swagger UI needs nothing
     * more: it sets styles through the DOM, which style-src does not govern). */
    {DASH_PATH_DOCS, "text/html; charset=utf-8", dash_docs_html, &dash_docs_html_len,
     HTML_HEADERS},
    {DASH_PATH_DOCS_JS, "text/javascript; charset=utf-8", dash_docs_js, &dash_docs_js_len,
     ASSET_HEADERS},
    {DASH_PATH_SWAGGER_JS, "text/javascript; charset=utf-8", dash_swagger_ui_bundle_js,
     &dash_swagger_ui_bundle_js_len, ASSET_HEADERS},
    {DASH_PATH_SWAGGER_CSS, "text/css; charset=utf-8", dash_swagger_ui_css,
     &dash_swagger_ui_css_len, ASSET_HEADERS},
};

size_t dash_asset_count(void)
{
    return sizeof FILES / sizeof FILES[0];
}

int dash_asset_at(size_t i, dash_asset *out)
{
    if (i >= dash_asset_count())
        return -1;
    *out = (dash_asset){FILES[i].path, FILES[i].content_type, FILES[i].body, *FILES[i].len,
                        FILES[i].headers};
    return 0;
}

int dash_asset_find(const char *path, dash_asset *out)
{
    for (size_t i = 0; i < dash_asset_count(); i++)
        if (strcmp(FILES[i].path, path) == 0)
            return dash_asset_at(i, out);
    return -1;
}
