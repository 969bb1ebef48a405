#include "loop_curl.h"

#include "clock.h"

#include <stdlib.h>
#include <string.h>

/* A transfer added with loop_curl_add_cb and the callback its end goes to. */
typedef struct {
    CURL *easy;
    loop_curl_done_fn *done;
    void *arg;
} xfer_cb_t;

struct loop_curl {
    loop_t *loop;
    CURLM *multi;
    int own_multi; /* loop_curl_open: cleaned up with the module */
    loop_curl_done_fn *done;
    void *arg;
    xfer_cb_t *cbs; /* the transfers of loop_curl_add_cb in progress */
    int ncbs, cbs_cap;
    int timer_id; /* 0 when curl wants no timeout */
    int running;
    int *fds; /* the fds registered with the loop, so that destroy can take them back */
    int nfds, fds_cap;
};

static void fd_forget(loop_curl_t *lc, int fd)
{
    for (int i = 0; i < lc->nfds; i++)
        if (lc->fds[i] == fd) {
            lc->fds[i] = lc->fds[--lc->nfds];
            return;
        }
}

static int fd_remember(loop_curl_t *lc, int fd)
{
    if (lc->nfds == lc->fds_cap) {
        int ncap = lc->fds_cap ? lc->fds_cap * 2 : 8;
        int *p = realloc(lc->fds, (size_t)ncap * sizeof(int));
        if (!p)
            return -1;
        lc->fds = p;
        lc->fds_cap = ncap;
    }
    lc->fds[lc->nfds++] = fd;
    return 0;
}

/* Take easy's own callback out of the table into *cb; 0 when it has none. */
static int cb_take(loop_curl_t *lc, CURL *easy, xfer_cb_t *cb)
{
    for (int i = 0; i < lc->ncbs; i++)
        if (lc->cbs[i].easy == easy) {
            *cb = lc->cbs[i];
            lc->cbs[i] = lc->cbs[--lc->ncbs];
            return 1;
        }
    return 0;
}

void loop_curl_collect(CURLM *multi, loop_curl_done_fn *done, void *arg)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        curl_multi_remove_handle(multi, easy);
        done(easy, result, arg);
    }
}

/* A finished transfer to the callback it was added with, else to the loop_curl's own. */
static void report(CURL *easy, CURLcode result, void *arg)
{
    loop_curl_t *lc = arg;
    xfer_cb_t cb;
    if (cb_take(lc, easy, &cb))
        cb.done(easy, result, cb.arg);
    else if (lc->done)
        lc->done(easy, result, lc->arg);
}

/* Report every finished transfer. */
static void collect(loop_curl_t *lc)
{
    loop_curl_collect(lc->multi, report, lc);
}

static int on_fd(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket;
    loop_curl_t *lc = arg;
    int ev = ((revents & LOOP_IN) ? CURL_CSELECT_IN : 0) |
             ((revents & LOOP_OUT) ? CURL_CSELECT_OUT : 0) |
             ((revents & LOOP_ERR) ? CURL_CSELECT_ERR : 0);
    curl_multi_socket_action(lc->multi, fd, ev, &lc->running);
    collect(lc);
    return 0;
}

static int on_timer(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    loop_curl_t *lc = arg;
    lc->timer_id = 0; /* a once-timer: curl sets a new one from inside the action if needed */
    curl_multi_socket_action(lc->multi, CURL_SOCKET_TIMEOUT, 0, &lc->running);
    collect(lc);
    return 0;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    (void)easy, (void)sockp;
    loop_curl_t *lc = ud;
    if (what == CURL_POLL_REMOVE) {
        loop_remove_fd(lc->loop, fd);
        fd_forget(lc, fd);
        return 0;
    }
    int events = ((what & CURL_POLL_IN) ? LOOP_IN : 0) | ((what & CURL_POLL_OUT) ? LOOP_OUT : 0);
    if (loop_set_fd_events(lc->loop, fd, events) == 0)
        return 0;
    if (fd_remember(lc, fd))
        return -1;
    if (loop_add_fd(lc->loop, fd, events, on_fd, lc)) {
        fd_forget(lc, fd);
        return -1;
    }
    return 0;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *ud)
{
    (void)multi;
    loop_curl_t *lc = ud;
    if (timeout_ms < 0) {
        if (lc->timer_id)
            loop_cancel_timer(lc->loop, lc->timer_id);
        lc->timer_id = 0;
        return 0;
    }
    int64_t delay = (int64_t)timeout_ms * NS_PER_MS;
    if (lc->timer_id && loop_timer_reset(lc->loop, lc->timer_id, delay) == 0)
        return 0;
    lc->timer_id = loop_add_timer(lc->loop, delay, 0, on_timer, lc);
    if (lc->timer_id < 0) {
        lc->timer_id = 0;
        return -1;
    }
    return 0;
}

loop_curl_t *loop_curl_new(loop_t *loop, CURLM *multi, loop_curl_done_fn *done, void *arg)
{
    loop_curl_t *lc = calloc(1, sizeof(*lc));
    if (!lc)
        return NULL;
    lc->loop = loop;
    lc->multi = multi;
    lc->done = done;
    lc->arg = arg;
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, lc);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, lc);
    return lc;
}

loop_curl_t *loop_curl_open(loop_t *loop)
{
    CURLM *multi = curl_multi_init();
    if (!multi)
        return NULL;
    /* the transfers of every user share one HTTP/2 connection (streams multiplexed) */
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    loop_curl_t *lc = loop_curl_new(loop, multi, NULL, NULL);
    if (!lc) {
        curl_multi_cleanup(multi);
        return NULL;
    }
    lc->own_multi = 1;
    return lc;
}

void loop_curl_destroy(loop_curl_t **lc_p)
{
    if (!lc_p || !*lc_p)
        return;
    loop_curl_t *lc = *lc_p;
    curl_multi_setopt(lc->multi, CURLMOPT_SOCKETFUNCTION, NULL);
    curl_multi_setopt(lc->multi, CURLMOPT_SOCKETDATA, NULL);
    curl_multi_setopt(lc->multi, CURLMOPT_TIMERFUNCTION, NULL);
    curl_multi_setopt(lc->multi, CURLMOPT_TIMERDATA, NULL);
    if (lc->timer_id)
        loop_cancel_timer(lc->loop, lc->timer_id);
    for (int i = 0; i < lc->nfds; i++)
        loop_remove_fd(lc->loop, lc->fds[i]);
    if (lc->own_multi)
        curl_multi_cleanup(lc->multi);
    free(lc->fds);
    free(lc->cbs);
    free(lc);
    *lc_p = NULL;
}

int loop_curl_add(loop_curl_t *lc, CURL *easy)
{
    /* curl arms its timer from inside add_handle; the loop then starts the transfer. */
    return curl_multi_add_handle(lc->multi, easy) == CURLM_OK ? 0 : -1;
}

int loop_curl_add_cb(loop_curl_t *lc, CURL *easy, loop_curl_done_fn *done, void *arg)
{
    if (lc->ncbs == lc->cbs_cap) {
        int ncap = lc->cbs_cap ? lc->cbs_cap * 2 : 16;
        xfer_cb_t *p = realloc(lc->cbs, (size_t)ncap * sizeof(*p));
        if (!p)
            return -1;
        lc->cbs = p;
        lc->cbs_cap = ncap;
    }
    lc->cbs[lc->ncbs++] = (xfer_cb_t){easy, done, arg};
    if (curl_multi_add_handle(lc->multi, easy) != CURLM_OK) {
        lc->ncbs--;
        return -1;
    }
    return 0;
}

void loop_curl_share_connection(CURL *easy)
{
    char *url = NULL;
    curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &url);
    if (url && !strncmp(url, "https://", 8))
        curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
}

void loop_curl_remove(loop_curl_t *lc, CURL *easy)
{
    xfer_cb_t cb;
    cb_take(lc, easy, &cb);
    curl_multi_remove_handle(lc->multi, easy);
}

loop_t *loop_curl_loop(const loop_curl_t *lc)
{
    return lc->loop;
}

int loop_curl_running(const loop_curl_t *lc)
{
    return lc->running;
}
