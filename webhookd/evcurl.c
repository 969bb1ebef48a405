/* evcurl: a curl multi handle driven by libevent. See evcurl.h. */
#include "evcurl.h"

#include "dlist.h"
#include "loop_curl.h"

#include <stdlib.h>

/* One socket curl watches, with its event (curl_multi_assign keeps the pointer). */
typedef struct sock {
    struct event *ev;
    struct sock *prev, *next;
} sock_t;

/* What a transfer's end goes to (the easy handle's CURLOPT_PRIVATE). */
typedef struct {
    evcurl_done_fn *done;
    void *arg;
} xfer_t;

struct evcurl {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    int running; /* transfers added and not yet reported or removed */
    sock_t *socks;
};

/* A finished transfer (out of the multi) to the callback it was added with. */
static void report(CURL *easy, CURLcode result, void *arg)
{
    evcurl_t *ec = arg;
    xfer_t *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
    ec->running--;
    if (x) {
        xfer_t done = *x;
        free(x);
        done.done(easy, result, done.arg);
    }
}

/* Report every finished transfer. A callback may add transfers or remove others. */
static void collect(evcurl_t *ec)
{
    loop_curl_collect(ec->multi, report, ec);
}

static void on_socket(evutil_socket_t fd, short what, void *arg)
{
    evcurl_t *ec = arg;
    int ev = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running;
    curl_multi_socket_action(ec->multi, fd, ev, &running);
    collect(ec);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    evcurl_t *ec = arg;
    int running;
    curl_multi_socket_action(ec->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    collect(ec);
}

static void sock_free(evcurl_t *ec, sock_t *s)
{
    DLIST_UNLINK(ec->socks, s, prev, next);
    event_free(s->ev);
    free(s);
}

/* curl's CURLMOPT_SOCKETFUNCTION: watch fd for what it asks, or stop watching it. */
static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    (void)easy;
    evcurl_t *ec = ud;
    sock_t *s = sockp;
    if (what == CURL_POLL_REMOVE) {
        if (s)
            sock_free(ec, s);
        curl_multi_assign(ec->multi, fd, NULL);
        return 0;
    }
    if (!s) {
        if (!(s = calloc(1, sizeof(*s))) || !(s->ev = event_new(ec->base, fd, EV_PERSIST, on_socket, ec))) {
            free(s);
            return -1;
        }
        DLIST_PUSH_FRONT(ec->socks, s, prev, next);
        curl_multi_assign(ec->multi, fd, s);
    }
    short kind = (short)(EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0));
    event_del(s->ev); /* not pending now: it may be assigned again */
    event_assign(s->ev, ec->base, fd, kind, on_socket, ec);
    return event_add(s->ev, NULL) ? -1 : 0;
}

/* curl's CURLMOPT_TIMERFUNCTION: its one timer, run from the loop (never from here). */
static int timer_cb(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    evcurl_t *ec = ud;
    if (timeout_ms < 0)
        return event_del(ec->timer) ? -1 : 0;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    return evtimer_add(ec->timer, &tv) ? -1 : 0;
}

evcurl_t *evcurl_new(struct event_base *base)
{
    evcurl_t *ec = calloc(1, sizeof(*ec));
    if (!ec)
        return NULL;
    ec->base = base;
    if (!(ec->multi = curl_multi_init()) || !(ec->timer = evtimer_new(base, on_timer, ec))) {
        evcurl_destroy(&ec);
        return NULL;
    }
    curl_multi_setopt(ec->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(ec->multi, CURLMOPT_SOCKETDATA, ec);
    curl_multi_setopt(ec->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(ec->multi, CURLMOPT_TIMERDATA, ec);
    return ec;
}

void evcurl_destroy(evcurl_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    evcurl_t *ec = *self_p;
    if (ec->multi)
        curl_multi_cleanup(ec->multi); /* may still tell socket_cb to forget a socket */
    while (ec->socks)
        sock_free(ec, ec->socks);
    if (ec->timer)
        event_free(ec->timer);
    free(ec);
    *self_p = NULL;
}

int evcurl_add(evcurl_t *ec, CURL *easy, evcurl_done_fn *done, void *arg)
{
    xfer_t *x = malloc(sizeof(*x));
    if (!x)
        return -1;
    *x = (xfer_t){done, arg};
    curl_easy_setopt(easy, CURLOPT_PRIVATE, x);
    /* curl arms its timer from inside add_handle; the loop then starts the transfer. */
    if (curl_multi_add_handle(ec->multi, easy) != CURLM_OK) {
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        free(x);
        return -1;
    }
    ec->running++;
    return 0;
}

void evcurl_remove(evcurl_t *ec, CURL *easy)
{
    xfer_t *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    if (!x)
        return; /* not ours, or reported already */
    curl_multi_remove_handle(ec->multi, easy);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
    free(x);
    ec->running--;
}

int evcurl_running(const evcurl_t *ec)
{
    return ec->running;
}
