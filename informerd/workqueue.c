#include "workqueue.h"

#include "backoff.h"
#include "dlist.h"
#include "hashmap.h"
#include "ratelimit.h"

#include <assert.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NOT_IN_HEAP SIZE_MAX

_Static_assert(WORKQUEUE_CAUSES_MAX <= 256, "a wait's cause is kept in an unsigned char");

/* The two deadline heaps an item can sit in, one slot each. */
enum { HEAP_DELAYED = 0, HEAP_QUARANTINE = 1 };

/* Which intrusive list an item's prev/next links belong to. A processing item is never
 * in the ready list: added meanwhile, it waits as dirty until done(). */
typedef enum { LIST_NONE = 0, LIST_READY, LIST_PROCESSING } wq_list_id_t;

typedef struct wq_item {
    struct wq_item *prev, *next;
    wq_list_id_t list;
    bool dirty;        /* needs processing: ready, parked, or re-added while processing */
    bool parked;       /* dirty and quarantined: held back from the ready list */
    bool quarantined;
    bool has_add_time; /* add_ns is set (for workqueue_queue_duration_seconds) */
    bool soon;         /* its delayed deadline is add_soon's or requeue_after's alone: get() drops it */
    unsigned char wait_cause; /* the cause of the add its delayed deadline is (workqueue_on_outcome) */
    unsigned failures; /* rate limiter's count, reset by forget() */
    unsigned crashes;  /* abandon()s, reset by forget() and unquarantine() */
    int64_t add_ns;    /* when it became dirty */
    int64_t start_ns;  /* when get() handed it out */
    size_t hpos[2];    /* index in each heap, NOT_IN_HEAP when absent */
    int64_t hdeadline[2];
    uint64_t hseq[2];  /* insertion order: equal deadlines come out FIFO */
    char key[];
} wq_item_t;

typedef struct {
    wq_item_t *head, *tail;
    size_t n;
} wq_list_t;

typedef struct {
    wq_item_t **a;
    size_t n, cap;
    int slot; /* HEAP_DELAYED or HEAP_QUARANTINE */
} wq_heap_t;

struct workqueue {
    char *name;
    const char *labels[1]; /* metric label values: the name */
    hm_t *items;           /* key -> wq_item_t, for every key with state */
    wq_list_t ready;
    wq_list_t processing;  /* in get() order: the head is the longest running */
    wq_heap_t delayed;     /* add_after deadlines */
    wq_heap_t quarantine;  /* quarantine ends */
    workqueue_outcome_fn outcome; /* what each add became, by cause (or NULL) */
    void *outcome_arg;
    uint64_t heap_seq;
    size_t ndirty;
    bool shutting_down;
    int64_t base_ns, max_ns;
    ratelimit_t bucket;
    metric_family_t *m_depth, *m_adds, *m_queue_duration, *m_work_duration,
        *m_unfinished, *m_longest, *m_retries;
};

/* ---- intrusive lists ---- */

static void list_push(wq_list_t *l, wq_list_id_t id, wq_item_t *it)
{
    assert(it->list == LIST_NONE);
    it->list = id;
    DLIST_PUSH_BACK_TAILED(l->head, l->tail, it, prev, next);
    l->n++;
}

static void list_unlink(wq_list_t *l, wq_item_t *it)
{
    DLIST_UNLINK_TAILED(l->head, l->tail, it, prev, next);
    it->list = LIST_NONE;
    l->n--;
}

/* ---- deadline heaps (min-heaps on deadline, then insertion order) ---- */

static bool heap_less(const wq_heap_t *h, const wq_item_t *x, const wq_item_t *y)
{
    int s = h->slot;
    if (x->hdeadline[s] != y->hdeadline[s])
        return x->hdeadline[s] < y->hdeadline[s];
    return x->hseq[s] < y->hseq[s];
}

static void heap_set(wq_heap_t *h, size_t i, wq_item_t *it)
{
    h->a[i] = it;
    it->hpos[h->slot] = i;
}

static void heap_up(wq_heap_t *h, size_t i)
{
    wq_item_t *it = h->a[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(h, it, h->a[parent]))
            break;
        heap_set(h, i, h->a[parent]);
        i = parent;
    }
    heap_set(h, i, it);
}

static void heap_down(wq_heap_t *h, size_t i)
{
    wq_item_t *it = h->a[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && heap_less(h, h->a[child + 1], h->a[child]))
            child++;
        if (!heap_less(h, h->a[child], it))
            break;
        heap_set(h, i, h->a[child]);
        i = child;
    }
    heap_set(h, i, it);
}

/* Make room for one more entry; -1 when out of memory (heap unchanged). */
static int heap_reserve_one(wq_heap_t *h)
{
    if (h->n < h->cap)
        return 0;
    size_t cap = h->cap ? h->cap * 2 : 64;
    wq_item_t **a = realloc(h->a, cap * sizeof(*a));
    if (!a)
        return -1;
    h->a = a;
    h->cap = cap;
    return 0;
}

/* Insert it with deadline; room must have been reserved. */
static void heap_push(wq_heap_t *h, wq_item_t *it, int64_t deadline, uint64_t seq)
{
    assert(h->n < h->cap && it->hpos[h->slot] == NOT_IN_HEAP);
    it->hdeadline[h->slot] = deadline;
    it->hseq[h->slot] = seq;
    h->n++;
    h->a[h->n - 1] = it;
    heap_up(h, h->n - 1);
}

/* Change its deadline, keeping its place in the order of equal deadlines. */
static void heap_update(wq_heap_t *h, wq_item_t *it, int64_t deadline)
{
    it->hdeadline[h->slot] = deadline;
    size_t i = it->hpos[h->slot];
    heap_up(h, i);
    heap_down(h, it->hpos[h->slot]);
}

static void heap_remove(wq_heap_t *h, wq_item_t *it)
{
    size_t i = it->hpos[h->slot];
    assert(i < h->n && h->a[i] == it);
    it->hpos[h->slot] = NOT_IN_HEAP;
    h->n--;
    if (i == h->n)
        return;
    wq_item_t *moved = h->a[h->n];
    heap_set(h, i, moved);
    heap_up(h, i);
    heap_down(h, moved->hpos[h->slot]);
}

static const wq_item_t *heap_top(const wq_heap_t *h)
{
    return h->n ? h->a[0] : NULL;
}

/* ---- per-key state ---- */

static bool valid_key(const char *key)
{
    return key && *key;
}

static wq_item_t *item_find(const workqueue_t *q, const char *key)
{
    return valid_key(key) ? hm_get(q->items, key) : NULL;
}

/* key's state, created when missing; NULL when out of memory. */
static wq_item_t *item_get_or_create(workqueue_t *q, const char *key)
{
    wq_item_t *it = hm_get(q->items, key);
    if (it)
        return it;
    size_t len = strlen(key);
    it = calloc(1, sizeof(*it) + len + 1);
    if (!it)
        return NULL;
    memcpy(it->key, key, len + 1);
    it->hpos[HEAP_DELAYED] = it->hpos[HEAP_QUARANTINE] = NOT_IN_HEAP;
    if (hm_put(q->items, it->key, it, NULL)) {
        free(it);
        return NULL;
    }
    return it;
}

/* Free key's state once nothing refers to it and it has nothing to remember. */
static void item_release_if_idle(workqueue_t *q, wq_item_t *it)
{
    if (it->dirty || it->list != LIST_NONE || it->hpos[HEAP_DELAYED] != NOT_IN_HEAP ||
        it->quarantined || it->failures || it->crashes)
        return;
    hm_remove(q->items, it->key);
    free(it);
}

static void update_depth(workqueue_t *q)
{
    metric_gauge_set(q->m_depth, q->labels, (double)q->ndirty);
}

/* Put a dirty key where get() finds it, unless its quarantine holds it back. */
static void make_ready(workqueue_t *q, wq_item_t *it)
{
    if (it->quarantined) {
        it->parked = true;
        return;
    }
    list_push(&q->ready, LIST_READY, it);
}

/* Tell the outcome callback what an add of cause became. */
static void tell(const workqueue_t *q, unsigned cause, workqueue_outcome_t outcome)
{
    if (q->outcome)
        q->outcome(q->outcome_arg, cause, outcome);
}

/* client-go's Add, for cause: dedup on dirty; a processing key waits for done(). */
static void enqueue(workqueue_t *q, wq_item_t *it, unsigned cause, int64_t now_ns)
{
    tell(q, cause, it->dirty ? WORKQUEUE_MERGED : WORKQUEUE_QUEUED);
    if (it->dirty)
        return;
    it->dirty = true;
    q->ndirty++;
    metric_counter_add(q->m_adds, q->labels, 1);
    update_depth(q);
    if (!it->has_add_time) {
        it->add_ns = now_ns;
        it->has_add_time = true;
    }
    if (it->list == LIST_PROCESSING)
        return;
    make_ready(q, it);
}

static int64_t add_saturating(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

/* client-go's AddAfter for an item whose delayed-heap room is reserved (not counted as a
 * retry: schedule() counts). */
static void schedule_quiet(workqueue_t *q, wq_item_t *it, int64_t delay_ns, unsigned cause, int64_t now_ns)
{
    if (delay_ns <= 0) {
        enqueue(q, it, cause, now_ns);
        return;
    }
    int64_t deadline = add_saturating(now_ns, delay_ns);
    if (it->hpos[HEAP_DELAYED] == NOT_IN_HEAP) {
        heap_push(&q->delayed, it, deadline, q->heap_seq++);
    } else if (deadline < it->hdeadline[HEAP_DELAYED]) {
        heap_update(&q->delayed, it, deadline);
        tell(q, it->wait_cause, WORKQUEUE_MERGED); /* this add's wait replaces it */
    } else {
        tell(q, cause, WORKQUEUE_MERGED); /* the wait there comes first */
        return;
    }
    it->wait_cause = (unsigned char)cause;
}

/* schedule_quiet, counted as a retry. */
static void schedule(workqueue_t *q, wq_item_t *it, int64_t delay_ns, unsigned cause, int64_t now_ns)
{
    metric_counter_add(q->m_retries, q->labels, 1);
    it->soon = false;
    schedule_quiet(q, it, delay_ns, cause, now_ns);
}

/* The rate limiter's delay for it (MAX of per-key backoff and the bucket); counts the
 * failure. */
static int64_t rate_limit_delay(workqueue_t *q, wq_item_t *it, int64_t now_ns)
{
    int64_t per_key = backoff_exponential(q->base_ns, q->max_ns, it->failures);
    if (it->failures < UINT_MAX)
        it->failures++;
    int64_t overall = ratelimit_reserve(&q->bucket, now_ns);
    return per_key > overall ? per_key : overall;
}

/* done() on an item known to be processing. */
static void finish(workqueue_t *q, wq_item_t *it, int64_t now_ns)
{
    metric_histogram_observe(q->m_work_duration, q->labels,
                             (double)(now_ns - it->start_ns) / 1e9);
    list_unlink(&q->processing, it);
    if (it->dirty)
        make_ready(q, it);
}

/* End its quarantine; a parked key joins the end of the ready list. */
static void end_quarantine(workqueue_t *q, wq_item_t *it)
{
    heap_remove(&q->quarantine, it);
    it->quarantined = false;
    if (it->parked) {
        it->parked = false;
        list_push(&q->ready, LIST_READY, it);
    }
}

/* ---- public API ---- */

workqueue_t *workqueue_new(const char *name, metrics_registry_t *reg)
{
    if (!valid_key(name))
        return NULL;
    workqueue_t *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->name = strdup(name);
    q->items = hm_new(0);
    if (!q->name || !q->items) {
        workqueue_destroy(&q);
        return NULL;
    }
    q->labels[0] = q->name;
    q->delayed.slot = HEAP_DELAYED;
    q->quarantine.slot = HEAP_QUARANTINE;
    workqueue_set_rate_limits(q, WORKQUEUE_BASE_DELAY_NS, WORKQUEUE_MAX_DELAY_NS,
                              WORKQUEUE_QPS, WORKQUEUE_BURST);
    if (reg) {
        /* client-go's buckets: 10 ns .. 10 s, factor 10. */
        double b[10];
        metrics_exponential_buckets(10e-9, 10, 10, b);
        q->m_depth = metrics_gauge(reg, "workqueue_depth", "Current depth of workqueue",
                                   "name");
        q->m_adds = metrics_counter(reg, "workqueue_adds_total",
                                    "Total number of adds handled by workqueue", "name");
        q->m_queue_duration = metrics_histogram(
            reg, "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.", "name",
            b, 10);
        q->m_work_duration = metrics_histogram(
            reg, "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.", "name", b, 10);
        q->m_unfinished = metrics_gauge(
            reg, "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            "name");
        q->m_longest = metrics_gauge(
            reg, "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            "name");
        q->m_retries = metrics_counter(reg, "workqueue_retries_total",
                                       "Total number of retries handled by workqueue", "name");
        update_depth(q);
    }
    return q;
}

void workqueue_destroy(workqueue_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    workqueue_t *q = *self_p;
    hm_destroy_with(&q->items, free);
    free(q->delayed.a);
    free(q->quarantine.a);
    free(q->name);
    free(q);
    *self_p = NULL;
}

void workqueue_set_rate_limits(workqueue_t *q, int64_t base_ns, int64_t max_ns, double qps,
                               int burst)
{
    q->base_ns = base_ns;
    q->max_ns = max_ns;
    ratelimit_init(&q->bucket, qps, burst);
}

void workqueue_on_outcome(workqueue_t *q, workqueue_outcome_fn fn, void *arg)
{
    q->outcome = fn;
    q->outcome_arg = arg;
}

int workqueue_add(workqueue_t *q, const char *key, int64_t now_ns)
{
    return workqueue_put(q, key, WORKQUEUE_NOW, 0, 0, now_ns);
}

/* Whether a hand-out of it comes anyway by deadline: it is due (queued, or marked to be
 * queued again), being processed, or waits for a deadline no later. */
static bool hand_out_coming(const wq_item_t *it, int64_t deadline)
{
    return it->dirty || it->list == LIST_PROCESSING ||
           (it->hpos[HEAP_DELAYED] != NOT_IN_HEAP && it->hdeadline[HEAP_DELAYED] <= deadline);
}

/* A wait for it of a "soon" kind (requeue_after's, add_soon's), quiet; a wait of another
 * kind (add_after's, a backoff) it has already keeps get() from dropping it. */
static void schedule_soon(workqueue_t *q, wq_item_t *it, int64_t delay_ns, unsigned cause, int64_t now_ns)
{
    if (it->hpos[HEAP_DELAYED] == NOT_IN_HEAP)
        it->soon = true;
    schedule_quiet(q, it, delay_ns, cause, now_ns);
}

/* What the adds share: the key and cause checked, room in the delayed heap reserved for a
 * delayed one (so that scheduling cannot fail), the item found or made, then scheduled as how says.
 * Returns 0 (also while shutting down: the add is dropped), or -1 for a bad key or cause
 * or out of memory (the queue unchanged). */
int workqueue_put(workqueue_t *q, const char *key, workqueue_how_t how, int64_t delay_ns, unsigned cause,
                  int64_t now_ns)
{
    if (!valid_key(key) || cause >= WORKQUEUE_CAUSES_MAX)
        return -1;
    if (q->shutting_down) {
        tell(q, cause, WORKQUEUE_DROPPED);
        return 0;
    }
    int room = how == WORKQUEUE_NOW || how == WORKQUEUE_UNLESS_COMING || heap_reserve_one(&q->delayed) == 0;
    wq_item_t *it = room ? item_get_or_create(q, key) : NULL;
    if (!it)
        return -1;
    switch (how) {
    case WORKQUEUE_NOW:
        enqueue(q, it, cause, now_ns);
        break;
    case WORKQUEUE_AFTER:
        schedule(q, it, delay_ns, cause, now_ns);
        break;
    case WORKQUEUE_REQUEUE:
        metric_counter_add(q->m_retries, q->labels, 1);
        schedule_soon(q, it, delay_ns, cause, now_ns);
        break;
    case WORKQUEUE_SOON:
        if (it->dirty) /* queued, or queued again when its reconcile is done */
            tell(q, cause, WORKQUEUE_MERGED);
        else
            schedule_soon(q, it, delay_ns, cause, now_ns);
        break;
    case WORKQUEUE_RATE_LIMITED:
        schedule(q, it, rate_limit_delay(q, it, now_ns), cause, now_ns);
        break;
    case WORKQUEUE_UNLESS_COMING:
        if (hand_out_coming(it, add_saturating(now_ns, delay_ns)))
            tell(q, cause, WORKQUEUE_MERGED);
        else
            enqueue(q, it, cause, now_ns);
        break;
    }
    return 0;
}

int workqueue_add_after(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns)
{
    return workqueue_put(q, key, WORKQUEUE_AFTER, delay_ns, 0, now_ns);
}

int workqueue_requeue_after(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns)
{
    return workqueue_put(q, key, WORKQUEUE_REQUEUE, delay_ns, 0, now_ns);
}

int workqueue_add_soon(workqueue_t *q, const char *key, int64_t delay_ns, int64_t now_ns)
{
    return workqueue_put(q, key, WORKQUEUE_SOON, delay_ns, 0, now_ns);
}

int workqueue_add_rate_limited(workqueue_t *q, const char *key, int64_t now_ns)
{
    return workqueue_put(q, key, WORKQUEUE_RATE_LIMITED, 0, 0, now_ns);
}

void workqueue_advance(workqueue_t *q, int64_t now_ns)
{
    const wq_item_t *top;
    while ((top = heap_top(&q->delayed)) && top->hdeadline[HEAP_DELAYED] <= now_ns) {
        wq_item_t *it = q->delayed.a[0];
        heap_remove(&q->delayed, it);
        enqueue(q, it, it->wait_cause, now_ns);
    }
    while ((top = heap_top(&q->quarantine)) && top->hdeadline[HEAP_QUARANTINE] <= now_ns) {
        wq_item_t *it = q->quarantine.a[0];
        end_quarantine(q, it);
        item_release_if_idle(q, it);
    }
}

const char *workqueue_get(workqueue_t *q, int64_t now_ns)
{
    workqueue_advance(q, now_ns);
    wq_item_t *it = q->ready.head;
    if (!it)
        return NULL;
    list_unlink(&q->ready, it);
    it->dirty = false;
    q->ndirty--;
    if (it->soon && it->hpos[HEAP_DELAYED] != NOT_IN_HEAP) {
        heap_remove(&q->delayed, it); /* the reconcile handed out now reads that change */
        tell(q, it->wait_cause, WORKQUEUE_DROPPED);
    }
    it->soon = false;
    update_depth(q);
    if (it->has_add_time) {
        metric_histogram_observe(q->m_queue_duration, q->labels,
                                 (double)(now_ns - it->add_ns) / 1e9);
        it->has_add_time = false;
    }
    it->start_ns = now_ns;
    list_push(&q->processing, LIST_PROCESSING, it);
    return it->key;
}

int workqueue_done(workqueue_t *q, const char *key, int64_t now_ns)
{
    wq_item_t *it = item_find(q, key);
    if (!it || it->list != LIST_PROCESSING)
        return -1;
    finish(q, it, now_ns);
    item_release_if_idle(q, it); /* key may point into it: not used after this */
    return 0;
}

void workqueue_forget(workqueue_t *q, const char *key)
{
    wq_item_t *it = item_find(q, key);
    if (!it)
        return;
    it->failures = 0;
    it->crashes = 0;
    item_release_if_idle(q, it);
}

unsigned workqueue_num_requeues(const workqueue_t *q, const char *key)
{
    const wq_item_t *it = item_find(q, key);
    return it ? it->failures : 0;
}

int workqueue_abandon(workqueue_t *q, const char *key, int64_t now_ns)
{
    wq_item_t *it = item_find(q, key);
    if (!it || it->list != LIST_PROCESSING)
        return -1;
    /* Reserve first so that nothing below can fail half-way. */
    if (!q->shutting_down && heap_reserve_one(&q->delayed))
        return -1;
    if (it->crashes < UINT_MAX)
        it->crashes++;
    finish(q, it, now_ns);
    if (!q->shutting_down)
        schedule(q, it, rate_limit_delay(q, it, now_ns), 0, now_ns);
    return 0;
}

unsigned workqueue_crash_count(const workqueue_t *q, const char *key)
{
    const wq_item_t *it = item_find(q, key);
    return it ? it->crashes : 0;
}

int workqueue_quarantine(workqueue_t *q, const char *key, int64_t until_ns)
{
    if (!valid_key(key))
        return -1;
    if (heap_reserve_one(&q->quarantine))
        return -1;
    wq_item_t *it = item_get_or_create(q, key);
    if (!it)
        return -1;
    if (it->quarantined) {
        heap_update(&q->quarantine, it, until_ns);
        return 0;
    }
    heap_push(&q->quarantine, it, until_ns, q->heap_seq++);
    it->quarantined = true;
    if (it->list == LIST_READY) {
        list_unlink(&q->ready, it);
        it->parked = true;
    }
    return 0;
}

void workqueue_unquarantine(workqueue_t *q, const char *key)
{
    wq_item_t *it = item_find(q, key);
    if (!it || !it->quarantined)
        return;
    end_quarantine(q, it);
    it->crashes = 0;
    item_release_if_idle(q, it);
}

int workqueue_is_quarantined(const workqueue_t *q, const char *key)
{
    const wq_item_t *it = item_find(q, key);
    return it && it->quarantined;
}

int64_t workqueue_next_deadline(const workqueue_t *q, int64_t now_ns)
{
    int64_t next = INT64_MAX;
    const wq_item_t *d = heap_top(&q->delayed);
    const wq_item_t *r = heap_top(&q->quarantine);
    if (d && d->hdeadline[HEAP_DELAYED] < next)
        next = d->hdeadline[HEAP_DELAYED];
    if (r && r->hdeadline[HEAP_QUARANTINE] < next)
        next = r->hdeadline[HEAP_QUARANTINE];
    return next < now_ns ? now_ns : next;
}

void workqueue_shut_down(workqueue_t *q)
{
    if (q->shutting_down)
        return;
    q->shutting_down = true;
    /* client-go's delaying queue stops its waiting loop: delayed keys are dropped. */
    size_t n = q->delayed.n;
    q->delayed.n = 0;
    for (size_t i = 0; i < n; i++) {
        q->delayed.a[i]->hpos[HEAP_DELAYED] = NOT_IN_HEAP;
        tell(q, q->delayed.a[i]->wait_cause, WORKQUEUE_DROPPED);
    }
    for (size_t i = 0; i < n; i++)
        item_release_if_idle(q, q->delayed.a[i]);
}

int workqueue_shutting_down(const workqueue_t *q)
{
    return q->shutting_down;
}

size_t workqueue_len(const workqueue_t *q)
{
    return q->ready.n;
}

size_t workqueue_processing_count(const workqueue_t *q)
{
    return q->processing.n;
}

size_t workqueue_delayed_count(const workqueue_t *q)
{
    return q->delayed.n;
}

int workqueue_is_processing(const workqueue_t *q, const char *key)
{
    const wq_item_t *it = item_find(q, key);
    return it && it->list == LIST_PROCESSING;
}

void workqueue_update_metrics(workqueue_t *q, int64_t now_ns)
{
    double unfinished = 0, longest = 0;
    for (const wq_item_t *it = q->processing.head; it; it = it->next) {
        double s = (double)(now_ns - it->start_ns) / 1e9;
        if (s < 0)
            s = 0;
        unfinished += s;
        if (s > longest)
            longest = s;
    }
    metric_gauge_set(q->m_unfinished, q->labels, unfinished);
    metric_gauge_set(q->m_longest, q->labels, longest);
}
