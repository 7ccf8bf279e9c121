/* zeusd.c: the client side of the zeusd daemon's HTTP API for power limits (Zeus's
 * zeus.utils.zeusd): GET /discover, then POST /gpu/set_power_limit?gpu_ids=..&
 * power_limit_mw=..&block=true, over a Unix socket ($ZEUSD_SOCK_PATH) or TCP
 * ($ZEUSD_HOST_PORT), with $ZEUSD_TOKEN as a bearer token. A daemon older than 0.3 (no
 * /discover) gets its per-GPU route, POST /gpu/{id}/set_power_limit with a JSON body.
 * Reads stay with NVML: they need no privilege. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "power/powerInt.h"

#define ZEUSD_BODY_MAX 65536      /* a longer answer is cut (only read for messages) */
#define ZEUSD_TIMEOUT_S 30L       /* a blocking set waits for NVML on the daemon's side */

struct pw_zeusd {
    CURL *curl;
    char base[300];               /* http://localhost or http://HOST:PORT */
    char sock[256];               /* "" over TCP */
    char token[1024];             /* "" without ZEUSD_TOKEN */
    bool legacy;                  /* no /discover: per-GPU routes with JSON bodies */
    char name[300];
    char body[ZEUSD_BODY_MAX + 1];
    size_t len;
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    pw_zeusd *z = arg;
    size_t n = size * nmemb, room = ZEUSD_BODY_MAX - z->len;
    memcpy(z->body + z->len, p, n < room ? n : room);
    z->len += n < room ? n : room;
    z->body[z->len] = '\0';
    return n;
}

/* One request: method "GET" or "POST", path with its query, body JSON or NULL. Fills
 * *status and z->body. Returns 0, or ZBSO_ERUNTIME naming the endpoint when no answer
 * came. */
static int request(pw_zeusd *z, const char *method, const char *path, const char *json,
                   long *status, zbso_err *err)
{
    char url[1024];
    struct curl_slist *hdr = NULL;
    char auth[1100];
    snprintf(url, sizeof url, "%s%s", z->base, path);
    curl_easy_reset(z->curl);
    curl_easy_setopt(z->curl, CURLOPT_URL, url);
    curl_easy_setopt(z->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(z->curl, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(z->curl, CURLOPT_TIMEOUT, ZEUSD_TIMEOUT_S);
    curl_easy_setopt(z->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(z->curl, CURLOPT_WRITEDATA, z);
    curl_easy_setopt(z->curl, CURLOPT_PROXY, "");
    if (z->sock[0])
        curl_easy_setopt(z->curl, CURLOPT_UNIX_SOCKET_PATH, z->sock);
    if (z->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", z->token);
        hdr = curl_slist_append(hdr, auth);
    }
    if (strcmp(method, "POST") == 0) {
        hdr = curl_slist_append(hdr, json ? "Content-Type: application/json"
                                          : "Content-Type:");
        curl_easy_setopt(z->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(z->curl, CURLOPT_POSTFIELDS, json ? json : "");
    }
    if (hdr)
        curl_easy_setopt(z->curl, CURLOPT_HTTPHEADER, hdr);
    z->len = 0;
    z->body[0] = '\0';
    CURLcode cc = curl_easy_perform(z->curl);
    curl_slist_free_all(hdr);
    if (cc != CURLE_OK)
        return err_set(err, ZBSO_ERUNTIME, "cannot reach %s (%s %s): %s", z->name, method,
                       path, curl_easy_strerror(cc));
    curl_easy_getinfo(z->curl, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

/* zeusd's message in an error body: {"errors": {"0": "..."}} or {"error": "..."}, else
 * the body itself, into out. */
static void message_of(const pw_zeusd *z, char *out, size_t cap)
{
    json_error_t je;
    json_t *v = json_loadb(z->body, z->len, 0, &je);
    const char *msg = NULL, *key;
    json_t *errs, *e;
    snprintf(out, cap, "%.300s", z->body);
    if (v == NULL)
        return;
    if ((msg = json_string_value(json_object_get(v, "error"))) != NULL) {
        snprintf(out, cap, "%s", msg);
    } else if (json_is_object(errs = json_object_get(v, "errors"))) {
        size_t n = 0;
        out[0] = '\0';
        json_object_foreach(errs, key, e) {
            n = strlen(out);
            snprintf(out + n, cap - n, "%sGPU %s: %s", n ? "; " : "", key,
                     json_string_value(e) ? json_string_value(e) : "?");
        }
    }
    json_decref(v);
}

/* Checks /discover's answer: gpu-control enabled, a token when one is required, and
 * every GPU of ours listed. */
static int check_discover(pw_zeusd *z, const unsigned *nvml, unsigned n, zbso_err *err)
{
    json_error_t je;
    json_t *v = json_loadb(z->body, z->len, 0, &je);
    json_t *groups, *gpus, *e;
    size_t i;
    bool control = false;
    int rc = 0;
    if (!json_is_object(v)) {
        rc = err_set(err, ZBSO_ECONFIG, "%s answered GET /discover with something that is "
                     "not a JSON object: %.200s", z->name, z->body);
        goto out;
    }
    groups = json_object_get(v, "enabled_api_groups");
    json_array_foreach(groups, i, e)
        control = control || (json_is_string(e) && strcmp(json_string_value(e),
                                                           "gpu-control") == 0);
    if (!control) {
        rc = err_set(err, ZBSO_ECONFIG, "%s does not enable the gpu-control API group, so "
                     "it cannot set power limits (start zeusd with gpu-control enabled)",
                     z->name);
        goto out;
    }
    if (json_is_true(json_object_get(v, "auth_required")) && !z->token[0]) {
        rc = err_set(err, ZBSO_ECONFIG, "%s requires authentication: set ZEUSD_TOKEN to a "
                     "token with the gpu-control scope", z->name);
        goto out;
    }
    gpus = json_object_get(v, "gpus");
    for (unsigned k = 0; k < n; k++) {
        bool found = false;
        json_array_foreach(gpus, i, e)
            found = found || json_integer_value(json_object_get(e, "id")) == (json_int_t)nvml[k];
        if (!found) {
            rc = err_set(err, ZBSO_ECONFIG, "%s does not list GPU %u (NVML index) in GET "
                         "/discover", z->name, nvml[k]);
            goto out;
        }
    }
out:
    json_decref(v);
    return rc;
}

int pw_zeusd_open(const unsigned *nvml, unsigned n, pw_zeusd **out, zbso_err *err)
{
    const char *sock = getenv("ZEUSD_SOCK_PATH");
    const char *host_port = getenv("ZEUSD_HOST_PORT");
    const char *token = getenv("ZEUSD_TOKEN");
    long status = 0;
    int rc;

    *out = NULL;
    if (sock != NULL && sock[0] == '\0')
        sock = NULL;
    if (host_port != NULL && host_port[0] == '\0')
        host_port = NULL;
    if (sock == NULL && host_port == NULL)
        return 0;
    pw_zeusd *z = calloc(1, sizeof *z);
    if (z == NULL)
        return err_set(err, ZBSO_ENOMEM, "out of memory opening zeusd");
    /* Zeus's ZeusdConfig.from_env: the socket first, then host:port. */
    if (sock != NULL) {
        if (strlen(sock) >= sizeof z->sock) {
            rc = err_set(err, ZBSO_ECONFIG, "ZEUSD_SOCK_PATH is %zu bytes long, over %zu",
                         strlen(sock), sizeof z->sock - 1);
            goto fail;
        }
        snprintf(z->sock, sizeof z->sock, "%s", sock);
        snprintf(z->base, sizeof z->base, "http://localhost");
        snprintf(z->name, sizeof z->name, "zeusd at %s", sock);
    } else {
        if (strlen(host_port) > 255 || strchr(host_port, '/') || !strchr(host_port, ':')) {
            rc = err_set(err, ZBSO_ECONFIG, "ZEUSD_HOST_PORT '%.100s' is not host:port",
                         host_port);
            goto fail;
        }
        snprintf(z->base, sizeof z->base, "http://%s", host_port);
        snprintf(z->name, sizeof z->name, "zeusd at %s", host_port);
    }
    if (token != NULL && strlen(token) >= sizeof z->token) {
        rc = err_set(err, ZBSO_ECONFIG, "ZEUSD_TOKEN is %zu bytes long, over %zu",
                     strlen(token), sizeof z->token - 1);
        goto fail;
    }
    snprintf(z->token, sizeof z->token, "%s", token ? token : "");
    if ((z->curl = curl_easy_init()) == NULL) {
        rc = err_set(err, ZBSO_ENOMEM, "out of memory opening zeusd (curl)");
        goto fail;
    }
    zbso_err why;
    if (request(z, "GET", "/discover", NULL, &status, &why) < 0) {
        rc = err_set(err, ZBSO_ECONFIG, "%s (set by %s)", why.msg,
                     z->sock[0] ? "ZEUSD_SOCK_PATH" : "ZEUSD_HOST_PORT");
        goto fail;
    }
    if (status == 404) {
        z->legacy = true;
    } else if (status != 200) {
        char msg[400];
        message_of(z, msg, sizeof msg);
        rc = err_set(err, ZBSO_ECONFIG, "%s answered GET /discover with %ld: %s", z->name,
                     status, msg);
        goto fail;
    } else if ((rc = check_discover(z, nvml, n, err)) < 0) {
        goto fail;
    }
    *out = z;
    return 0;
fail:
    pw_zeusd_close(z);
    return rc;
}

void pw_zeusd_close(pw_zeusd *z)
{
    if (z == NULL)
        return;
    if (z->curl)
        curl_easy_cleanup(z->curl);
    free(z);
}

const char *pw_zeusd_name(const pw_zeusd *z)
{
    return z->name;
}

/* The outcome of a set request that got status: 0, or the error naming it. */
static int set_outcome(pw_zeusd *z, long status, unsigned mw, zbso_err *err)
{
    char msg[400];
    if (status == 200)
        return 0;
    message_of(z, msg, sizeof msg);
    if (status == 401 || status == 403)
        return err_set(err, ZBSO_EPERM, "%s refused to set the power limit to %u mW (%ld: "
                       "%s): its NVML needs CAP_SYS_ADMIN (run zeusd as root), and with "
                       "authentication ZEUSD_TOKEN must carry the gpu-control scope",
                       z->name, mw, status, msg);
    return err_set(err, ZBSO_ERUNTIME, "%s could not set the power limit to %u mW (%ld): %s",
                   z->name, mw, status, msg);
}

int pw_zeusd_set(pw_zeusd *z, const unsigned *nvml, unsigned n, unsigned mw, zbso_err *err)
{
    char path[512], json[96];
    long status = 0;
    int rc;
    if (z->legacy) {
        for (unsigned i = 0; i < n; i++) {
            snprintf(path, sizeof path, "/gpu/%u/set_power_limit", nvml[i]);
            snprintf(json, sizeof json, "{\"power_limit_mw\":%u,\"block\":true}", mw);
            if ((rc = request(z, "POST", path, json, &status, err)) < 0 ||
                (rc = set_outcome(z, status, mw, err)) < 0)
                return rc;
        }
        return 0;
    }
    size_t k = (size_t)snprintf(path, sizeof path, "/gpu/set_power_limit?gpu_ids=");
    for (unsigned i = 0; i < n && k < sizeof path; i++)
        k += (size_t)snprintf(path + k, sizeof path - k, "%s%u", i ? "," : "", nvml[i]);
    if (k < sizeof path)
        snprintf(path + k, sizeof path - k, "&power_limit_mw=%u&block=true", mw);
    if ((rc = request(z, "POST", path, NULL, &status, err)) < 0)
        return rc;
    return set_outcome(z, status, mw, err);
}
