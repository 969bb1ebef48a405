/* kube_call: one API request on the caller's loop, retried by the one rule (kube_call.h). */
#include "kube_call.h"

#include "clock.h"
#include "kube_async.h"
#include "kube_client_internal.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

struct kube_call {
    loop_curl_t *lc;
    kube_client_t *c;
    kube_call_done_fn *done;
    void *arg;
    char method[16];
    char *path, *content_type, *body;
    size_t len;
    int idempotent;
    size_t response_cap;
    int64_t deadline;     /* the caller's; 0 = none */
    int64_t req_deadline; /* this request's (page's): set at its first attempt, 0 = not yet */
    kube_call_fence_fn *fence;
    void *fence_arg;
    const char *log_id;
    kube_pager_t *pager;  /* a LIST */
    kube_async_t *req;    /* a request's attempt in flight, then its answer */
    CURL *page;           /* a LIST's page in flight */
    int timer;            /* a token wait, a backoff, or the end's delivery; 0 = none */
    void (*after)(kube_call_t *k); /* what the timer runs */
    int retries;          /* of this request (page) */
    int refresh_due;      /* the next attempt is the retry after a 401 */
    int refreshed;        /* it was made */
    uint64_t rejected;    /* the credential the 401 refused */
    int starting;         /* inside kube_call_start: an end waits for the next turn */
    int in_done;          /* inside done: cancel only clears the caller's pointer */
    kube_call_result_t res;
};

static void call_free(kube_call_t *k)
{
    if (k->timer)
        loop_cancel_timer(loop_curl_loop(k->lc), k->timer);
    if (k->req) {
        loop_curl_remove(k->lc, kube_async_handle(k->req));
        kube_async_destroy(&k->req);
    }
    if (k->page)
        loop_curl_remove(k->lc, k->page);
    kube_pager_destroy(&k->pager); /* frees its page's handle */
    json_object_put(k->res.items);
    json_object_put(k->res.skipped);
    free(k->path);
    free(k->content_type);
    free(k->body);
    free(k);
}

static void deliver(kube_call_t *k)
{
    k->in_done = 1;
    k->done(&k->res, k->arg);
    call_free(k);
}

static int on_timer(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    kube_call_t *k = arg;
    k->timer = 0;
    k->after(k);
    return 0;
}

/* Run step after delay_ns on the loop. Returns 0, or -1 when out of memory (nothing
 * armed). */
static int call_after(kube_call_t *k, int64_t delay_ns, void (*step)(kube_call_t *k))
{
    k->after = step;
    k->timer = loop_add_timer(loop_curl_loop(k->lc), delay_ns, 0, on_timer, k);
    if (k->timer > 0)
        return 0;
    k->timer = 0;
    return -1;
}

/* The call ends with err (KERR_OK: k->res holds the answer) for reason stop. */
static void call_end(kube_call_t *k, const kube_error_t *err, kube_retry_reason_t stop)
{
    if (err != &k->res.err)
        k->res.err = *err;
    k->res.stop = stop;
    if (!k->starting) {
        deliver(k);
        return;
    }
    /* out of memory: kube_call_start sees the end undelivered and gives the call up */
    call_after(k, 0, deliver);
}

/* An end before anything was sent: a bad request, no memory, the deadline. */
static void call_fail(kube_call_t *k, kube_error_code_t code, const char *why)
{
    kube_error_t e;
    kube_error_clear(&e);
    kube_error_set_request(&e, k->method, k->path);
    kube_error_set(&e, code, "%s", why);
    call_end(k, &e, KUBE_RETRY_FINAL);
}

static void on_transfer(CURL *easy, CURLcode code, void *arg);

/* Set up and add the request's next attempt; 0, or -1 with the call ended. */
static int send_request(kube_call_t *k)
{
    kube_error_t e;
    k->req = kube_async_new(k->c, k->method, k->path, k->content_type, k->body, k->len, k->req_deadline, NULL,
                            NULL, &e);
    if (!k->req) {
        call_end(k, &e, KUBE_RETRY_FINAL);
        return -1;
    }
    kube_async_set_response_cap(k->req, k->response_cap);
    if (k->refresh_due && kube_async_credential(k->req) == k->rejected) {
        kube_async_destroy(&k->req); /* nothing new to offer: the 401 is the answer */
        call_end(k, &k->res.err, KUBE_RETRY_AUTH_REFUSED);
        return -1;
    }
    CURL *h = kube_async_handle(k->req);
    loop_curl_share_connection(h); /* over TLS a stream of the one HTTP/2 connection */
    if (loop_curl_add_cb(k->lc, h, on_transfer, k)) {
        kube_async_destroy(&k->req);
        call_fail(k, KERR_CONFIG, "curl refused the transfer");
        return -1;
    }
    return 0;
}

/* Start the LIST's next page (or the failed one again); 0, or -1 with the call ended. */
static int send_page(kube_call_t *k)
{
    kube_error_t e;
    k->page = kube_pager_start(k->pager, &e);
    if (!k->page) {
        call_end(k, &e, KUBE_RETRY_FINAL);
        return -1;
    }
    if (k->refresh_due && kc_pager_credential(k->pager) == k->rejected) {
        k->page = NULL; /* the pager frees its handle */
        call_end(k, &k->res.err, KUBE_RETRY_AUTH_REFUSED);
        return -1;
    }
    int64_t left_ms = (k->req_deadline - kc_now(k->c)) / NS_PER_MS;
    curl_easy_setopt(k->page, CURLOPT_TIMEOUT_MS, (long)(left_ms > 0 ? left_ms : 1));
    loop_curl_share_connection(k->page);
    if (loop_curl_add_cb(k->lc, k->page, on_transfer, k)) {
        k->page = NULL;
        call_fail(k, KERR_CONFIG, "curl refused the transfer");
        return -1;
    }
    return 0;
}

/* Send the next attempt now: the fence first, then the transfer. */
static void call_send(kube_call_t *k)
{
    if (k->fence && !k->fence(k->fence_arg)) {
        k->res.fenced = 1;
        call_fail(k, KERR_CONFIG, "the fence refused the request");
        return;
    }
    if ((k->pager ? send_page(k) : send_request(k)) != 0)
        return;
    if (k->refresh_due) {
        k->refresh_due = 0;
        k->refreshed = 1;
        k->retries++;
        k->res.retries++;
        kc_count_retry(k->c, k->method, CURLE_OK, 401);
        rlog_info("retrying request with a refreshed credential after 401", "method", k->method, "path",
                  k->path);
    }
}

/* The next attempt: its token (a timer when it must wait), then call_send. */
static void call_next(kube_call_t *k)
{
    int64_t now = kc_now(k->c), wait = 0;
    if (!k->req_deadline) {
        k->req_deadline = now + k->c->opts.timeout_ms * NS_PER_MS;
        if (k->deadline && k->deadline < k->req_deadline)
            k->req_deadline = k->deadline;
    }
    if (k->req_deadline <= now || kc_take_token(k->c, k->method, k->req_deadline, &wait)) {
        if (k->res.err.code != KERR_OK) /* a retry: the failure before it is the answer */
            call_end(k, &k->res.err, KUBE_RETRY_DEADLINE);
        else
            call_fail(k, KERR_TIMEOUT, "no time left before the deadline to send the request (its token included)");
        return;
    }
    if (wait > 0 && call_after(k, wait, call_send) == 0)
        return;
    call_send(k); /* at once (or, out of memory, now rather than never) */
}

/* A failed attempt (err; the transfer's code, whether bytes went out, the credential it
 * carried): again by the rule, or the end. */
static void attempt_failed(kube_call_t *k, const kube_error_t *err, CURLcode code, int sent, uint64_t cred)
{
    kube_retry_policy_t policy = kc_retry_policy(k->c);
    kube_retry_in_t in = {k->idempotent, (int)code, sent, (int)k->res.http_status, err->retry_after_s,
                          k->retries, k->refreshed, kc_now(k->c), k->req_deadline};
    kube_retry_t d = kube_retry_decide(&policy, &in, &k->c->rng);
    if (!d.retry) {
        call_end(k, err, d.reason);
        return;
    }
    k->res.err = *err;
    if (d.reason == KUBE_RETRY_REFRESH) { /* made, and counted, once the credential differs */
        k->refresh_due = 1;
        k->rejected = cred;
        call_next(k);
        return;
    }
    k->retries++;
    k->res.retries++;
    kc_count_retry(k->c, k->method, code, (int)k->res.http_status);
    kc_log_retry(err, &d, k->retries, k->log_id);
    if (call_after(k, d.delay_ns, call_next))
        call_end(k, err, KUBE_RETRY_FINAL); /* out of memory: no way to wait */
}

/* A request's attempt ended. */
static void request_ended(kube_call_t *k, CURLcode code)
{
    kube_error_t err;
    k->res.http_status = kube_async_end(k->req, code, &err);
    if (err.code == KERR_OK) {
        k->res.body = kube_async_response(k->req, &k->res.len); /* the request lives until done returned */
        call_end(k, &err, KUBE_RETRY_FINAL);
        return;
    }
    int sent = kube_async_sent(k->req);
    uint64_t cred = kube_async_credential(k->req);
    kube_async_destroy(&k->req);
    attempt_failed(k, &err, code, sent, cred);
}

/* A LIST's page ended: the next one, the end, or a failed attempt. */
static void page_ended(kube_call_t *k, CURLcode code)
{
    kube_error_t err;
    long status = 0;
    uint64_t cred = kc_pager_credential(k->pager);
    curl_easy_getinfo(k->page, CURLINFO_RESPONSE_CODE, &status);
    k->page = NULL;
    k->res.http_status = status;
    switch (kube_pager_finish(k->pager, code, &err)) {
    case KUBE_PAGER_MORE: /* a new request: its own retries and timeout */
        k->retries = 0;
        k->req_deadline = 0;
        kube_error_clear(&k->res.err);
        call_next(k);
        return;
    case KUBE_PAGER_DONE:
        k->res.items = kube_pager_take_items(k->pager);
        k->res.skipped = kube_pager_take_skipped(k->pager);
        if (!k->res.items || !k->res.skipped) {
            call_fail(k, KERR_CONFIG, "out of memory collecting the LIST");
            return;
        }
        call_end(k, &err, KUBE_RETRY_FINAL);
        return;
    case KUBE_PAGER_ERROR:
        break;
    }
    attempt_failed(k, &err, code, 1, cred);
}

static void on_transfer(CURL *easy, CURLcode code, void *arg)
{
    (void)easy;
    kube_call_t *k = arg;
    if (k->pager)
        page_ended(k, code);
    else
        request_ended(k, code);
}

/* Copy spec into k. Returns 0, or -1 when out of memory. */
static int call_copy(kube_call_t *k, const kube_call_spec_t *spec)
{
    snprintf(k->method, sizeof(k->method), "%s", spec->method ? spec->method : "GET");
    k->path = strdup(spec->path ? spec->path : "");
    k->content_type = spec->content_type ? strdup(spec->content_type) : NULL;
    if (spec->body) {
        k->body = malloc(spec->len ? spec->len : 1);
        if (k->body)
            memcpy(k->body, spec->body, spec->len);
        k->len = spec->len;
    }
    if (spec->list)
        k->pager = kube_pager_new(k->c, k->path, spec->list);
    return !k->path || (spec->content_type && !k->content_type) || (spec->body && !k->body) ||
                   (spec->list && !k->pager)
               ? -1
               : 0;
}

kube_call_t *kube_call_start(loop_curl_t *lc, kube_client_t *c, const kube_call_spec_t *spec,
                             kube_call_done_fn *done, void *arg)
{
    kube_call_t *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    *k = (kube_call_t){.lc = lc, .c = c, .done = done, .arg = arg, .response_cap = spec->response_cap,
                       .deadline = spec->deadline_ns, .fence = spec->fence, .fence_arg = spec->fence_arg,
                       .log_id = spec->log_id};
    if (call_copy(k, spec)) {
        call_free(k);
        return NULL;
    }
    k->idempotent = kube_retry_idempotent(k->method, k->content_type);
    if (!k->response_cap)
        k->response_cap = KUBE_ASYNC_MAX_RESPONSE;
    kube_error_clear(&k->res.err);
    k->starting = 1;
    call_next(k);
    k->starting = 0;
    /* an end that could not be put on the next turn (out of memory): give the call up */
    if (!k->timer && !k->req && !k->page) {
        call_free(k);
        return NULL;
    }
    return k;
}

void kube_call_cancel(kube_call_t **call_p)
{
    kube_call_t *k = call_p ? *call_p : NULL;
    if (k && !k->in_done)
        call_free(k);
    if (call_p)
        *call_p = NULL;
}
