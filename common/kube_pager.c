/* kube_pager: the paginated LIST driven by the caller's loop (kube_client.h). */
#include "kube_client.h"

#include "clock.h"
#include "jsonx.h"
#include "kube_client_internal.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- non-blocking pager ------------------------------------------------------------- */

/* The Accept header of a metadata-only LIST (client-go's metadata client): every item comes
 * as a PartialObjectMetadata, its spec, data and status left out. */
#define PAGER_ACCEPT_METADATA \
    "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

struct kube_pager {
    kube_client_t *c;
    char *path;
    kube_req_opts_t ro;  /* ro.limit is the page size of the next request */
    char *label_selector, *field_selector, *resource_version, *resource_version_match;
    long base_limit;     /* the caller's page size, which a shrunk page grows back to */
    int paged;
    int pages;
    int meta_only;       /* the page in flight asks for metadata only */
    int unpaged_too_large; /* the unpaged fallback was over the cap: no second fallback */
    unsigned shrinks;
    char *cont;          /* continue token of the next page, NULL on the first */
    CURL *easy;
    struct curl_slist *headers;
    buf_t body;
    int too_large;
    int64_t started_ns;
    json_object *items;
    json_object *skipped; /* metadata of the objects too large for a page of one */
    char *rv;
};

kube_pager_t *kube_pager_new(kube_client_t *c, const char *path, const kube_req_opts_t *ro)
{
    kube_pager_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    int oom = 0;
    p->c = c;
    p->path = str_dup_opt(path ? path : "", &oom);
    if (ro) {
        p->ro = *ro;
        p->ro.label_selector = p->label_selector = str_dup_opt(ro->label_selector, &oom);
        p->ro.field_selector = p->field_selector = str_dup_opt(ro->field_selector, &oom);
        p->ro.resource_version = p->resource_version = str_dup_opt(ro->resource_version, &oom);
        p->ro.resource_version_match = p->resource_version_match = str_dup_opt(ro->resource_version_match, &oom);
    }
    p->base_limit = p->ro.limit > 0 ? p->ro.limit : 0;
    p->paged = 1;
    p->items = json_object_new_array();
    p->skipped = json_object_new_array();
    buf_init(&p->body, c->opts.max_response_bytes);
    if (oom || !p->items || !p->skipped)
        kube_pager_destroy(&p);
    return p;
}

static void pager_drop_handle(kube_pager_t *p)
{
    if (p->easy)
        curl_easy_cleanup(p->easy);
    p->easy = NULL;
    curl_slist_free_all(p->headers);
    p->headers = NULL;
}

static size_t pager_write(char *data, size_t size, size_t n, void *user)
{
    kube_pager_t *p = user;
    if (buf_append(&p->body, data, size * n)) {
        p->too_large = 1;
        return 0;
    }
    return size * n;
}

/* Replace the Accept header of p's handle by the metadata-only one, in place (the list's
 * first node is the handle's credential ticket, which its header callback reads).
 * Returns 0, or -1 when out of memory (the handle keeps its headers). */
static int pager_accept_metadata(kube_pager_t *p)
{
    return kube_client_stream_accept(p->headers, p->ro.metadata_only ? KUBE_ACCEPT_METADATA_LIST
                                                                      : PAGER_ACCEPT_METADATA);
}

CURL *kube_pager_start(kube_pager_t *p, kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    kube_error_clear(err);
    pager_drop_handle(p);
    buf_reset(&p->body);
    p->too_large = 0;
    buf_t q;
    buf_init(&q, 64 << 10);
    if (kc_list_query(&q, &p->ro, p->cont, p->paged)) {
        kc_query_error(err, "GET", p->path);
        buf_free(&q);
        return NULL;
    }
    p->easy = kube_client_stream_handle(p->c, p->path, buf_str(&q), p->c->opts.timeout_ms, &p->headers, err);
    buf_free(&q);
    if (!p->easy)
        return NULL;
    if ((p->meta_only || p->ro.metadata_only) && pager_accept_metadata(p)) {
        kube_error_set(err, KERR_CONFIG, "out of memory");
        kube_error_set_request(err, "GET", p->path);
        pager_drop_handle(p);
        return NULL;
    }
    curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, pager_write);
    curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, p);
    p->started_ns = clock_mono_ns();
    return p->easy;
}

/* Forget what the pages so far brought (the list starts over). Returns 0, or -1 when out
 * of memory. */
static int pager_forget_items(kube_pager_t *p)
{
    json_object_put(p->items);
    json_object_put(p->skipped);
    p->items = json_object_new_array();
    p->skipped = json_object_new_array();
    free(p->cont);
    p->cont = NULL;
    free(p->rv);
    p->rv = NULL;
    return p->items && p->skipped ? 0 : -1;
}

/* Start over from the first page without paging (an expired continue token). */
static int pager_restart_unpaged(kube_pager_t *p)
{
    rlog_info("continue token expired; listing again without paging", "path", p->path);
    p->paged = 0;
    return pager_forget_items(p);
}

/* A response was over the cap (its bytes were dropped as they came). Decide what the
 * next request is: KUBE_PAGER_MORE, or KUBE_PAGER_ERROR with err set. */
static kube_pager_state_t pager_too_large(kube_pager_t *p, kube_error_t *err)
{
    size_t cap = p->c->opts.max_response_bytes;
    char limit[32];
    if (!p->paged || p->ro.limit <= 0) {
        /* One unpaged response cannot be made smaller: list again in pages, once. */
        if (p->unpaged_too_large || pager_forget_items(p)) {
            kube_error_set(err, KERR_DECODE, "response body exceeds %zu bytes", cap);
            return KUBE_PAGER_ERROR;
        }
        p->unpaged_too_large = 1;
        p->paged = 1;
        p->ro.limit = p->base_limit > 0 ? p->base_limit : 500;
        rlog_warn("LIST response over the response cap; listing again in pages", "path", p->path);
        return KUBE_PAGER_MORE;
    }
    if (p->meta_only || (p->ro.metadata_only && p->ro.limit <= 1)) {
        kube_error_set(err, KERR_DECODE,
                       "response body exceeds %zu bytes even for the metadata of one object", cap);
        return KUBE_PAGER_ERROR;
    }
    p->shrinks++;
    if (p->ro.limit > 1) {
        /* The same continue token with a smaller limit: the server starts from the same
         * key, so no item is skipped or repeated. */
        p->ro.limit /= 2;
        snprintf(limit, sizeof(limit), "%ld", p->ro.limit);
        rlog_warn("LIST page over the response cap; retrying it with a smaller limit", "path", p->path,
                  "limit", limit);
        return KUBE_PAGER_MORE;
    }
    /* One object alone is over the cap: ask for its metadata only, so the list goes on
     * past it and the caller can still name it (and act on its deletion). */
    p->meta_only = 1;
    rlog_warn("one object is larger than the response cap; listing its metadata only", "path", p->path);
    return KUBE_PAGER_MORE;
}

/* Add a page's items to p->items (or p->skipped, for a metadata-only page) and take its
 * resourceVersion. Returns 0, or -1 when out of memory. */
static int pager_collect(kube_pager_t *p, json_object *page)
{
    collect_t col = {p->meta_only ? p->skipped : p->items, p->rv, 0};
    int rc = kc_collect_page(page, &col);
    p->rv = col.rv; /* collect_page freed the old one */
    return rc || col.failed ? -1 : 0;
}

/* The limit after a page that fitted: as many items of this page's average size as fill
 * three quarters of the cap, so that pages of large objects are asked small before they
 * fail, but never more than twice the limit that just fitted (grow back step by step,
 * as TCP's window does after a loss) nor more than the caller's page size. */
static long pager_next_limit(const kube_pager_t *p, json_object *page)
{
    json_object *items = NULL;
    size_t n = json_object_object_get_ex(page, "items", &items) && json_object_is_type(items, json_type_array)
                   ? json_object_array_length(items)
                   : 0;
    long next = p->ro.limit > p->base_limit / 2 ? p->base_limit : p->ro.limit * 2;
    if (n == 0)
        return next;
    size_t per_item = p->body.len / n + 1;
    size_t fit = p->c->opts.max_response_bytes / 4 * 3 / per_item;
    if (fit < 1)
        fit = 1;
    return (size_t)next < fit ? next : (long)fit;
}

/* The page in p's body, a JSON object; NULL with err set when it is not one. */
static json_object *parse_page(kube_pager_t *p, kube_error_t *err)
{
    char why[256];
    json_object *page = kc_parse_json(p->body.data, p->body.len, why, sizeof(why));
    if (page && json_object_is_type(page, json_type_object))
        return page;
    kube_error_set(err, KERR_DECODE, "LIST response is not a JSON object%s%s", page ? "" : ": ", page ? "" : why);
    json_object_put(page);
    return NULL;
}

kube_pager_state_t kube_pager_finish(kube_pager_t *p, CURLcode code, kube_error_t *err)
{
    kube_error_t local;
    if (!err)
        err = &local;
    kube_error_clear(err);
    long status = 0;
    char *url = NULL;
    if (p->easy) {
        curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(p->easy, CURLINFO_EFFECTIVE_URL, &url);
        kube_client_count_request(p->c, "GET", code, status, p->started_ns);
    }
    kube_pager_state_t st = KUBE_PAGER_ERROR;
    json_object *page = NULL;
    if (!p->easy) {
        kube_error_set(err, KERR_CONFIG, "no page in flight");
    } else if (p->too_large) {
        st = pager_too_large(p, err);
    } else if (code != CURLE_OK) {
        kube_error_set_transport(err, code, code == CURLE_OPERATION_TIMEDOUT, curl_easy_strerror(code), "");
    } else if (status != 200) {
        err->retry_after_s = kc_stream_retry_after(p->headers);
        kube_error_from_response((int)status, p->body.data, p->body.len, err);
        if (err->code == KERR_GONE && p->cont && p->paged && p->ro.limit > 0 && !p->unpaged_too_large) {
            st = pager_restart_unpaged(p) ? KUBE_PAGER_ERROR : KUBE_PAGER_MORE;
            p->meta_only = 0;
            if (st == KUBE_PAGER_ERROR)
                kube_error_set(err, KERR_CONFIG, "out of memory");
            else
                kube_error_clear(err);
        }
    } else if (!(page = parse_page(p, err))) {
        /* err says why */
    } else if (pager_collect(p, page)) {
        kube_error_set(err, KERR_CONFIG, "out of memory collecting LIST items");
    } else {
        const char *next = JSONX_STR_AT(page, "metadata", "continue");
        p->pages++;
        if (p->meta_only)
            p->meta_only = 0;
        else if (p->paged && p->base_limit > 0)
            p->ro.limit = pager_next_limit(p, page);
        if (!next || !*next) {
            st = KUBE_PAGER_DONE;
        } else if ((p->cont && strcmp(p->cont, next) == 0) || p->pages >= MAX_LIST_PAGES) {
            kube_error_set(err, KERR_DECODE, "LIST does not end: continue token repeats");
        } else {
            free(p->cont);
            p->cont = strdup(next);
            st = p->cont ? KUBE_PAGER_MORE : KUBE_PAGER_ERROR;
            if (!p->cont)
                kube_error_set(err, KERR_CONFIG, "out of memory");
        }
    }
    if (st == KUBE_PAGER_ERROR)
        kube_error_set_request(err, "GET", url ? url : p->path);
    json_object_put(page);
    pager_drop_handle(p);
    buf_reset(&p->body);
    return st;
}

uint64_t kc_pager_credential(const kube_pager_t *p)
{
    return kc_stream_credential(p->headers);
}

json_object *kube_pager_items(const kube_pager_t *p)
{
    return p->items;
}

/* The array in *slot, handed to the caller and replaced by a fresh empty one; NULL (and
 * *slot unchanged) when out of memory. */
static json_object *take_array(json_object **slot)
{
    json_object *fresh = json_object_new_array();
    if (!fresh)
        return NULL;
    json_object *taken = *slot;
    *slot = fresh;
    return taken;
}

json_object *kube_pager_take_skipped(kube_pager_t *p)
{
    return take_array(&p->skipped);
}

long kube_pager_limit(const kube_pager_t *p)
{
    return p->ro.limit;
}

unsigned kube_pager_shrinks(const kube_pager_t *p)
{
    return p->shrinks;
}

json_object *kube_pager_take_items(kube_pager_t *p)
{
    return take_array(&p->items);
}

const char *kube_pager_rv(const kube_pager_t *p)
{
    return p->rv ? p->rv : "";
}

void kube_pager_destroy(kube_pager_t **p_p)
{
    if (!p_p || !*p_p)
        return;
    kube_pager_t *p = *p_p;
    pager_drop_handle(p);
    buf_free(&p->body);
    json_object_put(p->items);
    json_object_put(p->skipped);
    free(p->rv);
    free(p->cont);
    free(p->path);
    free(p->label_selector);
    free(p->field_selector);
    free(p->resource_version);
    free(p->resource_version_match);
    free(p);
    *p_p = NULL;
}
