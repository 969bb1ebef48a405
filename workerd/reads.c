#include "reads.h"

#include "buf.h"
#include "clock.h"
#include "kube_async.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_BASE_NS (INT64_C(200) * NS_PER_MS) /* doubling: 0.2, 0.4, 0.8 s */

typedef struct {
    reads_t *set;
    reads_req_t *req;
    kube_async_t *get;     /* a GET in flight */
    kube_pager_t *pager;   /* a LIST under way */
    CURL *page;            /* its page in flight */
    int attempts;          /* retries made */
    int timer;             /* token wait or retry backoff, 0 = none */
} slot_t;

struct reads {
    loop_curl_t *lc;
    kube_client_t *c;
    size_t n;
    slot_t slot[READS_MAX];
    int pending;           /* requests not ended */
    int timer;             /* the end, when it had to wait for the next turn */
    reads_done_fn *done;
    void *arg;
};

int reads_get(reads_req_t *req, const char *group, const char *version, const char *ns, const char *resource,
              const char *name)
{
    memset(req, 0, sizeof(*req));
    buf_t p;
    buf_init(&p, sizeof(req->path) - 1);
    int rc = kube_path(&p, group, version, ns, resource, name, NULL);
    if (!rc)
        snprintf(req->path, sizeof(req->path), "%s", buf_str(&p));
    else
        kube_error_set(&req->err, KERR_CONFIG, "%s %s/%s: cannot build the request path", resource, ns ? ns : "",
                       name ? name : "");
    buf_free(&p);
    return rc;
}

int reads_list(reads_req_t *req, const char *ns, const char *resource, const char *label_selector,
               const char *field_selector)
{
    if (reads_get(req, "", "v1", ns, resource, NULL))
        return -1;
    req->list = 1;
    if ((size_t)snprintf(req->label_selector, sizeof(req->label_selector), "%s",
                         label_selector ? label_selector : "") >= sizeof(req->label_selector) ||
        (size_t)snprintf(req->field_selector, sizeof(req->field_selector), "%s",
                         field_selector ? field_selector : "") >= sizeof(req->field_selector)) {
        kube_error_set(&req->err, KERR_CONFIG, "%s in %s: selector too long", resource, ns ? ns : "");
        return -1;
    }
    return 0;
}

static int on_end_timer(loop_t *loop, int id, void *arg);

/* The last request ended: free the set, then tell the caller. */
static void set_end(reads_t *r)
{
    reads_done_fn *done = r->done;
    void *arg = r->arg;
    if (r->timer)
        loop_cancel_timer(loop_curl_loop(r->lc), r->timer);
    free(r);
    done(arg);
}

static int on_end_timer(loop_t *loop, int id, void *arg)
{
    (void)loop;
    (void)id;
    reads_t *r = arg;
    r->timer = 0;
    set_end(r);
    return 0;
}

/* Request s has ended (its req's obj and err say how). */
static void slot_end(slot_t *s)
{
    if (--s->set->pending == 0)
        set_end(s->set);
}

static void slot_send(slot_t *s);

static int on_slot_timer(loop_t *loop, int id, void *arg)
{
    (void)loop;
    (void)id;
    slot_t *s = arg;
    s->timer = 0;
    slot_send(s);
    return 0;
}

/* Send s after wait_ns (its token, its backoff): at once, or on a timer. */
static void slot_after(slot_t *s, int64_t wait_ns)
{
    if (wait_ns > 0) {
        s->timer = loop_add_timer(loop_curl_loop(s->set->lc), wait_ns, 0, on_slot_timer, s);
        if (s->timer > 0)
            return;
        s->timer = 0; /* out of memory: go now rather than never */
    }
    slot_send(s);
}

/* A failed attempt: again after the backoff and a token, or the end with err. */
static void slot_failed(slot_t *s, const kube_error_t *err)
{
    s->req->err = *err;
    json_object_put(s->req->obj);
    s->req->obj = NULL;
    kube_pager_destroy(&s->pager);
    if (kube_error_retry_soon(err) && s->attempts < READS_RETRIES) {
        char line[512];
        rlog_debug("retrying a read", "path", s->req->path, "error", kube_error_str(err, line, sizeof(line)));
        int64_t wait = kube_client_throttle(s->set->c) + (RETRY_BASE_NS << s->attempts);
        s->attempts++;
        kube_error_clear(&s->req->err);
        slot_after(s, wait);
        return;
    }
    slot_end(s);
}

static void on_get_done(const kube_error_t *err, long status, void *arg)
{
    (void)status;
    slot_t *s = arg;
    s->req->err = *err;
}

static void on_get(CURL *easy, CURLcode result, void *arg)
{
    slot_t *s = arg;
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    json_object *obj = NULL;
    if (result == CURLE_OK && code >= 200 && code < 300) {
        size_t len = 0;
        const char *body = kube_async_response(s->get, &len);
        obj = json_tokener_parse(body);
    }
    kube_async_finish(&s->get, result); /* calls on_get_done: req->err */
    kube_error_t err = s->req->err;
    if (err.code == KERR_OK && (!obj || !json_object_is_type(obj, json_type_object))) {
        json_object_put(obj);
        kube_error_set(&err, KERR_DECODE, "GET %s: the answer is not a JSON object (or too large)", s->req->path);
        slot_failed(s, &err);
        return;
    }
    if (err.code != KERR_OK) {
        json_object_put(obj);
        if (kube_error_is_not_found(&err)) { /* absent: no object, no error */
            kube_error_clear(&s->req->err);
            slot_end(s);
            return;
        }
        slot_failed(s, &err);
        return;
    }
    s->req->obj = obj;
    slot_end(s);
}

static void on_page(CURL *easy, CURLcode result, void *arg)
{
    (void)easy;
    slot_t *s = arg;
    s->page = NULL;
    kube_error_t err;
    kube_error_clear(&err);
    switch (kube_pager_finish(s->pager, result, &err)) {
    case KUBE_PAGER_MORE:
        slot_after(s, kube_client_throttle(s->set->c));
        return;
    case KUBE_PAGER_DONE:
        json_object_put(kube_pager_take_skipped(s->pager));
        s->req->obj = kube_pager_take_items(s->pager);
        kube_pager_destroy(&s->pager);
        if (!s->req->obj) {
            kube_error_set(&err, KERR_CONFIG, "LIST %s: out of memory", s->req->path);
            slot_failed(s, &err);
            return;
        }
        slot_end(s);
        return;
    case KUBE_PAGER_ERROR:
        break;
    }
    slot_failed(s, &err);
}

/* Send s's request (a GET, or the next page of its LIST) now; one that cannot be sent
 * fails at once. */
static void slot_send(slot_t *s)
{
    reads_t *r = s->set;
    kube_error_t err;
    kube_error_clear(&err);
    CURL *h = NULL;
    if (!s->req->list) {
        s->get = kube_async_new(r->c, "GET", s->req->path, NULL, NULL, 0, 0, on_get_done, s, &err);
        if (s->get) {
            kube_async_set_response_cap(s->get, BUF_DEFAULT_CAP);
            h = kube_async_handle(s->get);
        }
    } else {
        if (!s->pager) {
            kube_req_opts_t ro = {.label_selector = *s->req->label_selector ? s->req->label_selector : NULL,
                                  .field_selector = *s->req->field_selector ? s->req->field_selector : NULL,
                                  .limit = 500};
            s->pager = kube_pager_new(r->c, s->req->path, &ro);
        }
        if (!s->pager)
            kube_error_set(&err, KERR_CONFIG, "LIST %s: out of memory", s->req->path);
        else
            h = s->page = kube_pager_start(s->pager, &err);
    }
    if (h) {
        loop_curl_share_connection(h);
        if (loop_curl_add_cb(r->lc, h, s->req->list ? on_page : on_get, s) == 0)
            return;
        kube_error_set(&err, KERR_CONFIG, "curl refused the transfer");
        kube_async_destroy(&s->get);
        s->page = NULL;
    }
    s->attempts = READS_RETRIES; /* a request that cannot be made is not retried */
    slot_failed(s, &err);
}

reads_t *reads_start(loop_curl_t *lc, kube_client_t *c, reads_req_t *req, size_t n, reads_done_fn *done,
                     void *arg)
{
    if (n > READS_MAX)
        return NULL;
    reads_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->lc = lc;
    r->c = c;
    r->n = n;
    r->done = done;
    r->arg = arg;
    /* one more than the requests, held until all are started: a request that ends at once
     * must not end the set (and call done) from inside reads_start */
    r->pending = (int)n + 1;
    for (size_t k = 0; k < n; k++) {
        r->slot[k].set = r;
        r->slot[k].req = &req[k];
        req[k].obj = NULL;
        kube_error_clear(&req[k].err);
    }
    for (size_t k = 0; k < n; k++)
        slot_after(&r->slot[k], kube_client_throttle(c));
    if (--r->pending == 0) {
        r->timer = loop_add_timer(loop_curl_loop(lc), 0, 0, on_end_timer, r);
        if (r->timer <= 0) {
            /* out of memory: no way to call done later; give up on the set */
            r->timer = 0;
            free(r);
            return NULL;
        }
    }
    return r;
}

void reads_cancel(reads_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    reads_t *r = *r_p;
    loop_t *loop = loop_curl_loop(r->lc);
    for (size_t k = 0; k < r->n; k++) {
        slot_t *s = &r->slot[k];
        if (s->timer)
            loop_cancel_timer(loop, s->timer);
        if (s->get) {
            loop_curl_remove(r->lc, kube_async_handle(s->get));
            kube_async_destroy(&s->get);
        }
        if (s->page)
            loop_curl_remove(r->lc, s->page);
        kube_pager_destroy(&s->pager);
        json_object_put(s->req->obj);
        s->req->obj = NULL;
    }
    if (r->timer)
        loop_cancel_timer(loop, r->timer);
    free(r);
    *r_p = NULL;
}
