#include "reads.h"

#include "buf.h"
#include "jsonx.h"
#include "kube_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_PAGE 500 /* items asked per LIST page (the pager shrinks it to fit the cap) */

typedef struct {
    reads_t *set;
    reads_req_t *req;
    kube_call_t *call;     /* the GET or the LIST with its retries, NULL once ended */
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

/* Free the set: its calls (none left once every request has ended) and its end timer. */
static void set_free(reads_t *r)
{
    for (size_t k = 0; k < r->n; k++)
        kube_call_cancel(&r->slot[k].call);
    if (r->timer)
        loop_cancel_timer(loop_curl_loop(r->lc), r->timer);
    free(r);
}

/* The last request ended: free the set, then tell the caller. */
static void set_end(reads_t *r)
{
    reads_done_fn *done = r->done;
    void *arg = r->arg;
    set_free(r);
    done(arg);
}

static int on_end_timer(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
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

/* A GET's answer into req->obj: the object, or a KERR_DECODE error. */
static void get_answer(reads_req_t *req, const kube_call_result_t *res)
{
    json_object *obj = NULL;
    char why[128];
    if (res->body && !jsonx_parse_strict(res->body, res->len, 128, &obj, why, sizeof(why)) &&
        json_object_is_type(obj, json_type_object)) {
        req->obj = obj;
        return;
    }
    json_object_put(obj);
    kube_error_set(&req->err, KERR_DECODE, "GET %s: the answer is not a JSON object (or too large)", req->path);
}

static void on_slot_done(const kube_call_result_t *res, void *arg)
{
    slot_t *s = arg;
    reads_req_t *req = s->req;
    s->call = NULL; /* freed when this returns */
    req->err = res->err;
    if (res->err.code == KERR_OK && req->list)
        req->obj = json_object_get(res->items); /* items too large for a page of one: left out */
    else if (res->err.code == KERR_OK)
        get_answer(req, res);
    else if (!req->list && kube_error_is_not_found(&res->err))
        kube_error_clear(&req->err); /* absent: no object, no error */
    slot_end(s);
}

/* Start s's request: a GET, or a LIST page by page; one that cannot start ends at once. */
static void slot_start(slot_t *s)
{
    reads_req_t *req = s->req;
    kube_req_opts_t ro = {.label_selector = *req->label_selector ? req->label_selector : NULL,
                          .field_selector = *req->field_selector ? req->field_selector : NULL,
                          .limit = LIST_PAGE};
    kube_call_spec_t spec = {.method = "GET", .path = req->path, .list = req->list ? &ro : NULL,
                             .response_cap = BUF_DEFAULT_CAP};
    s->call = kube_call_start(s->set->lc, s->set->c, &spec, on_slot_done, s);
    if (s->call)
        return;
    kube_error_set(&req->err, KERR_CONFIG, "%s %s: out of memory", req->list ? "LIST" : "GET", req->path);
    slot_end(s);
}

reads_t *reads_start(loop_curl_t *lc, kube_client_t *c, reads_req_t *req, size_t n, reads_done_fn *done,
                     void *arg)
{
    if (n > READS_MAX)
        return NULL;
    reads_t *r = malloc(sizeof(*r));
    if (!r)
        return NULL;
    /* pending: one more than the requests, held until all are started, so that a request
     * that ends at once does not end the set (and call done) from inside reads_start */
    *r = (reads_t){.lc = lc, .c = c, .n = n, .done = done, .arg = arg, .pending = (int)n + 1};
    for (size_t k = 0; k < n; k++) {
        r->slot[k].set = r;
        r->slot[k].req = &req[k];
        req[k].obj = NULL;
        kube_error_clear(&req[k].err);
    }
    for (size_t k = 0; k < n; k++)
        slot_start(&r->slot[k]);
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
    reads_t *r = r_p ? *r_p : NULL;
    if (!r)
        return;
    *r_p = NULL;
    for (size_t k = 0; k < r->n; k++) {
        json_object_put(r->slot[k].req->obj);
        r->slot[k].req->obj = NULL;
    }
    set_free(r);
}
