/* secretfetch: a Secret read over the loop. See secretfetch.h. */
#include "secretfetch.h"

#include "buf.h"
#include "jsonx.h"
#include "kube_error.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET_DEADLINE_MS 5000
#define SECRET_MAX_BYTES ((size_t)1 << 20)

struct secretfetch {
    loop_curl_t *lc;
    kube_client_t *client;
    char ns[254], name[254], rv[64];
    int64_t due_ns;      /* 0: not wanted */
    CURL *easy;
    struct curl_slist *headers;
    buf_t body;
    secretfetch_fn *fn;
    void *arg;
};

secretfetch_t *secretfetch_new(loop_curl_t *lc, kube_client_t *client, const char *ns, secretfetch_fn *fn,
                               void *arg)
{
    secretfetch_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->lc = lc;
    f->client = client;
    snprintf(f->ns, sizeof(f->ns), "%s", ns);
    f->fn = fn;
    f->arg = arg;
    buf_init(&f->body, SECRET_MAX_BYTES);
    return f;
}

/* Stop the transfer in flight, if any (no callback). */
static void stop(secretfetch_t *f)
{
    if (f->easy) {
        loop_curl_remove(f->lc, f->easy);
        curl_easy_cleanup(f->easy);
        f->easy = NULL;
    }
    curl_slist_free_all(f->headers);
    f->headers = NULL;
    if (f->body.data)
        explicit_bzero(f->body.data, f->body.alloc); /* a Secret's data */
    buf_free(&f->body);
}

void secretfetch_destroy(secretfetch_t **f_p)
{
    if (!f_p || !*f_p)
        return;
    stop(*f_p);
    free(*f_p);
    *f_p = NULL;
}

int secretfetch_set(secretfetch_t *f, const char *name, int64_t now_ns)
{
    if (!name)
        name = "";
    if (!strcmp(name, f->name))
        return 0;
    stop(f);
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->rv[0] = '\0';
    f->due_ns = *name ? now_ns : 0;
    return 1;
}

const char *secretfetch_name(const secretfetch_t *f)
{
    return f->name;
}

void secretfetch_due(secretfetch_t *f, int64_t at_ns)
{
    if (!f->name[0] || f->easy || (f->due_ns && f->due_ns <= at_ns))
        return;
    f->due_ns = at_ns;
}

int secretfetch_pending(const secretfetch_t *f)
{
    return f->easy || f->due_ns;
}

const char *secretfetch_rv(const secretfetch_t *f)
{
    return f->rv;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    secretfetch_t *f = ud;
    size_t len = size * nmemb;
    return buf_append(&f->body, ptr, len) == 0 ? len : 0;
}

static void on_done(CURL *easy, CURLcode code, void *arg);

void secretfetch_tick(secretfetch_t *f, int64_t now_ns, int64_t retry_ns)
{
    if (!f->due_ns || now_ns < f->due_ns || f->easy || !f->name[0] || !f->client)
        return;
    f->due_ns = 0;
    buf_t path;
    buf_init(&path, 4096);
    kube_error_t err;
    kube_error_clear(&err);
    if (kube_path(&path, "", "v1", f->ns, "secrets", f->name, NULL) == 0)
        f->easy = kube_client_stream_handle(f->client, buf_str(&path), NULL, SECRET_DEADLINE_MS, &f->headers, &err);
    buf_free(&path);
    buf_init(&f->body, SECRET_MAX_BYTES);
    if (f->easy) {
        curl_easy_setopt(f->easy, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(f->easy, CURLOPT_WRITEDATA, f);
    }
    if (!f->easy || loop_curl_add_cb(f->lc, f->easy, on_done, f)) {
        char line[512];
        rlog_warn("cannot read a Secret", "namespace", f->ns, "secret", f->name, "error",
                  f->easy ? "out of memory" : kube_error_str(&err, line, sizeof(line)));
        stop(f);
        f->due_ns = now_ns + retry_ns;
    }
}

/* The transfer ended: hand the answer to the callback. */
static void on_done(CURL *easy, CURLcode code, void *arg)
{
    secretfetch_t *f = arg;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    json_object *s = NULL;
    char why[256] = "", perr[128];
    if (code != CURLE_OK)
        snprintf(why, sizeof(why), "curl: %s", curl_easy_strerror(code));
    else if (status != 200)
        snprintf(why, sizeof(why), "HTTP %ld", status);
    else if (jsonx_parse_strict(f->body.data ? f->body.data : "", f->body.len, 32, &s, perr, sizeof(perr)))
        snprintf(why, sizeof(why), "the Secret's body is not JSON: %s", perr);
    f->easy = NULL; /* loop_curl took it off; ours to free */
    curl_easy_cleanup(easy);
    stop(f);
    const char *rv = JSONX_STR_AT(s, "metadata", "resourceVersion");
    snprintf(f->rv, sizeof(f->rv), "%s", rv ? rv : "");
    f->fn(s, s ? NULL : why, f->arg);
    json_object_put(s);
}
