#include "supervisor.h"

#include "buf.h"
#include "clock.h"
#include "daemon.h"
#include "httpd.h"
#include "keyfile.h"
#include "lifecycle.h"
#include "log.h"
#include "loop.h"
#include "merge.h"
#include "metrics.h"
#include "policy.h"
#include "procstat.h"
#include "proto.h"
#include "rmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_CHILDREN 72
#define MAX_WORKERS 64
#define ELECTORD_STOP_NS (INT64_C(5) * NS_PER_SEC)
#define METRICS_STALE_NS (INT64_C(120) * NS_PER_SEC)
#define WEDGE_CHECK_NS (INT64_C(10) * NS_PER_SEC)

/* Children stop in phases: workers, informerd and the webhook first (they drain), then
 * electord, which releases the Lease once nobody can write any more. */
enum { PHASE_DRAIN = 0, PHASE_RELEASE = 1 };

typedef struct {
    char name[32];    /* "informerd", "workerd-3" */
    char program[32]; /* executable in bindir */
    int stop_phase;
    int essential;    /* readiness depends on it */
    pid_t pid;
    child_state_t state;
    int64_t started_ns;
    int64_t next_start_ns; /* respawn deadline while down */
    int notify_fd;         /* read end of the readiness pipe, -1 when none */
    int ready;
    int retired;           /* scaled away: do not restart, free the slot on exit */
    policy_restart_t policy;
    char last_exit[96];
} child_t;

struct supervisor {
    supervisor_config_t cfg;
    child_t children[MAX_CHILDREN];
    size_t nchildren;
    int next_worker_index;
    void *zctx;
    void *control;
    void *events; /* PUB: EXITED name pid signal code */
    httpd_t *health;
    httpd_t *metrics;
    int shutting_down;
    int phase;
    int64_t phase_deadline_ns;
    int forced;
    int64_t next_wedge_check_ns;
    loop_t *loop;
    metric_family_t *m_restarts;
    metric_family_t *m_children_up;
};

/* ---- children ---------------------------------------------------------------------- */

static child_t *child_add(supervisor_t *s, const char *name, const char *program, int phase,
                          int essential)
{
    if (s->nchildren == MAX_CHILDREN)
        return NULL;
    child_t *c = &s->children[s->nchildren++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->program, sizeof(c->program), "%s", program);
    c->stop_phase = phase;
    c->essential = essential;
    c->notify_fd = -1;
    c->state = CH_DOWN;
    return c;
}

static child_t *child_by_pid(supervisor_t *s, pid_t pid)
{
    for (size_t i = 0; i < s->nchildren; i++) {
        if (s->children[i].pid == pid && s->children[i].state != CH_DOWN)
            return &s->children[i];
    }
    return NULL;
}

static void child_remove(supervisor_t *s, child_t *c)
{
    size_t i = (size_t)(c - s->children);
    memmove(&s->children[i], &s->children[i + 1], (s->nchildren - i - 1) * sizeof(child_t));
    s->nchildren--;
}

/* In the forked child: set up and exec; on failure report errno through the pipe. */
static void child_exec(const supervisor_t *s, const child_t *c, int notify_w, int exec_w)
{
    daemon_reset_signals();
    /* If the supervisor dies, so do its children: nobody would restart or fence them. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int flags = fcntl(notify_w, F_GETFD);
    fcntl(notify_w, F_SETFD, flags & ~FD_CLOEXEC);
    char fdbuf[16];
    snprintf(fdbuf, sizeof(fdbuf), "%d", notify_w);
    setenv("RDC_NOTIFY_FD", fdbuf, 1);
    setenv("RDC_CHILD_NAME", c->name, 1);
    setenv("RDC_SUPERVISED", "1", 1);
    /* libcurl's dependencies (libldap, librtmp) bring GnuTLS, whose constructor initialises
     * it, p11-kit's trust modules included, in every process that loads it, though nothing
     * here uses it (curl speaks OpenSSL): ~130-230 kB of private memory per daemon
     * (docs/memory.md). A library that does use it calls gnutls_global_init itself. */
    setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0);

    char path[4096], rtdir[4200];
    snprintf(path, sizeof(path), "%s/%s", s->cfg.bindir, c->program);
    snprintf(rtdir, sizeof(rtdir), "--runtime-dir=%s", s->cfg.runtime_dir);
    /* Pass-through flags first; the supervisor's own settings last, so they win. */
    char *argv[160];
    int n = 0;
    argv[n++] = path;
    for (int i = 0; i < s->cfg.child_argc && n < 140; i++)
        argv[n++] = s->cfg.child_argv[i];
    if (strcmp(c->program, "webhookd") == 0) {
        for (int i = 0; i < s->cfg.webhook_argc && n < 150; i++)
            argv[n++] = s->cfg.webhook_argv[i];
    }
    argv[n++] = rtdir;
    argv[n++] = "--metrics-bind-address=0";
    argv[n++] = "--health-probe-bind-address=0";
    char upstream[96], secure_addr[300];
    if (strcmp(c->program, "metricsd") == 0) {
        for (int i = 0; i < s->cfg.metrics_argc && n < 155; i++)
            argv[n++] = s->cfg.metrics_argv[i];
        snprintf(upstream, sizeof(upstream), "--upstream=http://127.0.0.1:%d/metrics",
                 httpd_port(s->metrics));
        snprintf(secure_addr, sizeof(secure_addr), "--metrics-bind-address=%s", s->cfg.metrics_addr);
        argv[n++] = upstream;
        argv[n++] = secure_addr; /* after the "=0" above: the last one wins */
    }
    argv[n] = NULL;
    execv(path, argv);
    int e = errno;
    ssize_t w = write(exec_w, &e, sizeof(e));
    (void)w;
    _exit(127);
}

/* Fork and exec c. Exec failure is seen through a close-on-exec pipe: EOF means exec
 * happened, an errno means it did not. Returns 0 when the child runs. */
static void child_event(supervisor_t *s, child_t *c, child_event_t ev, int64_t now, int sig);
static int on_notify(loop_t *loop, void *socket, int fd, int revents, void *arg);

/* The SPAWN action: fork and exec c. Exec failure is seen through a close-on-exec pipe:
 * EOF means exec happened, an errno means it did not (the child then exits at once and is
 * reaped like any exit). A failing fork or pipe is the event SPAWN_FAILED. */
static void child_start(supervisor_t *s, child_t *c, int64_t now)
{
    c->started_ns = now;
    c->ready = 0;
    int notify[2], execp[2];
    if (pipe2(notify, O_CLOEXEC))
        goto fail_early;
    if (pipe2(execp, O_CLOEXEC)) {
        close(notify[0]);
        close(notify[1]);
        goto fail_early;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(notify[0]);
        close(notify[1]);
        close(execp[0]);
        close(execp[1]);
        goto fail_early;
    }
    if (pid == 0)
        child_exec(s, c, notify[1], execp[1]);
    close(notify[1]);
    close(execp[1]);
    int e = 0;
    ssize_t r;
    do {
        r = read(execp[0], &e, sizeof(e));
    } while (r < 0 && errno == EINTR);
    close(execp[0]);
    c->pid = pid;
    if (r == (ssize_t)sizeof(e)) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", s->cfg.bindir, c->program);
        rlog_error("cannot start child", "child", c->name, "path", path, "error",
                   strerror(e));
        close(notify[0]);
        c->notify_fd = -1;
        return;
    }
    c->notify_fd = notify[0];
    if (loop_add_fd(s->loop, c->notify_fd, LOOP_IN, on_notify, s))
        rlog_warn("cannot watch the readiness pipe; the child will not be seen ready", "child", c->name);
    char pidbuf[16];
    snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
    rlog_info("child started", "child", c->name, "pid", pidbuf);
    return;

fail_early:
    snprintf(c->last_exit, sizeof(c->last_exit), "not started: %s", strerror(errno));
    child_event(s, c, CEV_SPAWN_FAILED, now, 0);
}

static void child_signal(child_t *c, int sig)
{
    if (c->state != CH_DOWN && c->pid > 0)
        kill(c->pid, sig);
}

static void child_close_notify(supervisor_t *s, child_t *c)
{
    if (c->notify_fd >= 0) {
        if (s->loop)
            loop_remove_fd(s->loop, c->notify_fd);
        close(c->notify_fd);
        c->notify_fd = -1;
    }
}

/* A child exited with status: tell informerd (EXITED), then the lifecycle decides
 * between a respawn after a delay and the end. */
static void child_exited(supervisor_t *s, child_t *c, int status, int64_t now)
{
    char what[96];
    policy_describe_status(status, what, sizeof(what));
    snprintf(c->last_exit, sizeof(c->last_exit), "%s", what);
    child_close_notify(s, c);
    if (s->events) {
        rmsg_t *ev = rmsg_new();
        rmsg_addstr(ev, PROTO_EXITED);
        rmsg_addstr(ev, c->name);
        rmsg_addf(ev, "%d", (int)c->pid);
        rmsg_addf(ev, "%d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        rmsg_addf(ev, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        rmsg_send(&ev, s->events, ZMQ_DONTWAIT);
    }
    child_event(s, c, CEV_EXITED, now, 0);
    c->ready = 0;
    c->pid = 0;
}

/* Feed event to c's lifecycle (lifecycle.h) and perform the action it gives. sig is the
 * signal of a STOP. A retired slot that ends DOWN is freed by purge_retired() at the end
 * of the turn, so no pointer into the table goes stale during the turn. */
static void child_event(supervisor_t *s, child_t *c, child_event_t ev, int64_t now, int sig)
{
    child_transition_t t = lifecycle_step(c->state, ev, s->shutting_down || c->retired);
    if (t.action == CACT_IGNORE) {
        rlog_debug("lifecycle event ignored", "child", c->name, "state",
                   lifecycle_state_name(c->state), "event", lifecycle_event_name(ev));
        return;
    }
    c->state = t.next;
    char pidbuf[16], buf[32];
    snprintf(pidbuf, sizeof(pidbuf), "%d", (int)c->pid);
    switch (t.action) {
    case CACT_SPAWN:
        child_start(s, c, now);
        break;
    case CACT_RESTART_LATER: {
        int64_t delay = policy_on_exit(&c->policy, c->started_ns, now);
        c->next_start_ns = now + delay;
        snprintf(buf, sizeof(buf), "%.0fs", (double)delay / 1e9);
        char uptime[32];
        snprintf(uptime, sizeof(uptime), "%.1fs", (double)(now - c->started_ns) / 1e9);
        rlog_warn("child exited; restarting after a delay", "child", c->name, "pid", pidbuf,
                  "status", c->last_exit, "uptime", uptime, "delay", buf);
        metric_counter_add(s->m_restarts, METRIC_LABELS(c->name), 1);
        break;
    }
    case CACT_READY:
        c->ready = 1;
        rlog_info("child ready", "child", c->name);
        break;
    case CACT_STOPPED:
        rlog_info("child stopped", "child", c->name, "pid", pidbuf, "status", c->last_exit);
        break;
    case CACT_SIGNAL:
        if (c->pid > 0)
            kill(c->pid, sig);
        break;
    case CACT_NONE:
    case CACT_IGNORE:
        break;
    }
}

/* Reap every exited process, our children and (as PID 1) adopted orphans alike. */
static void reap(supervisor_t *s, int64_t now)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        child_t *c = child_by_pid(s, pid);
        if (c)
            child_exited(s, c, status, now);
    }
}

static void read_ready(supervisor_t *s, child_t *c, int64_t now)
{
    char buf[64];
    ssize_t n = read(c->notify_fd, buf, sizeof(buf));
    if (n > 0 && memmem(buf, (size_t)n, "READY", 5))
        child_event(s, c, CEV_READY, now, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        child_close_notify(s, c);
}

/* ---- pool size --------------------------------------------------------------------- */

static void add_worker(supervisor_t *s)
{
    char name[32];
    snprintf(name, sizeof(name), "workerd-%d", ++s->next_worker_index);
    child_add(s, name, "workerd", PHASE_DRAIN, 0);
}

static int count_workers(const supervisor_t *s)
{
    int n = 0;
    for (size_t i = 0; i < s->nchildren; i++) {
        if (strcmp(s->children[i].program, "workerd") == 0 && !s->children[i].retired)
            n++;
    }
    return n;
}

/* Grow or shrink the pool to n. Shrinking retires the newest workers with SIGTERM: each
 * finishes its current key, which informerd then does not hand out again to it. */
static int set_workers(supervisor_t *s, int n)
{
    if (n < 0 || n > MAX_WORKERS)
        return -1;
    while (count_workers(s) < n) {
        if (s->nchildren == MAX_CHILDREN)
            return -1;
        add_worker(s);
    }
    for (size_t i = s->nchildren; i-- > 0 && count_workers(s) > n;) {
        child_t *c = &s->children[i];
        if (strcmp(c->program, "workerd") != 0 || c->retired)
            continue;
        c->retired = 1;
        child_event(s, c, CEV_STOP, clock_mono_ns(), SIGTERM);
    }
    s->cfg.workers = n;
    char nbuf[16];
    snprintf(nbuf, sizeof(nbuf), "%d", n);
    rlog_info("worker pool resized", "workers", nbuf);
    return 0;
}

/* Free the slots of retired workers that have exited. */
static void purge_retired(supervisor_t *s)
{
    for (size_t i = s->nchildren; i-- > 0;) {
        if (s->children[i].retired && s->children[i].state == CH_DOWN)
            child_remove(s, &s->children[i]);
    }
}

/* ---- health and metrics ------------------------------------------------------------- */

static int readiness(const supervisor_t *s, buf_t *why)
{
    int ok = 1;
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < s->nchildren; i++) {
        const child_t *c = &s->children[i];
        if (!c->essential)
            continue;
        if (!c->ready) {
            buf_printf(why, "%s is not ready (%s)\n", c->name, lifecycle_state_name(c->state));
            ok = 0;
        } else if (policy_crashlooping(&c->policy) &&
                   now - c->started_ns < POLICY_RESTART_CAP_NS) {
            /* Its streak of exits only resets for the backoff after POLICY_STABLE_NS;
             * a run that outlasted the longest restart delay has stopped looping. */
            buf_printf(why, "%s is crash-looping\n", c->name);
            ok = 0;
        }
    }
    if (s->shutting_down) {
        buf_puts(why, "shutting down\n");
        ok = 0;
    }
    return ok;
}

static void render_metrics(supervisor_t *s, buf_t *out)
{
    merge_t *m = merge_new();
    if (!m)
        return;
    buf_t own;
    buf_init(&own, 16 << 20);
    metric_family_t *rss, *cpu;
    procstat_families(metrics_default(), &rss, &cpu);
    metric_family_reset(rss);
    metric_family_reset(cpu);
    double r, c;
    if (procstat_read(getpid(), &r, &c) == 0) {
        metric_gauge_set(rss, METRIC_LABELS("supervisor"), r);
        metric_counter_add(cpu, METRIC_LABELS("supervisor"), c);
    }
    int up = 0;
    for (size_t i = 0; i < s->nchildren; i++) {
        child_t *ch = &s->children[i];
        if (ch->state == CH_DOWN)
            continue;
        up++;
        if (procstat_read(ch->pid, &r, &c) == 0) {
            metric_gauge_set(rss, METRIC_LABELS(ch->name), r);
            metric_counter_add(cpu, METRIC_LABELS(ch->name), c);
        }
    }
    metric_gauge_set(s->m_children_up, NULL, up);
    metrics_expose(metrics_default(), &own);
    /* The supervisor's own families carry their own labels; give them child="supervisor"
     * only where they have none, by merging them like any child's file. */
    merge_add(m, "supervisor", buf_str(&own), own.len);
    buf_free(&own);
    for (size_t i = 0; i < s->nchildren; i++) {
        child_t *ch = &s->children[i];
        if (ch->state == CH_DOWN)
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/metrics/%s.prom", s->cfg.runtime_dir, ch->name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        buf_t text;
        buf_init(&text, 16 << 20);
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
            if (buf_append(&text, chunk, n))
                break;
        }
        fclose(f);
        merge_add(m, ch->name, buf_str(&text), text.len);
        buf_free(&text);
    }
    merge_render(m, out);
    merge_destroy(&m);
}

/* The health-probe port: /healthz (/livez) and /readyz only, as controller-runtime's
 * probe server; metrics are on their own port. */
static int probe_handler(const char *path, buf_t *body, void *user)
{
    supervisor_t *s = user;
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0) {
        /* Answering at all proves the loop turns; wedged children are killed and
         * restarted by the loop itself rather than failing the whole pod. */
        buf_puts(body, "ok\n");
        return 200;
    }
    if (strcmp(path, "/readyz") == 0) {
        buf_t why;
        buf_init(&why, 4096);
        int ok = readiness(s, &why);
        buf_puts(body, ok ? "ok\n" : buf_str(&why));
        buf_free(&why);
        return ok ? 200 : 503;
    }
    buf_puts(body, "not found\n");
    return 404;
}

/* The metrics port: /metrics only. */
static int metrics_handler(const char *path, buf_t *body, void *user)
{
    supervisor_t *s = user;
    if (strcmp(path, "/metrics") == 0) {
        render_metrics(s, body);
        return 200;
    }
    buf_puts(body, "not found\n");
    return 404;
}

/* A running child whose metrics file has not changed for METRICS_STALE_NS is wedged (its
 * loop no longer turns): kill it so that it is restarted. */
static void check_wedged(supervisor_t *s, int64_t now)
{
    if (now < s->next_wedge_check_ns)
        return;
    s->next_wedge_check_ns = now + WEDGE_CHECK_NS;
    int64_t wall = clock_wall_ns();
    for (size_t i = 0; i < s->nchildren; i++) {
        child_t *c = &s->children[i];
        if (c->state != CH_UP || now - c->started_ns < METRICS_STALE_NS)
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/metrics/%s.prom", s->cfg.runtime_dir, c->name);
        struct stat st;
        if (stat(path, &st))
            continue;
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * NS_PER_SEC + st.st_mtim.tv_nsec;
        if (wall - mtime > METRICS_STALE_NS) {
            rlog_error("child is wedged (no progress for 120 s); killing it", "child",
                       c->name);
            child_signal(c, SIGKILL);
        }
    }
}

/* ---- control socket ---------------------------------------------------------------- */

static void begin_shutdown(supervisor_t *s, int64_t now, const char *why);

/* The keys a running worker holds, from its key file (common/keyfile.h), into o: "keys"
 * (every one with its age) and "key" (the first, "" when none). */
static void add_held_keys(const supervisor_t *s, const child_t *c, json_object *o)
{
    char path[4200], text[KEYFILE_READ_MAX + 1] = "";
    snprintf(path, sizeof(path), "%s/metrics/%s.key", s->cfg.runtime_dir, c->name);
    FILE *f = c->state != CH_DOWN ? fopen(path, "r") : NULL;
    if (f) {
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    json_object *keys = keyfile_parse(text, clock_wall_ns() / NS_PER_MS);
    json_object *first = keys && json_object_array_length(keys) ? json_object_array_get_idx(keys, 0) : NULL, *k;
    json_object_object_add(o, "key", json_object_new_string(first && json_object_object_get_ex(first, "key", &k)
                                                                ? json_object_get_string(k)
                                                                : ""));
    json_object_object_add(o, "keys", keys ? keys : json_object_new_array());
}

static char *status_json(const supervisor_t *s, int64_t now)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < s->nchildren; i++) {
        const child_t *c = &s->children[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "child", json_object_new_string(c->name));
        json_object_object_add(o, "pid", json_object_new_int(c->pid));
        json_object_object_add(o, "state", json_object_new_string(lifecycle_state_name(c->state)));
        json_object_object_add(o, "ready", json_object_new_boolean(c->ready));
        json_object_object_add(o, "uptime_s", json_object_new_double(
            c->state == CH_DOWN ? 0 : (double)(now - c->started_ns) / 1e9));
        json_object_object_add(o, "restarts", json_object_new_int64((int64_t)c->policy.restarts_total));
        json_object_object_add(o, "last_exit", json_object_new_string(c->last_exit));
        add_held_keys(s, c, o);
        json_object_array_add(arr, o);
    }
    char *out = strdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(arr);
    return out;
}

static void handle_control(supervisor_t *s, int64_t now)
{
    rmsg_t *req = rmsg_recv(s->control, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096);
    if (!req)
        return;
    rmsg_t *reply = rmsg_pop_frame_msg(req); /* the peer's routing id */
    if (!reply) {
        rmsg_destroy(&req);
        return;
    }
    if (rmsg_frame_is(req, 0, PROTO_STATUS)) {
        char *json = status_json(s, now);
        rmsg_addstr(reply, PROTO_STATUS);
        rmsg_addstr(reply, json ? json : "[]");
        free(json);
    } else if (rmsg_frame_is(req, 0, PROTO_WORKERS)) {
        int64_t n = -1;
        if (rmsg_frame_int64(req, 1, &n) == 0 && set_workers(s, (int)n) == 0) {
            rmsg_addstr(reply, PROTO_OK);
        } else {
            rmsg_addstr(reply, PROTO_ERROR);
            rmsg_addf(reply, "workers must be a number from 0 to %d", MAX_WORKERS);
        }
    } else if (rmsg_frame_is(req, 0, PROTO_SHUTDOWN)) {
        rmsg_addstr(reply, PROTO_OK);
        begin_shutdown(s, now, "shutdown requested on the control socket");
    } else {
        rmsg_addstr(reply, PROTO_ERROR);
        rmsg_addstr(reply, "unknown command (STATUS, WORKERS n, SHUTDOWN)");
    }
    rmsg_send(&reply, s->control, ZMQ_DONTWAIT);
    rmsg_destroy(&req);
}

/* ---- lifecycle --------------------------------------------------------------------- */

static void signal_phase(supervisor_t *s, int phase, int sig)
{
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < s->nchildren; i++) {
        if (s->children[i].stop_phase == phase)
            child_event(s, &s->children[i], CEV_STOP, now, sig);
    }
}

static int phase_done(const supervisor_t *s, int phase)
{
    for (size_t i = 0; i < s->nchildren; i++) {
        if (s->children[i].stop_phase == phase && s->children[i].state != CH_DOWN)
            return 0;
    }
    return 1;
}

static void begin_shutdown(supervisor_t *s, int64_t now, const char *why)
{
    if (s->shutting_down)
        return;
    rlog_info("shutting down: draining workers and informerd", "reason", why);
    s->shutting_down = 1;
    s->phase = PHASE_DRAIN;
    s->phase_deadline_ns = now + (int64_t)(s->cfg.grace_s * 1e9);
    signal_phase(s, PHASE_DRAIN, SIGTERM);
}

/* Move the shutdown along. Returns 1 when every child is gone. */
static int step_shutdown(supervisor_t *s, int64_t now)
{
    if (s->phase == PHASE_DRAIN) {
        if (!phase_done(s, PHASE_DRAIN) && now >= s->phase_deadline_ns) {
            rlog_warn("grace period over; killing what is left");
            s->forced = 1;
            signal_phase(s, PHASE_DRAIN, SIGKILL);
        }
        if (!phase_done(s, PHASE_DRAIN))
            return 0;
        rlog_info("drained; stopping electord (releases the Lease)");
        s->phase = PHASE_RELEASE;
        s->phase_deadline_ns = now + ELECTORD_STOP_NS;
        signal_phase(s, PHASE_RELEASE, SIGTERM);
    }
    if (!phase_done(s, PHASE_RELEASE) && now >= s->phase_deadline_ns) {
        s->forced = 1;
        signal_phase(s, PHASE_RELEASE, SIGKILL);
    }
    return phase_done(s, PHASE_RELEASE);
}

static void start_due_children(supervisor_t *s, int64_t now)
{
    if (s->shutting_down)
        return;
    for (size_t i = 0; i < s->nchildren; i++) {
        child_t *c = &s->children[i];
        if (c->state == CH_DOWN && !c->retired && now >= c->next_start_ns)
            child_event(s, c, CEV_DUE, now, 0);
    }
}

/* Lower *wait to the earliest deadline: a respawn, the shutdown phase's end, the HTTP
 * servers' own timeouts. */
static void next_deadline(const supervisor_t *s, int64_t now, int64_t *wait)
{
    int64_t next = now + *wait;
    for (size_t i = 0; i < s->nchildren; i++) {
        const child_t *c = &s->children[i];
        if (c->state == CH_DOWN && !c->retired && !s->shutting_down && c->next_start_ns < next)
            next = c->next_start_ns;
    }
    if (s->shutting_down && s->phase_deadline_ns < next)
        next = s->phase_deadline_ns;
    httpd_t *servers[] = {s->health, s->metrics};
    for (size_t i = 0; i < 2; i++) {
        long h;
        if (servers[i] && (h = httpd_timeout_ms(servers[i])) >= 0 && now + h * NS_PER_MS < next)
            next = now + h * NS_PER_MS;
    }
    *wait = next > now ? next - now : 0;
}

/* Every turn: the HTTP servers' pending work, then the shutdown's next step, or the
 * respawns that are due, retired slots freed, and the wedge check. */
static int on_turn(loop_t *loop, int64_t now, int64_t *wait, void *arg)
{
    supervisor_t *s = arg;
    if (s->health)
        httpd_run(s->health);
    if (s->metrics)
        httpd_run(s->metrics);
    if (s->shutting_down) {
        if (step_shutdown(s, now)) {
            loop_stop(loop);
            return 0;
        }
    } else {
        purge_retired(s);
        start_due_children(s, now);
        check_wedged(s, now);
    }
    next_deadline(s, clock_mono_ns(), wait);
    return 0;
}

static int on_signal(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)revents;
    supervisor_t *s = arg;
    int64_t now = clock_mono_ns();
    int sig;
    while ((sig = daemon_read_signal(fd)) != 0) {
        if (sig == SIGCHLD) {
            reap(s, now);
        } else if (s->shutting_down && (sig == SIGTERM || sig == SIGINT)) {
            rlog_warn("second signal: stopping everything now");
            s->forced = 1;
            signal_phase(s, PHASE_DRAIN, SIGKILL);
            signal_phase(s, PHASE_RELEASE, SIGKILL);
        } else if (sig == SIGTERM || sig == SIGINT) {
            begin_shutdown(s, now, sig == SIGTERM ? "SIGTERM" : "SIGINT");
        } else if (sig == SIGHUP) {
            /* Forwarded so children may reopen logs or reload certificates. */
            for (size_t i = 0; i < s->nchildren; i++)
                child_signal(&s->children[i], SIGHUP);
        }
    }
    return 0;
}

/* The control socket: every request waiting (a bounded number per turn). */
static int on_control(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)fd, (void)revents;
    supervisor_t *s = arg;
    for (int k = 0; k < 16; k++) {
        int events = 0;
        size_t len = sizeof(events);
        if (zmq_getsockopt(socket, ZMQ_EVENTS, &events, &len) || !(events & ZMQ_POLLIN))
            break;
        handle_control(s, clock_mono_ns());
    }
    return 0;
}

/* A readiness pipe: READY, or its end (POLLHUP: a child that wrote READY closes its end,
 * and a pipe left at EOF would wake the loop at once forever; read_ready closes it). */
static int on_notify(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)revents;
    supervisor_t *s = arg;
    for (size_t i = 0; i < s->nchildren; i++) {
        if (s->children[i].notify_fd == fd) {
            read_ready(s, &s->children[i], clock_mono_ns());
            break;
        }
    }
    return 0;
}

static int on_http(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)revents;
    supervisor_t *s = arg;
    if (s->health && fd == httpd_fd(s->health))
        httpd_run(s->health);
    if (s->metrics && fd == httpd_fd(s->metrics))
        httpd_run(s->metrics);
    return 0;
}

int supervisor_run(supervisor_t *s, int signal_fd)
{
    if (loop_add_prepare(s->loop, on_turn, s) ||
        loop_add_fd(s->loop, signal_fd, LOOP_IN, on_signal, s) ||
        loop_add_socket(s->loop, s->control, LOOP_IN, on_control, s) ||
        (s->health && loop_add_fd(s->loop, httpd_fd(s->health), LOOP_IN, on_http, s)) ||
        (s->metrics && loop_add_fd(s->loop, httpd_fd(s->metrics), LOOP_IN, on_http, s))) {
        rlog_error("out of memory");
        return 1;
    }
    if (loop_run(s->loop, NS_PER_SEC)) {
        /* A failing poll ends the loop instead of spinning (the old loop's `continue`).
         * The children are told to stop; they would get SIGTERM from PR_SET_PDEATHSIG
         * anyway once we exit. */
        rlog_error("event loop failed; stopping the children", "error", loop_error(s->loop));
        s->shutting_down = 1;
        signal_phase(s, PHASE_DRAIN, SIGTERM);
        signal_phase(s, PHASE_RELEASE, SIGTERM);
        return 1;
    }
    rlog_info("all children stopped", "forced", s->forced ? "true" : "false");
    return s->forced ? 1 : 0;
}

/* ---- construction ------------------------------------------------------------------ */

/* supervisor_new: the ROUTER control socket and the PUB events socket, bound in the
 * runtime dir; 0, or -1 with err. */
static int bind_sockets(supervisor_t *s, char *err, size_t errlen)
{
    char ep[4200];
    s->zctx = zmq_ctx_new();
    s->control = s->zctx ? zmq_socket(s->zctx, ZMQ_ROUTER) : NULL;
    if (!s->control) {
        snprintf(err, errlen, "control socket: %s", zmq_strerror(errno));
        return -1;
    }
    int linger = 0;
    zmq_setsockopt(s->control, ZMQ_LINGER, &linger, sizeof(linger));
    daemon_endpoint(s->cfg.runtime_dir, PROTO_EP_CONTROL, ep, sizeof(ep));
    if (zmq_bind(s->control, ep)) {
        snprintf(err, errlen, "control socket %s: %s", ep, zmq_strerror(errno));
        return -1;
    }
    s->events = zmq_socket(s->zctx, ZMQ_PUB);
    daemon_endpoint(s->cfg.runtime_dir, PROTO_EP_EVENTS, ep, sizeof(ep));
    if (!s->events || zmq_setsockopt(s->events, ZMQ_LINGER, &linger, sizeof(linger)) ||
        zmq_bind(s->events, ep)) {
        snprintf(err, errlen, "events socket %s: %s", ep, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

/* supervisor_new: the health and metrics servers (with --metrics-secure the metrics one
 * on loopback, metricsd's upstream), each address said in the log; 0, or -1 with err. */
static int serve_http(supervisor_t *s, int secure, char *err, size_t errlen)
{
    const supervisor_config_t *cfg = &s->cfg;
    if (httpd_new(cfg->health_addr, probe_handler, s, &s->health, err, errlen) ||
        httpd_new(secure ? "127.0.0.1:0" : cfg->metrics_addr, metrics_handler, s, &s->metrics,
                  err, errlen))
        return -1;
    /* The addresses really bound: with ":0" the port is only known now. */
    char bound[64];
    if (s->health)
        rlog_info("serving health probes", "addr", httpd_bound_addr(s->health, bound, sizeof(bound)),
                  "paths", "/healthz /readyz");
    else
        rlog_info("health probes disabled (--health-probe-bind-address=0)");
    if (s->metrics && secure)
        rlog_info("serving metrics to metricsd only (--metrics-secure)", "addr",
                  httpd_bound_addr(s->metrics, bound, sizeof(bound)), "secure_addr", cfg->metrics_addr);
    else if (s->metrics)
        rlog_info("serving metrics", "addr", httpd_bound_addr(s->metrics, bound, sizeof(bound)),
                  "paths", "/metrics");
    else
        rlog_info("metrics disabled (--metrics-bind-address=0)");
    return 0;
}

/* supervisor_new: tell tests and users where the endpoints ended up (ports may be
 * ephemeral), in <runtime dir>/endpoints. */
static void write_endpoints(const supervisor_t *s, int secure)
{
    char addrs[256], path[4200], shost[64];
    int sport = 0;
    if (secure && httpd_parse_addr(s->cfg.metrics_addr, shost, sizeof(shost), &sport))
        sport = 0;
    int hl = snprintf(addrs, sizeof(addrs), "health=%d\nmetrics=%d\nmetrics_upstream=%d\n",
                      s->health ? httpd_port(s->health) : 0,
                      secure ? sport : s->metrics ? httpd_port(s->metrics) : 0,
                      secure ? httpd_port(s->metrics) : 0);
    snprintf(path, sizeof(path), "%s/endpoints", s->cfg.runtime_dir);
    daemon_write_file_atomic(path, addrs, (size_t)hl);
}

int supervisor_new(const supervisor_config_t *cfg, supervisor_t **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    supervisor_t *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cfg = *cfg;
    s->m_restarts = metrics_counter(metrics_default(), "supervisor_child_restarts_total",
                                    "Restarts of each child process.", "child");
    s->m_children_up = metrics_gauge(metrics_default(), "supervisor_children_running",
                                     "Child processes currently running.", "");
    s->loop = loop_new();
    if (!s->loop) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* --metrics-secure: metricsd serves metrics_addr; our plain server is its upstream on
     * loopback, so that scrapers reach our metrics only through its authorization. */
    int secure = cfg->metrics_secure && cfg->metrics_addr && *cfg->metrics_addr &&
                 strcmp(cfg->metrics_addr, "0") != 0;
    if (bind_sockets(s, err, errlen) || serve_http(s, secure, err, errlen))
        goto fail;
    child_add(s, "electord", "electord", PHASE_RELEASE, 1);
    child_add(s, "informerd", "informerd", PHASE_DRAIN, 1);
    if (cfg->webhook)
        child_add(s, "webhook", "webhookd", PHASE_DRAIN, 0);
    /* On every replica, leader or not (it only reads): its observations are ready for a
     * new leader's first reconcile. Not essential: the operator reconciles without it. */
    if (cfg->observer)
        child_add(s, "observerd", "observerd", PHASE_DRAIN, 0);
    /* Not essential: like controller-runtime's, readiness does not wait for metrics. */
    if (secure)
        child_add(s, "metricsd", "metricsd", PHASE_DRAIN, 0);
    for (int i = 0; i < cfg->workers; i++)
        add_worker(s);
    write_endpoints(s, secure);
    *out = s;
    return 0;
fail:
    supervisor_destroy(&s);
    return -1;
}

void supervisor_destroy(supervisor_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    supervisor_t *s = *self_p;
    for (size_t i = 0; i < s->nchildren; i++)
        child_close_notify(s, &s->children[i]);
    loop_destroy(&s->loop);
    httpd_destroy(&s->health);
    httpd_destroy(&s->metrics);
    if (s->control)
        zmq_close(s->control);
    if (s->events)
        zmq_close(s->events);
    if (s->zctx)
        zmq_ctx_term(s->zctx);
    free(s);
    *self_p = NULL;
}

/* ---- ctl --------------------------------------------------------------------------- */

static void print_status_table(const char *json)
{
    json_object *arr = json_tokener_parse(json);
    if (!arr || !json_object_is_type(arr, json_type_array)) {
        printf("%s\n", json);
        json_object_put(arr);
        return;
    }
    printf("%-12s %-8s %-9s %-6s %10s %9s  %s\n", "CHILD", "PID", "STATE", "READY",
           "UPTIME", "RESTARTS", "KEYS (held for)");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *o = json_object_array_get_idx(arr, i), *v, *keys = NULL;
#define FIELD_STR(k) (json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "")
#define FIELD_INT(k) (json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0)
        double up = json_object_object_get_ex(o, "uptime_s", &v) ? json_object_get_double(v) : 0;
        printf("%-12s %-8lld %-9s %-6s %9.0fs %9lld  ", FIELD_STR("child"),
               (long long)FIELD_INT("pid"), FIELD_STR("state"),
               json_object_object_get_ex(o, "ready", &v) && json_object_get_boolean(v) ? "yes" : "no",
               up, (long long)FIELD_INT("restarts"));
#undef FIELD_STR
#undef FIELD_INT
        /* every key the child holds: the first on its row, the others below it */
        size_t nkeys = json_object_object_get_ex(o, "keys", &keys) && json_object_is_type(keys, json_type_array)
                           ? json_object_array_length(keys)
                           : 0;
        if (!nkeys)
            printf("\n");
        for (size_t k = 0; k < nkeys; k++) {
            json_object *e = json_object_array_get_idx(keys, k), *key = NULL, *age = NULL;
            json_object_object_get_ex(e, "key", &key);
            json_object_object_get_ex(e, "age_s", &age);
            char held[32] = "?";
            if (age && !json_object_is_type(age, json_type_null))
                snprintf(held, sizeof(held), "%.1fs", json_object_get_double(age));
            printf("%*s%s (%s)\n", k ? 61 : 0, "", key ? json_object_get_string(key) : "", held); /* under KEYS */
        }
    }
    json_object_put(arr);
}

int supervisor_ctl(const char *runtime_dir, int argc, const char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: supervisor ctl status | workers N | shutdown\n");
        return 2;
    }
    rmsg_t *req = rmsg_new();
    if (strcmp(argv[0], "status") == 0 && argc == 1) {
        rmsg_addstr(req, PROTO_STATUS);
    } else if (strcmp(argv[0], "workers") == 0 && argc == 2) {
        rmsg_addstr(req, PROTO_WORKERS);
        rmsg_addstr(req, argv[1]);
    } else if (strcmp(argv[0], "shutdown") == 0 && argc == 1) {
        rmsg_addstr(req, PROTO_SHUTDOWN);
    } else {
        rmsg_destroy(&req);
        fprintf(stderr, "usage: supervisor ctl status | workers N | shutdown\n");
        return 2;
    }
    void *ctx = zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, timeout = 5000;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
    char ep[4200];
    daemon_endpoint(runtime_dir, PROTO_EP_CONTROL, ep, sizeof(ep));
    int rc = 1;
    rmsg_t *reply = NULL;
    if (zmq_connect(sock, ep) || rmsg_send(&req, sock, 0)) {
        fprintf(stderr, "supervisor ctl: %s: %s\n", ep, zmq_strerror(errno));
        goto out;
    }
    reply = rmsg_recv(sock, 0, PROTO_MAX_FRAMES, PROTO_MAX_BYTES);
    if (!reply) {
        fprintf(stderr, "supervisor ctl: no answer from %s within 5 s (is it running?)\n", ep);
        goto out;
    }
    if (rmsg_frame_is(reply, 0, PROTO_STATUS)) {
        char *json = rmsg_strdup(reply, 1);
        print_status_table(json ? json : "[]");
        free(json);
        rc = 0;
    } else if (rmsg_frame_is(reply, 0, PROTO_OK)) {
        printf("ok\n");
        rc = 0;
    } else {
        char *msg = rmsg_strdup(reply, 1);
        fprintf(stderr, "supervisor ctl: %s\n", msg ? msg : "error");
        free(msg);
    }
out:
    rmsg_destroy(&req);
    rmsg_destroy(&reply);
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return rc;
}
