#include "kube_async.h"

#include "buf.h"
#include "clock.h"
#include "kube_client_internal.h"

#include <stdlib.h>
#include <string.h>

struct kube_async {
    kube_client_t *c;
    CURL *easy;
    struct curl_slist *headers;
    char method[16];
    char *body;            /* the request body (curl reads it from here) */
    kc_body_t upload;      /* body as curl sends it (kc_set_body) */
    buf_t resp;            /* the response body, capped */
    int64_t started_ns;
    int ended;             /* kube_async_end was called */
    kube_async_done_fn *done;
    void *arg;
};

static size_t on_resp(char *data, size_t size, size_t n, void *user)
{
    kube_async_t *r = user;
    /* Past the cap the rest is dropped: the Status of a refusal fits well within it. */
    buf_append(&r->resp, data, size * n);
    return size * n;
}

kube_async_t *kube_async_new(kube_client_t *c, const char *method, const char *path,
                             const char *content_type, const char *body, size_t len,
                             int64_t deadline_mono_ns, kube_async_done_fn *done, void *arg,
                             kube_error_t *err)
{
    kube_error_clear(err);
    kube_error_set_request(err, method, path);
    int64_t timeout_ms = KUBE_ASYNC_DEFAULT_TIMEOUT_MS;
    if (deadline_mono_ns > 0) {
        timeout_ms = (deadline_mono_ns - clock_mono_ns()) / NS_PER_MS;
        if (timeout_ms <= 0) {
            kube_error_set(err, KERR_TIMEOUT, "no time left before the deadline to send the request");
            return NULL;
        }
    }
    kube_async_t *r = calloc(1, sizeof(*r));
    if (!r || strlen(method) >= sizeof(r->method)) {
        free(r);
        kube_error_set(err, KERR_CONFIG, "out of memory or bad method");
        return NULL;
    }
    r->c = c;
    r->done = done;
    r->arg = arg;
    snprintf(r->method, sizeof(r->method), "%s", method);
    buf_init(&r->resp, KUBE_ASYNC_MAX_RESPONSE);
    const char *q = strchr(path, '?');
    char *p = q ? strndup(path, (size_t)(q - path)) : strdup(path);
    if (!p)
        goto oom;
    r->easy = kube_client_stream_handle(c, p, q ? q + 1 : NULL, timeout_ms, &r->headers, err);
    free(p);
    if (!r->easy)
        goto fail;
    kube_error_set_request(err, method, path);
    if (content_type) {
        char line[128];
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        /* Appended: the first node of the list records the credential (kube_client.h). */
        struct curl_slist *h = curl_slist_append(r->headers, line);
        if (!h)
            goto oom;
        r->headers = h;
    }
    if (body) {
        r->body = malloc(len ? len : 1);
        if (!r->body)
            goto oom;
        memcpy(r->body, body, len);
    }
    r->upload = (kc_body_t){r->body, len, kube_retry_idempotent(method, content_type), 0};
    CURLcode rc = curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, r->method);
    if (rc == CURLE_OK && body)
        rc = kc_set_body(r->easy, &r->upload); /* a POST's never sent again by curl itself */
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_resp);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    if (rc != CURLE_OK) {
        kube_error_set_transport(err, rc, 0, curl_easy_strerror(rc), "setting up the handle");
        goto fail;
    }
    r->started_ns = clock_mono_ns();
    return r;
oom:
    kube_error_set(err, KERR_CONFIG, "out of memory building the request");
fail:
    kube_async_destroy(&r);
    return NULL;
}

void kube_async_set_response_cap(kube_async_t *r, size_t cap)
{
    r->resp.cap = cap ? cap : BUF_DEFAULT_CAP;
}

CURL *kube_async_handle(const kube_async_t *r)
{
    return r->easy;
}

const char *kube_async_response(const kube_async_t *r, size_t *len)
{
    *len = r->resp.len;
    return buf_str(&r->resp);
}

long kube_async_end(kube_async_t *r, CURLcode code, kube_error_t *err)
{
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (!r->ended)
        kube_client_count_request(r->c, r->method, code, status, r->started_ns);
    r->ended = 1;
    kube_error_clear(err);
    if (code != CURLE_OK) {
        kube_error_set_transport(err, code, code == CURLE_OPERATION_TIMEDOUT, curl_easy_strerror(code), NULL);
    } else {
        err->retry_after_s = kc_stream_retry_after(r->headers);
        kube_error_from_response((int)status, buf_str(&r->resp), r->resp.len, err);
    }
    char *url = NULL;
    curl_easy_getinfo(r->easy, CURLINFO_EFFECTIVE_URL, &url);
    kube_error_set_request(err, r->method, url ? url : "");
    return status;
}

int kube_async_sent(const kube_async_t *r)
{
    long request_size = 0;
    curl_easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &request_size);
    return request_size > 0;
}

uint64_t kube_async_credential(const kube_async_t *r)
{
    return kc_stream_credential(r->headers);
}

void kube_async_finish(kube_async_t **r_p, CURLcode code)
{
    kube_async_t *r = *r_p;
    kube_error_t err;
    long status = kube_async_end(r, code, &err);
    if (r->done)
        r->done(&err, code == CURLE_OK ? status : 0, r->arg);
    kube_async_destroy(r_p);
}

void kube_async_destroy(kube_async_t **r_p)
{
    kube_async_t *r = r_p ? *r_p : NULL;
    if (!r)
        return;
    *r_p = NULL;
    curl_easy_cleanup(r->easy); /* NULL is fine */
    curl_slist_free_all(r->headers);
    free(r->body);
    buf_free(&r->resp);
    free(r);
}
