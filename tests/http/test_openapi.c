/* test_openapi.c: GET /openapi.json's document (src/http/openapi.json, compiled in) lists
 * exactly the route table: every (method, path) of one is in the other, and each path's
 * patterns are those http_path_pattern matches. tests/integration/test_inspect.py checks
 * the same against a running server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "http/httpInt.h"

static json_t *load_doc(void)
{
    json_error_t e;
    json_t *doc = json_loadb(http_openapi_json, http_openapi_json_len, 0, &e);
    if (!doc)
        fail_msg("openapi.json does not parse: line %d: %s", e.line, e.text);
    return doc;
}

static void test_document_is_openapi_31(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    assert_non_null(json_object_get(doc, "paths"));
    assert_int_equal(strlen(http_openapi_json), http_openapi_json_len);
    json_decref(doc);
}

static void test_every_route_is_documented(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    json_t *paths = json_object_get(doc, "paths");
    for (size_t i = 0; i < http_route_count(); i++) {
        const http_route *r = http_route_at(i);
        char m[16];
        size_t k;
        for (k = 0; r->method[k] && k < sizeof m - 1; k++)
            m[k] = (char)(r->method[k] - 'A' + 'a');
        m[k] = '\0';
        json_t *item = json_object_get(paths, r->path);
        if (!item || !json_object_get(item, m))
            fail_msg("route %s %s is not in openapi.json", r->method, r->path);
    }
    json_decref(doc);
}

static void test_every_documented_route_exists(void **state)
{
    (void)state;
    json_t *doc = load_doc();
    const char *path;
    json_t *item;
    size_t operations = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op) {
            char m[16];
            size_t k;
            for (k = 0; method[k] && k < sizeof m - 1; k++)
                m[k] = (char)(method[k] - 'a' + 'A');
            m[k] = '\0';
            bool found = false;
            for (size_t i = 0; i < http_route_count() && !found; i++)
                found = strcmp(http_route_at(i)->path, path) == 0 &&
                        strcmp(http_route_at(i)->method, m) == 0;
            if (!found)
                fail_msg("openapi.json lists %s %s, which no route serves", m, path);
            operations++;
        }
    }
    assert_int_equal(operations, http_route_count());
    json_decref(doc);
}

static void test_patterns(void **state)
{
    (void)state;
    assert_string_equal(http_path_pattern("/jobs"), "/jobs");
    assert_string_equal(http_path_pattern("/jobs/batch_size"), "/jobs/batch_size");
    assert_string_equal(http_path_pattern("/jobs/a"), "/jobs/{job_id}");
    assert_string_equal(http_path_pattern("/jobs/a/b"), "/jobs/{job_id}");
    assert_string_equal(http_path_pattern("/jobs/a/trials"), "/jobs/{job_id}/trials");
    assert_string_equal(http_path_pattern("/jobs/a/trials/7"),
                        "/jobs/{job_id}/trials/{trial_number}");
    assert_string_equal(http_path_pattern("/jobs/a/trials/x/trials"), "/jobs/{job_id}/trials");
    /* "/jobs//trials" has an empty id before the suffix: the whole "/trials" is the id. */
    assert_string_equal(http_path_pattern("/jobs/trials"), "/jobs/{job_id}");
    assert_string_equal(http_path_pattern("/jobs/a/trials/"), "/jobs/{job_id}");
    assert_null(http_path_pattern("/jobs/"));
    assert_null(http_path_pattern("/jobsx"));
    assert_string_equal(http_path_pattern("/"), "/");   /* the dashboard */
    assert_null(http_path_pattern("/index.html"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document_is_openapi_31),
        cmocka_unit_test(test_every_route_is_documented),
        cmocka_unit_test(test_every_documented_route_exists),
        cmocka_unit_test(test_patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
