/* metrics_serve: one scrape of /metrics on the loop. See metrics_serve.h. */
#include "metrics_serve.h"

#include "buf.h"
#include "clock.h"
#include "dlist.h"
#include "jsonx.h"
#include "kube_async.h"
#include "log.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REVIEW_MAX_DEPTH 32

typedef enum { RQ_NEW, RQ_REVIEWING, RQ_FETCHING, RQ_DECIDED, RQ_ANSWERED } rq_state_t;

static const char *const rq_state_names[] = {"NEW", "REVIEWING", "FETCHING", "DECIDED", "ANSWERED"};

typedef struct review review_t;
typedef struct rq rq_t;

/* One request (libmicrohttpd's req_cls). */
struct rq {
    mserve_t *s;
    struct MHD_Connection *conn;
    struct MHD_Daemon *daemon;
    rq_state_t state;
    int suspended;
    int status;     /* DECIDED: the HTTP status to answer */
    buf_t body;     /* 200: the exposition */
    review_t *review; /* REVIEWING: the review it waits for */
    CURL *upstream; /* FETCHING: the transfer */
    rq_t *prev, *next;        /* every request */
    rq_t *wprev, *wnext;      /* the review's waiters */
};

/* The TokenReview, then the SubjectAccessReview, of one token. */
typedef enum { RV_WAIT_BUDGET, RV_TOKEN, RV_ACCESS } rv_step_t;

struct review {
    mserve_t *s;
    unsigned char hash[SHA256_DIGEST_LENGTH];
    char *token;
    rv_step_t step;
    int timer;            /* RV_WAIT_BUDGET: the limiter's wait */
    kube_async_t *req;    /* the review in flight */
    json_object *answer;  /* its answer, parsed */
    json_object *user;    /* the TokenReview's status.user (answer of the first step) */
    json_object *first;   /* the TokenReview's answer, kept for user */
    rq_t *waiters;
    review_t *prev, *next;
};

struct mserve {
    mserve_config_t cfg;
    rq_t *requests;
    review_t *reviews;
    unsigned n_requests, n_reviews;
};

static const char text_plain[] = "text/plain; charset=utf-8";

/* ---- a request's states ----------------------------------------------------------------- */

/* The one place a request changes state. */
static void rq_enter(rq_t *r, rq_state_t to)
{
    rlog_debug("scrape", "from", rq_state_names[r->state], "to", rq_state_names[to]);
    r->state = to;
}

static void rq_suspend(rq_t *r)
{
    if (!r->suspended) {
        MHD_suspend_connection(r->conn);
        r->suspended = 1;
    }
}

static void rq_resume(rq_t *r)
{
    if (r->suspended) {
        r->suspended = 0;
        MHD_resume_connection(r->conn);
        r->s->cfg.wake(r->s->cfg.wake_arg);
    }
}

/* The answer is known: status (and body for a 200). The connection is resumed, and
 * libmicrohttpd's next call of mserve_answer queues it. */
static void rq_decided(rq_t *r, int status)
{
    r->status = status;
    rq_enter(r, RQ_DECIDED);
    rq_resume(r);
}

/* ---- the upstream fetch ------------------------------------------------------------------- */

static size_t on_upstream_data(char *data, size_t size, size_t n, void *user)
{
    rq_t *r = user;
    return buf_append(&r->body, data, size * n) ? 0 : size * n;
}

static void on_upstream_done(CURL *easy, CURLcode code, void *arg)
{
    rq_t *r = arg;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(easy);
    r->upstream = NULL;
    if (code != CURLE_OK || status != 200) {
        char why[512];
        snprintf(why, sizeof(why), "upstream %s: %s (HTTP %ld)", r->s->cfg.upstream, curl_easy_strerror(code),
                 status);
        rlog_error("cannot read the supervisor's metrics", "error", why);
        rq_decided(r, MHD_HTTP_BAD_GATEWAY);
        return;
    }
    rq_decided(r, MHD_HTTP_OK);
}

/* An allowed scrape: fetch the exposition (FETCHING), or 502 when it cannot start. */
static void rq_fetch(rq_t *r)
{
    const mserve_config_t *c = &r->s->cfg;
    CURL *h = curl_easy_init();
    if (!h) {
        rq_decided(r, MHD_HTTP_BAD_GATEWAY);
        return;
    }
    curl_easy_setopt(h, CURLOPT_URL, c->upstream);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->upstream_timeout_ns / NS_PER_MS));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_upstream_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    if (loop_curl_add_cb(c->lc, h, on_upstream_done, r)) {
        curl_easy_cleanup(h);
        rq_decided(r, MHD_HTTP_BAD_GATEWAY);
        return;
    }
    r->upstream = h;
    rq_enter(r, RQ_FETCHING);
    rq_suspend(r);
}

/* The token's decision (200, 401, 403 or 500) for a request that waited or looked it up. */
static void rq_decision(rq_t *r, int decision)
{
    if (decision == 200)
        rq_fetch(r);
    else
        rq_decided(r, decision);
}

/* ---- reviews -------------------------------------------------------------------------------- */

static void review_free(review_t *v)
{
    mserve_t *s = v->s;
    if (v->timer > 0)
        loop_cancel_timer(loop_curl_loop(s->cfg.lc), v->timer);
    if (v->req) {
        loop_curl_remove(s->cfg.lc, kube_async_handle(v->req));
        kube_async_destroy(&v->req);
    }
    json_object_put(v->answer);
    json_object_put(v->first);
    free(v->token);
    DLIST_UNLINK(s->reviews, v, prev, next);
    s->n_reviews--;
    free(v);
}

/* The review ended with decision (why: the reason of a refusal or failure): cache it,
 * log it as a scrape's refusal was logged, and hand it to every waiter. Frees v. */
static void review_end(review_t *v, int decision, const char *why)
{
    mauth_cache_put(v->s->cfg.cache, v->hash, decision, clock_mono_ns());
    if (decision == 500)
        rlog_error("cannot review a scraper's token", "error", why);
    else if (decision != 200 && *why)
        rlog_info("metrics request refused", "status", decision == 401 ? "401" : "403", "reason", why);
    while (v->waiters) {
        rq_t *r = v->waiters;
        DLIST_UNLINK(v->waiters, r, wprev, wnext);
        r->review = NULL;
        rq_decision(r, decision);
    }
    review_free(v);
}

static void review_send(review_t *v);

static void on_review_end(CURL *easy, CURLcode code, void *arg);

/* kube_async's done: the step's answer is in v->answer (NULL when none parsed). */
static void on_review_done(const kube_error_t *err, long http_status, void *arg)
{
    (void)http_status;
    review_t *v = arg;
    char why[512] = "";
    if (err->code != KERR_OK || !v->answer) {
        if (err->code != KERR_OK)
            kube_error_str(err, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "the %s answer is not JSON",
                     v->step == RV_TOKEN ? "TokenReview" : "SubjectAccessReview");
        review_end(v, 500, why);
        return;
    }
    if (v->step == RV_TOKEN) {
        json_object *user = NULL;
        if (!mauth_token_review_user(v->answer, &user)) {
            const char *e = JSONX_STR_AT(v->answer, "status", "error");
            snprintf(why, sizeof(why), "token not authenticated%s%.200s", e ? ": " : "", e ? e : "");
            review_end(v, 401, why);
            return;
        }
        v->first = v->answer; /* user points into it */
        v->answer = NULL;
        v->user = user;
        v->step = RV_ACCESS;
        review_send(v);
        return;
    }
    if (!mauth_access_allowed(v->answer)) {
        snprintf(why, sizeof(why), "user \"%.200s\" cannot get path \"/metrics\"", jsonx_str(v->user, "username"));
        review_end(v, 403, why);
        return;
    }
    review_end(v, 200, "");
}

/* The transfer of a step ended: parse its answer, then let kube_async classify it. */
static void on_review_end(CURL *easy, CURLcode code, void *arg)
{
    (void)easy;
    review_t *v = arg;
    size_t len = 0;
    const char *body = kube_async_response(v->req, &len);
    char why[128];
    json_object_put(v->answer);
    v->answer = NULL;
    if (code == CURLE_OK && len > 0 && len <= INT32_MAX)
        jsonx_parse_strict(body, len, REVIEW_MAX_DEPTH, &v->answer, why, sizeof(why));
    /* Out of v first: the done callback may send the next step (v->req again) or free v. */
    kube_async_t *req = v->req;
    v->req = NULL;
    kube_async_finish(&req, code);
}

/* Send the review's current step (TokenReview or SubjectAccessReview). */
static void review_send(review_t *v)
{
    mserve_t *s = v->s;
    json_object *body = v->step == RV_TOKEN ? mauth_token_review(v->token) : mauth_access_review(v->user, "/metrics");
    const char *path = v->step == RV_TOKEN ? "/apis/authentication.k8s.io/v1/tokenreviews"
                                           : "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    kube_error_t err;
    kube_error_clear(&err);
    char why[512] = "out of memory";
    if (body) {
        const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        v->req = kube_async_new(s->cfg.client, "POST", path, "application/json", text, strlen(text),
                                clock_mono_ns() + s->cfg.review_timeout_ns, on_review_done, v, &err);
        if (!v->req)
            kube_error_str(&err, why, sizeof(why));
    }
    json_object_put(body);
    if (v->req && loop_curl_add_cb(s->cfg.lc, kube_async_handle(v->req), on_review_end, v)) {
        kube_async_destroy(&v->req);
        snprintf(why, sizeof(why), "curl refused the transfer");
    }
    if (!v->req)
        review_end(v, 500, why);
}

static int on_budget(loop_t *loop, int timer_id, void *arg)
{
    (void)loop, (void)timer_id;
    review_t *v = arg;
    v->timer = 0;
    v->step = RV_TOKEN;
    review_send(v);
    return 0;
}

/* Make r wait for the review of token (hash): the one in flight, or a new one that starts
 * once the operator's QPS budget allows. */
static void review_join(rq_t *r, const char *token, const unsigned char hash[SHA256_DIGEST_LENGTH])
{
    mserve_t *s = r->s;
    review_t *v = s->reviews;
    while (v && memcmp(v->hash, hash, SHA256_DIGEST_LENGTH) != 0)
        v = v->next;
    if (!v) {
        v = calloc(1, sizeof(*v));
        if (!v || !(v->token = strdup(token))) {
            free(v);
            rlog_error("cannot review a scraper's token", "error", "out of memory");
            rq_decided(r, MHD_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
        v->s = s;
        memcpy(v->hash, hash, SHA256_DIGEST_LENGTH);
        DLIST_PUSH_FRONT(s->reviews, v, prev, next);
        s->n_reviews++;
        int64_t wait = kube_client_throttle(s->cfg.client);
        v->step = RV_WAIT_BUDGET;
        v->timer = loop_add_timer(loop_curl_loop(s->cfg.lc), wait, 0, on_budget, v);
        if (v->timer < 0) {
            v->timer = 0;
            review_end(v, 500, "out of memory");
            rq_decided(r, MHD_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }
    DLIST_PUSH_FRONT(v->waiters, r, wprev, wnext);
    r->review = v;
    rq_enter(r, RQ_REVIEWING);
    rq_suspend(r);
}

/* ---- libmicrohttpd's callbacks ----------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype, const char *body,
                             size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* The decided answer. */
static enum MHD_Result answer_decided(rq_t *r)
{
    static const struct {
        int status;
        const char *text;
    } texts[] = {
        {MHD_HTTP_UNAUTHORIZED, "Unauthorized\n"},
        {MHD_HTTP_FORBIDDEN, "Forbidden\n"},
        {MHD_HTTP_NOT_FOUND, "not found\n"},
        {MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n"},
        {MHD_HTTP_BAD_GATEWAY, "Bad Gateway\n"},
    };
    rq_enter(r, RQ_ANSWERED);
    if (r->status == MHD_HTTP_OK)
        return reply(r->conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf_str(&r->body),
                     r->body.len);
    const char *text = "Internal Server Error\n";
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i].status == r->status)
            text = texts[i].text;
    return reply(r->conn, (unsigned)r->status, text_plain, text, strlen(text));
}

/* A whole request has arrived (NEW): decide what can be decided now. */
static void rq_start(rq_t *r, const char *url, const char *method)
{
    if (strcmp(method, "GET") != 0) {
        rq_decided(r, MHD_HTTP_METHOD_NOT_ALLOWED);
        return;
    }
    if (strcmp(url, "/metrics") != 0) {
        rq_decided(r, MHD_HTTP_NOT_FOUND);
        return;
    }
    const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *token = mauth_bearer(auth);
    if (!token) {
        rq_decided(r, MHD_HTTP_UNAUTHORIZED);
        return;
    }
    unsigned char hash[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), hash);
    int d = mauth_cache_get(r->s->cfg.cache, hash, clock_mono_ns());
    if (d)
        rq_decision(r, d);
    else
        review_join(r, token, hash);
}

enum MHD_Result mserve_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls)
{
    (void)version, (void)upload_data;
    mserve_t *s = cls;
    rq_t *r = *req_cls;
    if (!r) { /* the headers only: a request begins */
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        r->s = s;
        r->conn = conn;
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
        r->daemon = i ? i->daemon : NULL;
        buf_init(&r->body, MSERVE_MAX_EXPOSITION);
        DLIST_PUSH_FRONT(s->requests, r, prev, next);
        s->n_requests++;
        *req_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size) { /* a body is not read */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->state == RQ_NEW)
        rq_start(r, url, method);
    if (r->state == RQ_DECIDED)
        return answer_decided(r);
    return r->state == RQ_ANSWERED ? MHD_NO : MHD_YES; /* waiting (suspended) */
}

void mserve_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode toe)
{
    (void)conn, (void)toe;
    mserve_t *s = cls;
    rq_t *r = *req_cls;
    if (!r)
        return;
    if (r->review) {
        review_t *v = r->review;
        DLIST_UNLINK(v->waiters, r, wprev, wnext);
        if (!v->waiters)
            review_free(v); /* nobody waits for it any more */
    }
    if (r->upstream) {
        loop_curl_remove(s->cfg.lc, r->upstream);
        curl_easy_cleanup(r->upstream);
    }
    buf_free(&r->body);
    DLIST_UNLINK(s->requests, r, prev, next);
    s->n_requests--;
    free(r);
    *req_cls = NULL;
}

void mserve_release(struct MHD_Daemon *d, void *cls)
{
    mserve_t *s = cls;
    for (rq_t *r = s->requests; r; r = r->next)
        if (r->daemon == d)
            rq_resume(r);
}

/* ---- the server ------------------------------------------------------------------------------- */

mserve_t *mserve_new(const mserve_config_t *cfg)
{
    mserve_t *s = calloc(1, sizeof(*s));
    if (s)
        s->cfg = *cfg;
    return s;
}

void mserve_destroy(mserve_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mserve_t *s = *self_p;
    while (s->reviews)
        review_free(s->reviews);
    free(s);
    *self_p = NULL;
}

static void stack_wake(void *arg)
{
    mserve_stack_t *st = arg;
    if (st->tls)
        mtls_wake(st->tls);
}

int mserve_stack_start(mserve_stack_t *st, loop_t *loop, mserve_config_t cfg, mtls_opts_t tls, char *err,
                       size_t errlen)
{
    memset(st, 0, sizeof(*st));
    st->lc = loop_curl_open(loop);
    st->cache = mauth_cache_new(MAUTH_DEFAULT_CAPACITY);
    cfg.lc = st->lc;
    cfg.cache = st->cache;
    cfg.wake = stack_wake;
    cfg.wake_arg = st;
    if (!st->lc || !st->cache || !(st->serve = mserve_new(&cfg))) {
        snprintf(err, errlen, "out of memory");
        mserve_stack_stop(st);
        return -1;
    }
    tls.handler = mserve_answer;
    tls.handler_cls = st->serve;
    tls.completed = mserve_completed;
    tls.release = mserve_release;
    if (mtls_start(loop, &tls, &st->tls, err, errlen)) {
        mserve_stack_stop(st);
        return -1;
    }
    return 0;
}

void mserve_stack_stop(mserve_stack_t *st)
{
    mtls_stop(&st->tls);
    mserve_destroy(&st->serve);
    loop_curl_destroy(&st->lc);
    mauth_cache_destroy(&st->cache);
}

unsigned mserve_requests(const mserve_t *s)
{
    return s->n_requests;
}

unsigned mserve_reviews(const mserve_t *s)
{
    return s->n_reviews;
}
