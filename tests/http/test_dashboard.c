/* test_dashboard.c: the dashboard's files (src/dashboard) against the route table: each is
 * answered by a public GET route, with its media type, no-cache and nosniff headers (the
 * page also a Content-Security-Policy allowing only this origin), and the page names
 * exactly the script and style sheet the server has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#include <cmocka.h>

#include "dashboard/dashboard.h"
#include "http/httpInt.h"

/* The value of header name among a's headers, or NULL. */
static const char *header(const dash_asset *a, const char *name)
{
    for (const char *const *h = a->headers; h && h[0]; h += 2)
        if (strcmp(h[0], name) == 0)
            return h[1];
    return NULL;
}

static void test_every_file_has_a_public_get_route(void **state)
{
    (void)state;
    assert_int_equal(dash_asset_count(), 7);   /* the dashboard's 3, the API docs' 4 */
    for (size_t i = 0; i < dash_asset_count(); i++) {
        dash_asset a;
        assert_int_equal(dash_asset_at(i, &a), 0);
        const char *allow = NULL;
        const http_route *r = http_route_find("GET", a.path, &allow);
        if (!r)
            fail_msg("no GET route for %s", a.path);
        assert_int_equal(r->scope, HTTP_SCOPE_PUBLIC);
        assert_false(r->has_body);
        assert_null(http_route_find("POST", a.path, &allow));
        assert_string_equal(allow, "GET");
        assert_string_equal(http_path_pattern(a.path), a.path);
        assert_true(a.len > 100);
        assert_int_equal(strlen(a.body), a.len);
        assert_string_equal(header(&a, "Cache-Control"), "no-cache");
        assert_string_equal(header(&a, "X-Content-Type-Options"), "nosniff");
    }
    dash_asset a;
    assert_int_equal(dash_asset_at(dash_asset_count(), &a), -1);
    assert_int_equal(dash_asset_find("/index.html", &a), -1);
    assert_int_equal(dash_asset_find("/app.js/", &a), -1);
}

static void test_media_types_and_policy(void **state)
{
    (void)state;
    dash_asset page, js, css;
    assert_int_equal(dash_asset_find(DASH_PATH_INDEX, &page), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_JS, &js), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_CSS, &css), 0);
    assert_string_equal(page.content_type, "text/html; charset=utf-8");
    assert_string_equal(js.content_type, "text/javascript; charset=utf-8");
    assert_string_equal(css.content_type, "text/css; charset=utf-8");
    const char *csp = header(&page, "Content-Security-Policy");
    assert_non_null(csp);
    assert_non_null(strstr(csp, "default-src 'none'"));
    assert_non_null(strstr(csp, "script-src 'self';"));
    assert_non_null(strstr(csp, "connect-src 'self';"));
    assert_null(strstr(csp, "unsafe"));
    assert_null(header(&js, "Content-Security-Policy"));
    /* The page loads the two other files by their paths, and nothing else by URL. */
    assert_non_null(strstr(page.body, "<script src=\"" DASH_PATH_JS "\""));
    assert_non_null(strstr(page.body, "<link rel=\"stylesheet\" href=\"" DASH_PATH_CSS "\""));
    assert_null(strstr(page.body, "http://"));
    assert_null(strstr(page.body, "https://"));
    assert_null(strstr(js.body, "https://"));
    assert_null(strstr(css.body, "url("));
}

/* /docs: the dashboard's policy (no inline script or style, this origin only), and a page
 * that loads Swagger UI and its start-up script from this server by their paths. */
static void test_docs_page(void **state)
{
    (void)state;
    dash_asset page, index, js, bundle, css;
    assert_int_equal(dash_asset_find(DASH_PATH_DOCS, &page), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_INDEX, &index), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_DOCS_JS, &js), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_SWAGGER_JS, &bundle), 0);
    assert_int_equal(dash_asset_find(DASH_PATH_SWAGGER_CSS, &css), 0);
    assert_string_equal(page.content_type, "text/html; charset=utf-8");
    assert_string_equal(header(&page, "Content-Security-Policy"),
                        header(&index, "Content-Security-Policy"));
    assert_string_equal(bundle.content_type, "text/javascript; charset=utf-8");
    assert_string_equal(css.content_type, "text/css; charset=utf-8");
    assert_non_null(strstr(page.body, "<script src=\"" DASH_PATH_SWAGGER_JS "\""));
    assert_non_null(strstr(page.body, "<script src=\"" DASH_PATH_DOCS_JS "\""));
    assert_non_null(strstr(page.body, "<link rel=\"stylesheet\" href=\"" DASH_PATH_SWAGGER_CSS
                                      "\""));
    assert_null(strstr(page.body, "http://"));
    assert_null(strstr(page.body, "https://"));
    assert_null(strstr(page.body, "<script>"));
    assert_null(strstr(page.body, "style="));
    assert_non_null(strstr(js.body, "'/openapi.json'"));
    assert_true(bundle.len > 1000000);   /* the real bundle, not a stub */
    assert_non_null(strstr(bundle.body, "SwaggerUIBundle"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_has_a_public_get_route),
        cmocka_unit_test(test_media_types_and_policy),
        cmocka_unit_test(test_docs_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
