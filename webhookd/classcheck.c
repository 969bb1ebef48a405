/* classcheck: may spec.storage.size grow on this StorageClass? See classcheck.h. */
#include "classcheck.h"

#include "clock.h"
#include "dlist.h"
#include "evcurl.h"
#include "jsonx.h"
#include "kube_async.h"
#include "rdc_spec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_SHOWN 253 /* bytes of a class name quoted in a message */
#define DEFAULTS_NAMED 4

/* ---- The decision ------------------------------------------------------------------------ */

static int allows_expansion(const json_object *sc)
{
    json_object *v = jsonx_get(sc, "allowVolumeExpansion");
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static int is_default(const json_object *sc)
{
    json_object *ann = jsonx_get(jsonx_get(sc, "metadata"), "annotations");
    const char *ga = jsonx_str(ann, CLASSCHECK_DEFAULT_ANNOTATION);
    const char *beta = jsonx_str(ann, CLASSCHECK_DEFAULT_ANNOTATION_BETA);
    return (ga && !strcmp(ga, "true")) || (beta && !strcmp(beta, "true"));
}

static const char *class_name(const json_object *sc)
{
    const char *n = jsonx_str(jsonx_get(sc, "metadata"), "name");
    return n ? n : "";
}

/* "cannot grow from "1Gi" to "2Gi"" */
static void put_growth(buf_t *msg, const char *old_size, const char *new_size)
{
    buf_puts(msg, "cannot grow from ");
    rdc_spec_put_quoted(msg, old_size, 32);
    buf_puts(msg, " to ");
    rdc_spec_put_quoted(msg, new_size, 32);
}

static void put_not_allowed(buf_t *msg, const char *what, int plural)
{
    buf_puts(msg, what);
    buf_puts(msg, plural ? " do not allow" : " does not allow");
    buf_puts(msg, " volume expansion (allowVolumeExpansion is not true), so the claims "
                  "cannot be resized; an administrator may set allowVolumeExpansion: true on the class "
                  "if its driver can expand volumes, and the change may then be retried");
}

/* The named class cls, as read (an object). */
static int decide_named(const char *cls, const json_object *sc, buf_t *msg)
{
    if (!json_object_is_type(sc, json_type_object)) {
        buf_puts(msg, ": StorageClass ");
        rdc_spec_put_quoted(msg, cls, NAME_SHOWN);
        buf_puts(msg, " could not be read to check allowVolumeExpansion (the API server answered no "
                      "object); the change may be retried");
        return 1;
    }
    if (allows_expansion(sc))
        return 0;
    buf_t what;
    buf_init(&what, 512);
    buf_puts(&what, ": StorageClass ");
    rdc_spec_put_quoted(&what, cls, NAME_SHOWN);
    put_not_allowed(msg, buf_str(&what), 0);
    buf_free(&what);
    return 1;
}

/* The cluster's default class, from every class (an array): each default must allow it. */
static int decide_default(const json_object *items, buf_t *msg)
{
    size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    size_t defaults = 0, refusing = 0;
    buf_t names;
    buf_init(&names, 2048);
    for (size_t i = 0; i < n; i++) {
        const json_object *sc = json_object_array_get_idx(items, i);
        if (!is_default(sc))
            continue;
        defaults++;
        if (allows_expansion(sc))
            continue;
        if (refusing++ < DEFAULTS_NAMED) {
            buf_puts(&names, refusing > 1 ? ", " : "");
            rdc_spec_put_quoted(&names, class_name(sc), NAME_SHOWN);
        }
    }
    int refuse = defaults == 0 || refusing > 0;
    if (defaults == 0) {
        buf_puts(msg, ": spec.storage.storageClass is unset and the cluster has no default StorageClass "
                      "(none annotated " CLASSCHECK_DEFAULT_ANNOTATION "=true), so whether the claims' class "
                      "allows volume expansion (allowVolumeExpansion) cannot be checked");
    } else if (refusing) {
        buf_puts(msg, defaults > 1 ? ": the cluster has several default StorageClasses and " : ": ");
        if (refusing > DEFAULTS_NAMED)
            buf_printf(&names, " and %zu more", refusing - DEFAULTS_NAMED);
        buf_puts(&names, refusing > 1 ? " (defaults)" : " (the cluster's default)");
        buf_t what;
        buf_init(&what, 4096);
        buf_printf(&what, "StorageClass%s %s", refusing > 1 ? "es" : "", buf_str(&names));
        put_not_allowed(msg, buf_str(&what), refusing > 1);
        buf_free(&what);
    }
    buf_free(&names);
    return refuse;
}

int classcheck_decide(const char *old_size, const char *new_size, const char *cls, const json_object *read,
                      const char *read_err, buf_t *msg)
{
    uint64_t ob = 0, nb = 0;
    if (!old_size || !new_size || rdc_spec_storage_bytes(old_size, &ob) != RDC_STORAGE_OK ||
        rdc_spec_storage_bytes(new_size, &nb) != RDC_STORAGE_OK || nb <= ob)
        return 0;
    buf_t d;
    buf_init(&d, 8192);
    put_growth(&d, old_size, new_size);
    int refuse;
    if (read_err) {
        buf_puts(&d, " now: ");
        if (cls) {
            buf_puts(&d, "StorageClass ");
            rdc_spec_put_quoted(&d, cls, NAME_SHOWN);
        } else {
            buf_puts(&d, "the StorageClasses (for the cluster's default)");
        }
        buf_puts(&d, " could not be read to check allowVolumeExpansion: ");
        buf_puts(&d, read_err); /* kube_error_str's, of a bounded size */
        buf_puts(&d, "; the change may be retried");
        refuse = 1;
    } else {
        refuse = cls ? decide_named(cls, read, &d) : decide_default(read, &d);
    }
    if (refuse)
        buf_puts(msg, buf_str(&d));
    buf_free(&d);
    return refuse;
}

/* ---- The shell ------------------------------------------------------------------------- */

struct classcheck_reader {
    struct event_base *base;
    kube_client_t *client;   /* NULL: every read fails with why_none */
    evcurl_t *curl;          /* NULL without a client */
    int timeout_ms;
    classcheck_read_t *reads; /* in flight */
    char why_none[512];
};

struct classcheck_read {
    classcheck_reader_t *r;
    kube_async_t *req;   /* the GET in flight; NULL when it failed before sending */
    struct event *soon;  /* delivers such a failure from the loop */
    int list;            /* cls NULL: the LIST of every class */
    char err[512];       /* why it failed before sending */
    classcheck_done_fn *done;
    void *arg;
    classcheck_read_t *prev, *next;
};

classcheck_reader_t *classcheck_reader_new(struct event_base *base, kube_client_t *client, const char *why_none)
{
    classcheck_reader_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->base = base;
    r->client = client;
    r->timeout_ms = CLASSCHECK_TIMEOUT_MS;
    snprintf(r->why_none, sizeof(r->why_none), "%s", why_none ? why_none : "no API client");
    if (client && !(r->curl = evcurl_new(base))) {
        free(r);
        return NULL;
    }
    return r;
}

void classcheck_reader_set_timeout(classcheck_reader_t *r, int timeout_ms)
{
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

void classcheck_reader_destroy(classcheck_reader_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    classcheck_reader_t *r = *self_p;
    while (r->reads) {
        classcheck_read_t *rd = r->reads;
        classcheck_read_cancel(&rd);
    }
    evcurl_destroy(&r->curl);
    free(r);
    *self_p = NULL;
}

/* Out of the reader's list, the request dropped, freed. */
static void read_free(classcheck_read_t *rd)
{
    DLIST_UNLINK(rd->r->reads, rd, prev, next);
    if (rd->req)
        evcurl_remove(rd->r->curl, kube_async_handle(rd->req));
    kube_async_destroy(&rd->req);
    if (rd->soon)
        event_free(rd->soon);
    free(rd);
}

void classcheck_read_cancel(classcheck_read_t **read_p)
{
    if (!read_p || !*read_p)
        return;
    read_free(*read_p);
    *read_p = NULL;
}

/* Tell the caller, then free the read. */
static void read_end(classcheck_read_t *rd, const json_object *read, const char *err)
{
    rd->done(read, err, rd->arg);
    read_free(rd);
}

static void on_soon(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    classcheck_read_t *rd = arg;
    read_end(rd, NULL, rd->err);
}

/* The answer of a finished GET: the object, or (a LIST) its items; NULL with err. */
static json_object *answer_of(classcheck_read_t *rd, json_object **root, char *err, size_t errlen)
{
    size_t len = 0;
    const char *body = kube_async_response(rd->req, &len);
    char why[256];
    int rc = jsonx_parse_strict(body, len, CLASSCHECK_MAX_DEPTH, root, why, sizeof(why));
    if (rc) {
        snprintf(err, errlen, "the API server's answer is not JSON: %s", rc < 0 ? "out of memory" : why);
        return NULL;
    }
    if (!rd->list)
        return *root;
    json_object *items = jsonx_get(*root, "items");
    if (!json_object_is_type(items, json_type_array)) {
        snprintf(err, errlen, "the API server's answer is not a list (no items)");
        return NULL;
    }
    return items;
}

static void on_transfer(CURL *easy, CURLcode code, void *arg)
{
    (void)easy;
    classcheck_read_t *rd = arg;
    kube_error_t kerr;
    char err[512] = "";
    json_object *root = NULL, *read = NULL;
    kube_async_end(rd->req, code, &kerr);
    if (kerr.code != KERR_OK)
        kube_error_str(&kerr, err, sizeof(err));
    else
        read = answer_of(rd, &root, err, sizeof(err));
    read_end(rd, read, read ? NULL : err);
    json_object_put(root);
}

/* The GET of rd on the loop; -1 with rd->err filled when it cannot be sent. */
static int read_send(classcheck_read_t *rd, const char *cls)
{
    classcheck_reader_t *r = rd->r;
    kube_error_t kerr;
    buf_t path;
    int rc = -1;
    buf_init(&path, 1024);
    if (!r->client) {
        snprintf(rd->err, sizeof(rd->err), "%s", r->why_none);
    } else if (kube_path(&path, "storage.k8s.io", "v1", NULL, "storageclasses", cls, NULL)) {
        snprintf(rd->err, sizeof(rd->err), "cannot make the path of StorageClass %s", cls ? cls : "(list)");
    } else if (!(rd->req = kube_async_new(r->client, "GET", buf_str(&path), NULL, NULL, 0,
                                          clock_mono_ns() + (int64_t)r->timeout_ms * NS_PER_MS, NULL, NULL,
                                          &kerr))) {
        kube_error_str(&kerr, rd->err, sizeof(rd->err));
    } else {
        if (rd->list)
            kube_async_set_response_cap(rd->req, CLASSCHECK_LIST_CAP);
        if (evcurl_add(r->curl, kube_async_handle(rd->req), on_transfer, rd) == 0)
            rc = 0;
        else
            snprintf(rd->err, sizeof(rd->err), "out of memory starting the request");
    }
    if (rc)
        kube_async_destroy(&rd->req);
    buf_free(&path);
    return rc;
}

classcheck_read_t *classcheck_read_start(classcheck_reader_t *r, const char *cls, classcheck_done_fn *done,
                                         void *arg)
{
    classcheck_read_t *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return NULL;
    *rd = (classcheck_read_t){.r = r, .list = !cls, .done = done, .arg = arg};
    DLIST_PUSH_FRONT(r->reads, rd, prev, next);
    if (read_send(rd, cls) == 0)
        return rd;
    static const struct timeval now = {0, 0};
    if (!(rd->soon = evtimer_new(r->base, on_soon, rd)) || evtimer_add(rd->soon, &now)) {
        read_free(rd);
        return NULL;
    }
    return rd;
}
