/* slotmove: moving hash slots, the machine and its run. See slotmove.h. */
#include "slotmove.h"

#include "jsonx.h"
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *slotmove_state_name(slotmove_state_t state)
{
    static const char *const names[] = {"importing",   "migrating",   "getkeys",     "sizes", "migrate",
                                        "node-target", "node-source", "node-others", "done",  "failed"};
    return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}

const slotmove_node_t *slotmove_node(const slotmove_job_t *job, int to)
{
    return to == SLOTMOVE_TO_SOURCE   ? &job->source
           : to == SLOTMOVE_TO_TARGET ? &job->target
           : to >= SLOTMOVE_MAX_OTHERS ? &job->replicas[to - SLOTMOVE_MAX_OTHERS]
                                       : &job->others[to];
}

void slotmove_start(slotmove_t *m, int slot)
{
    memset(m, 0, sizeof(*m));
    m->state = SLOTMOVE_IMPORTING;
    m->slot = slot;
}

static void fail(slotmove_t *m, const char *what, const char *answer)
{
    snprintf(m->why, sizeof(m->why), "slot %d: %s: %s", m->slot, what, answer);
    m->state = SLOTMOVE_FAILED;
}

static int is_ok(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_STATUS && !strcasecmp(r->str, "OK");
}

/* A step's rule: its answer good (ok), the move goes on at next; else it fails at what,
 * with the answer a. */
static void advance(slotmove_t *m, int ok, slotmove_state_t next, const char *what, const char *a)
{
    if (ok)
        m->state = next;
    else
        fail(m, what, a);
}

static int is_error(const redisReply *r, const char *part)
{
    return r && r->type == REDIS_REPLY_ERROR && strstr(r->str, part) != NULL;
}

/* The answer as one line: Redis's error text, or what the reply is. */
static const char *answer(const redisReply *r, const char *err_line)
{
    if (!r)
        return err_line && *err_line ? err_line : "no answer";
    if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS)
        return r->str;
    return "an unexpected reply";
}

/* The keys of a batch: the first whose sizes sum to room at most (at least one when
 * first), their sum into *sum. */
static size_t batch_of(const int64_t *sizes, size_t n, int64_t room, int first, int64_t *sum)
{
    size_t k = 0;
    *sum = 0;
    while (k < n && ((first && k == 0) || *sum + sizes[k] <= room))
        *sum += sizes[k++];
    return k;
}

void slotmove_feed(slotmove_t *m, const slotmove_job_t *job, const redisReply *r, const int64_t *sizes,
                   const char *err_line)
{
    const char *a = answer(r, err_line);
    switch (m->state) {
    case SLOTMOVE_IMPORTING: /* "already the owner": NODE_TARGET was done: finish the rest */
        advance(m, is_ok(r) || is_error(r, "already the owner"), is_ok(r) ? SLOTMOVE_MIGRATING : SLOTMOVE_NODE_SOURCE,
                "SETSLOT IMPORTING on the target", a);
        break;
    case SLOTMOVE_MIGRATING:
        advance(m, is_ok(r), SLOTMOVE_GETKEYS, "SETSLOT MIGRATING on the source", a);
        break;
    case SLOTMOVE_GETKEYS:
        if (r && r->type == REDIS_REPLY_ARRAY) {
            m->nkeys = r->elements;
            m->moved = 0;
        }
        advance(m, r && r->type == REDIS_REPLY_ARRAY, m->nkeys ? SLOTMOVE_SIZES : SLOTMOVE_NODE_TARGET,
                "GETKEYSINSLOT on the source", a);
        break;
    case SLOTMOVE_SIZES: {
        int64_t sum;
        if (sizes)
            m->take = batch_of(sizes, m->nkeys - m->moved, job->batch_bytes, 1, &sum);
        advance(m, sizes != NULL, SLOTMOVE_MIGRATE, "MEMORY USAGE on the source", a);
        break;
    }
    case SLOTMOVE_MIGRATE:
        if (is_ok(r) || (r && r->type == REDIS_REPLY_STATUS && !strcasecmp(r->str, "NOKEY"))) {
            m->replace = 0;
            m->moved += m->take; /* LISTING: the keys listed and left go before a new GETKEYS */
            m->state = m->moved < m->nkeys ? SLOTMOVE_SIZES : SLOTMOVE_GETKEYS;
        } else if (is_error(r, "BUSYKEY") && !m->replace)
            m->replace = 1; /* a copy left by a MIGRATE cut off: the source's is the last written */
        else
            fail(m, "MIGRATE", a);
        break;
    case SLOTMOVE_NODE_TARGET:
        advance(m, is_ok(r), SLOTMOVE_NODE_SOURCE, "SETSLOT NODE on the target", a);
        break;
    case SLOTMOVE_NODE_SOURCE:
        /* "only with masters": the source heard the target's claim (Redis 7 broadcasts it
         * at NODE_TARGET), lost its last slot and follows the target now: done there */
        advance(m, is_ok(r) || is_error(r, "only with masters"), job->nothers ? SLOTMOVE_NODE_OTHERS : SLOTMOVE_DONE,
                "SETSLOT NODE on the source", a);
        break;
    case SLOTMOVE_NODE_OTHERS: /* gossip tells them anyway: an answer is not waited for */
        if (++m->other >= job->nothers)
            m->state = SLOTMOVE_DONE;
        break;
    case SLOTMOVE_DONE:
    case SLOTMOVE_FAILED:
        break;
    }
}

size_t slotmove_list_count(int64_t batch_bytes, int64_t bytes_seen, int64_t keys_seen)
{
    if (keys_seen <= 0)
        return SLOTMOVE_FIRST_KEYS;
    if (bytes_seen <= 0)
        return SLOTMOVE_MAX_KEYS; /* (keys of no size: as many as a GETKEYS gives) */
    double n = floor((double)batch_bytes * (double)keys_seen / (double)bytes_seen); /* (the last fits too) */
    return n < 1 ? 1 : n > SLOTMOVE_MAX_KEYS ? SLOTMOVE_MAX_KEYS : (size_t)n;
}

/* ---- the run ---------------------------------------------------------------------------- */

#define MIGRATE_FIXED 12 /* MIGRATE ip port "" 0 timeout REPLACE AUTH pw KEYS */
/* A round's commands at most: SLOTMOVE_SIZES_ROUND MEMORY USAGEs, one command per slot of
 * the group, or the close round's two per slot and MULTI and EXEC; and their arguments (a
 * pipeline of MIGRATEs stops short of ROUND_ARGS, one MIGRATE, SLOTMOVE_MAX_KEYS keys at
 * most, always fits). */
#define ROUND_CMDS (SLOTMOVE_SIZES_ROUND + 2 * SLOTMOVE_MAX_GROUP + 1)
#define ROUND_ARGS (3 * SLOTMOVE_SIZES_ROUND + MIGRATE_FIXED * SLOTMOVE_MAX_GROUP + SLOTMOVE_MAX_KEYS)

/* One slot of the group: its machine, its last GETKEYS answer and the sizes known of its
 * keys (LISTING: size[0..nsized) of keys[0..nsized)), what its MIGRATE moves. */
typedef struct {
    slotmove_t m;
    redisReply *keys;
    int64_t size[SLOTMOVE_MAX_KEYS];
    size_t nsized;
    int64_t take_bytes;
    char num[16]; /* the slot as text */
} mach_t;

typedef struct {
    const slotmove_job_t *job;
    const slotmove_io_t *io;
    const char *password;
    slotmove_progress_t *pr;
    mach_t g[SLOTMOVE_MAX_GROUP]; /* the group: slots moved in lockstep */
    size_t ng;
    int64_t start;                /* the run's start (now_ns) */
    int64_t pipe_bytes;           /* PIPELINES: a MIGRATE pipeline's bytes at most */
    size_t pipe_migrates;         /* PIPELINES: a MIGRATE pipeline's MIGRATEs at most */
    /* one round: its commands (argvs into argv/lens), whose each is, their replies */
    int argcs[ROUND_CMDS];
    const char *const *argvs[ROUND_CMDS];
    const size_t *lenss[ROUND_CMDS];
    mach_t *whose[ROUND_CMDS];
    redisReply *replies[ROUND_CMDS];
    const char *argv[ROUND_ARGS];
    size_t lens[ROUND_ARGS];
    size_t ncmd, narg;
    char num[3][24];              /* the target's port, MIGRATE's timeout, GETKEYS's count */
    int64_t bytes_seen, keys_seen; /* LISTING: the keys sized so far, their sizes summed */
    cn_slots_t mine;              /* the slots the source owns or has MIGRATING (source_slots) */
    cn_slots_t done;              /* the slots this run closed (REPLICATED: the replicas' view) */
} run_t;

static void arg(run_t *r, const char *s, size_t len)
{
    r->argv[r->narg] = s;
    r->lens[r->narg++] = len;
}

static void args(run_t *r, const char *s)
{
    arg(r, s, strlen(s));
}

/* A new command of the round, for x (its arguments follow: arg, args). */
static void cmd_begin(run_t *r, mach_t *x)
{
    r->argvs[r->ncmd] = &r->argv[r->narg];
    r->lenss[r->ncmd] = &r->lens[r->narg];
    r->whose[r->ncmd] = x;
    r->argcs[r->ncmd++] = 0;
}

static void cmd_end(run_t *r)
{
    r->argcs[r->ncmd - 1] = (int)(&r->argv[r->narg] - r->argvs[r->ncmd - 1]);
}

/* x's MIGRATE of its first take keys. */
static void migrate_of(run_t *r, mach_t *x)
{
    cmd_begin(r, x);
    args(r, "MIGRATE");
    args(r, r->job->target.ip);
    args(r, r->num[0]);
    args(r, "");
    args(r, "0");
    args(r, r->num[1]);
    if (x->m.replace)
        args(r, "REPLACE");
    if (r->password && *r->password) {
        args(r, "AUTH");
        args(r, r->password);
    }
    args(r, "KEYS");
    for (size_t k = x->m.moved; k < x->m.moved + x->m.take; k++)
        arg(r, x->keys->element[k]->str, x->keys->element[k]->len);
    cmd_end(r);
}

/* x's command in its state (not SIZES, not MIGRATE); its node is the round's. */
static void command_of(run_t *r, mach_t *x)
{
    static const struct {
        const char *verb;
        int source_id;
    } setslot[] = {
        [SLOTMOVE_IMPORTING] = {"IMPORTING", 1},  [SLOTMOVE_MIGRATING] = {"MIGRATING", 0},
        [SLOTMOVE_NODE_TARGET] = {"NODE", 0},     [SLOTMOVE_NODE_SOURCE] = {"NODE", 0},
        [SLOTMOVE_NODE_OTHERS] = {"NODE", 0},
    };
    slotmove_state_t st = x->m.state;
    cmd_begin(r, x);
    args(r, "CLUSTER");
    if (st == SLOTMOVE_GETKEYS) {
        args(r, "GETKEYSINSLOT");
        args(r, x->num);
        args(r, r->num[2]);
    } else {
        args(r, "SETSLOT");
        args(r, x->num);
        args(r, setslot[st].verb);
        args(r, setslot[st].source_id ? r->job->source.id : r->job->target.id);
    }
    cmd_end(r);
}

/* The node a command of state st goes to (NODE_OTHERS: the other master other). */
static int node_for(slotmove_state_t st, size_t other)
{
    if (st == SLOTMOVE_IMPORTING || st == SLOTMOVE_NODE_TARGET)
        return SLOTMOVE_TO_TARGET;
    return st == SLOTMOVE_NODE_OTHERS ? (int)other : SLOTMOVE_TO_SOURCE;
}

/* The round's commands to node to, pipelined: r->replies[0..ncmd) (NULL each when the node
 * could not be asked; err says why). Without io->pipeline, one by one: the first that gets
 * no answer ends it. */
static void send_round(run_t *r, int to, char *err, size_t errlen)
{
    const slotmove_io_t *io = r->io;
    r->pr->commands += (int)r->ncmd;
    r->pr->round_trips += io->pipeline ? 1 : (int)r->ncmd;
    if (io->pipeline) {
        if (io->pipeline(io->user, to, r->ncmd, r->argcs, r->argvs, r->lenss, r->replies, err, errlen))
            memset(r->replies, 0, r->ncmd * sizeof(r->replies[0]));
        return;
    }
    size_t i = 0;
    for (; i < r->ncmd; i++)
        if (!(r->replies[i] = io->command(io->user, to, r->argcs[i], r->argvs[i], r->lenss[i], err, errlen)))
            break;
    for (; i < r->ncmd; i++)
        r->replies[i] = NULL;
}

/* MIGRATE's answer fed to x: its keys and bytes counted when they went. */
static void migrate_fed(run_t *r, mach_t *x, const redisReply *reply, const char *err)
{
    slotmove_feed(&x->m, r->job, reply, NULL, err);
    if (x->m.state == SLOTMOVE_GETKEYS || x->m.state == SLOTMOVE_SIZES) {
        r->pr->bytes += x->take_bytes;
        r->pr->keys += (int64_t)x->m.take;
    }
}

/* GETKEYS's answer fed to x: the keys kept for its MIGRATE. Returns 1 when reply is kept. */
static int getkeys_fed(run_t *r, mach_t *x, redisReply *reply, const char *err)
{
    slotmove_feed(&x->m, r->job, reply, NULL, err);
    if (x->m.state == SLOTMOVE_FAILED)
        return 0;
    freeReplyObject(x->keys);
    x->keys = reply;
    x->nsized = 0;
    if (x->m.nkeys > SLOTMOVE_MAX_KEYS)
        x->m.nkeys = SLOTMOVE_MAX_KEYS;
    return 1;
}

/* One round: the command of every slot of the group in state st (NODE_OTHERS: those at
 * the first other master not yet told; MIGRATE: the first that fit in one pipeline, as
 * PIPELINES says) pipelined to its node, each answer fed to its slot's machine. Returns -1
 * when a slot failed (err: its words), else 0. */
static int round_of(run_t *r, slotmove_state_t st, char *err, size_t errlen)
{
    size_t other = SLOTMOVE_MAX_OTHERS;
    for (size_t i = 0; i < r->ng; i++)
        if (r->g[i].m.state == SLOTMOVE_NODE_OTHERS && r->g[i].m.other < other)
            other = r->g[i].m.other;
    r->ncmd = r->narg = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < r->ng; i++) {
        mach_t *x = &r->g[i];
        if (x->m.state != st || (st == SLOTMOVE_NODE_OTHERS && x->m.other != other))
            continue;
        if (st != SLOTMOVE_MIGRATE) {
            command_of(r, x);
            continue;
        }
        if (r->ncmd && (r->ncmd >= r->pipe_migrates || bytes + x->take_bytes > r->pipe_bytes ||
                        r->narg + MIGRATE_FIXED + x->m.take > ROUND_ARGS))
            break; /* PIPELINES: the rest in the next pipeline */
        migrate_of(r, x);
        bytes += x->take_bytes;
    }
    if (!r->ncmd)
        return 0;
    char e[256] = "";
    r->pr->migrate_rounds += st == SLOTMOVE_MIGRATE;
    send_round(r, node_for(st, other), e, sizeof(e));
    int rc = 0;
    for (size_t i = 0; i < r->ncmd; i++) {
        mach_t *x = r->whose[i];
        int kept = 0;
        if (st == SLOTMOVE_MIGRATE)
            migrate_fed(r, x, r->replies[i], e);
        else if (st == SLOTMOVE_GETKEYS)
            kept = getkeys_fed(r, x, r->replies[i], e);
        else
            slotmove_feed(&x->m, r->job, r->replies[i], NULL, e);
        if (!kept)
            freeReplyObject(r->replies[i]);
        if (x->m.state == SLOTMOVE_FAILED && !rc) {
            snprintf(err, errlen, "%s", x->m.why);
            rc = -1;
        }
    }
    return rc;
}

/* CLOSING: one SETSLOT of the target's close round into it: "CLUSTER SETSLOT <x> <verb>
 * [<target id>]". */
static void close_command(run_t *r, mach_t *x, const char *verb)
{
    cmd_begin(r, x);
    args(r, "CLUSTER");
    args(r, "SETSLOT");
    args(r, x->num);
    args(r, verb);
    if (!strcmp(verb, "NODE"))
        args(r, r->job->target.id);
    cmd_end(r);
}

/* CLOSING: the answer of queued command i (1..ncmd-2) of the close round, out of EXEC's
 * (the last reply): its element when EXEC ran them all, else EXEC's own answer (an error:
 * EXECABORT; NULL: no answer, err says why). */
static const redisReply *close_answer(const run_t *r, size_t i)
{
    const redisReply *ex = r->replies[r->ncmd - 1];
    if (ex && ex->type == REDIS_REPLY_ARRAY && ex->elements == r->ncmd - 2)
        return ex->element[i - 1];
    return ex && ex->type == REDIS_REPLY_ARRAY ? NULL : ex;
}

/* NODE_TARGET, the group's slots at once (CLOSING in slotmove.h): MULTI, then for every slot
 * but the last SETSLOT STABLE and SETSLOT NODE <target>, for the last SETSLOT NODE
 * <target> alone, EXEC. Each slot is fed its NODE answer (or its STABLE's, when that
 * failed). Returns -1 when a slot failed (err: its words), else 0. */
static int close_round(run_t *r, char *err, size_t errlen)
{
    size_t last = r->ng;
    for (size_t i = 0; i < r->ng; i++)
        if (r->g[i].m.state == SLOTMOVE_NODE_TARGET)
            last = i;
    if (last == r->ng)
        return 0;
    r->ncmd = r->narg = 0;
    cmd_begin(r, NULL);
    args(r, "MULTI");
    cmd_end(r);
    for (size_t i = 0; i <= last; i++) {
        if (r->g[i].m.state != SLOTMOVE_NODE_TARGET)
            continue;
        if (i != last)
            close_command(r, &r->g[i], "STABLE");
        close_command(r, &r->g[i], "NODE");
    }
    cmd_begin(r, NULL);
    args(r, "EXEC");
    cmd_end(r);
    char e[256] = "";
    send_round(r, SLOTMOVE_TO_TARGET, e, sizeof(e));
    int rc = 0;
    const redisReply *ex = r->replies[r->ncmd - 1];
    if (ex && ex->type == REDIS_REPLY_ARRAY && ex->elements != r->ncmd - 2)
        snprintf(e, sizeof(e), "EXEC answered %zu of %zu commands", ex->elements, r->ncmd - 2);
    const redisReply *stable = NULL;
    for (size_t i = 1; i + 1 < r->ncmd; i++) {
        mach_t *x = r->whose[i];
        const redisReply *a = close_answer(r, i);
        if (!strcmp(r->argvs[i][3], "STABLE")) {
            stable = a && a->type == REDIS_REPLY_ERROR ? a : NULL;
            continue;
        }
        slotmove_feed(&x->m, r->job, stable ? stable : a, NULL, e);
        stable = NULL;
        if (x->m.state == SLOTMOVE_FAILED && !rc) {
            snprintf(err, errlen, "%s", x->m.why);
            rc = -1;
        }
    }
    for (size_t i = 0; i < r->ncmd; i++)
        freeReplyObject(r->replies[i]);
    return rc;
}

/* The sized keys of x not moved yet that fit in *room and in one pipeline's pipe bytes (at
 * least one when first, or when its first fits in *room: a key larger than pipe goes
 * alone), *room less their sizes: x's MIGRATE, or x left in SIZES when none fits (its turn
 * comes in a later batch, its sizes kept). */
static void take_of(mach_t *x, int64_t *room, int64_t pipe, int first)
{
    int64_t sum;
    const int64_t *sizes = &x->size[x->m.moved];
    size_t k = batch_of(sizes, x->nsized - x->m.moved, *room < pipe ? *room : pipe, first || sizes[0] <= *room,
                        &sum);
    x->m.take = k;
    x->take_bytes = sum;
    x->m.state = k ? SLOTMOVE_MIGRATE : SLOTMOVE_SIZES;
    *room -= sum;
}

/* LISTING: the next MEMORY USAGEs of x into the round, while the batch may still take
 * them: the sizes of x's keys known and not moved, plus mean for each one asked, up to
 * limit (and one past it, whose size ends x's part of the batch); cap commands in the round
 * at most. Returns what x's part of the batch is then thought to be (limit at most). */
static int64_t sizes_of(run_t *r, mach_t *x, int64_t limit, int64_t mean, size_t cap)
{
    int64_t sum = 0;
    for (size_t k = x->m.moved; k < x->nsized; k++)
        sum += x->size[k];
    for (size_t k = x->nsized; k < x->m.nkeys && sum <= limit && r->ncmd < cap; k++) {
        cmd_begin(r, x);
        args(r, "MEMORY");
        args(r, "USAGE");
        arg(r, x->keys->element[k]->str, x->keys->element[k]->len);
        cmd_end(r);
        sum += mean;
    }
    return sum < limit ? sum : limit;
}

/* LISTING: one pipeline of MEMORY USAGEs, the slots in SIZES in the group's order, those
 * the batch of batch_bytes may take (each slot's part one pipeline's pipe_bytes at most,
 * as take_of), SLOTMOVE_SIZES_ROUND at most (SLOTMOVE_FIRST_KEYS before a size is known).
 * Returns how many (0: the batch's sizes are known). */
static size_t plan_sizes(run_t *r)
{
    int64_t room = r->job->batch_bytes, mean = r->keys_seen ? r->bytes_seen / r->keys_seen : 0;
    size_t cap = r->keys_seen ? SLOTMOVE_SIZES_ROUND : SLOTMOVE_FIRST_KEYS;
    r->ncmd = r->narg = 0;
    for (size_t i = 0; i < r->ng && r->ncmd < cap && room > 0; i++)
        if (r->g[i].m.state == SLOTMOVE_SIZES)
            room -= sizes_of(r, &r->g[i], room < r->pipe_bytes ? room : r->pipe_bytes, mean, cap);
    return r->ncmd;
}

/* SIZES: MEMORY USAGE of the keys the batch may take and not sized yet, in pipelines
 * (plan_sizes), then one batch of batch_bytes over the sized keys in order: a slot's first
 * keys that fit (in the batch and in one pipeline's pipe_bytes) make its MIGRATE. Returns
 * -1 when a slot failed (err), else 0. */
static int sizes_round(run_t *r, char *err, size_t errlen)
{
    int rc = 0;
    while (!rc && plan_sizes(r)) {
        char e[256] = "";
        send_round(r, SLOTMOVE_TO_SOURCE, e, sizeof(e));
        for (size_t i = 0; i < r->ncmd; i++) {
            mach_t *x = r->whose[i];
            if (!r->replies[i] && !rc) { /* no answer: the slot fails with the node's words */
                slotmove_feed(&x->m, r->job, NULL, NULL, e);
                snprintf(err, errlen, "%s", x->m.why);
                rc = -1;
            }
            int64_t size = r->replies[i] && r->replies[i]->type == REDIS_REPLY_INTEGER ? r->replies[i]->integer : 0;
            freeReplyObject(r->replies[i]); /* (nil: the key is gone since) */
            x->size[x->nsized++] = size;
            r->bytes_seen += size;
            r->keys_seen++;
        }
    }
    int64_t room = r->job->batch_bytes;
    int first = 1;
    for (size_t i = 0; i < r->ng && !rc; i++) {
        mach_t *x = &r->g[i];
        if (x->m.state == SLOTMOVE_SIZES && x->nsized > x->m.moved) {
            take_of(x, &room, r->pipe_bytes, first);
            first = 0;
        }
    }
    return rc;
}

/* 1 when the run is to stop before the group's start (at_start) or before its next batch:
 * the budget or max_bytes spent, at a group's start; between batches only once twice the
 * budget is (slots of many keys): a run that stops leaves no slot open unless it has to,
 * so that the next plan, made from an observation older than the run, has nothing to
 * finish first. */
static int spent(const run_t *r, int at_start, int64_t budget)
{
    if (r->pr->commands <= 1)
        return 0; /* (the first group always goes: every run moves on) */
    int64_t used = r->io->now_ns(r->io->user) - r->start;
    int over = r->job->max_bytes > 0 && r->pr->bytes >= r->job->max_bytes;
    return at_start ? used >= budget || over : used >= 2 * budget || over;
}

/* bytes_per_second: when bytes are due at the rate, in ns after the run's start. */
static int64_t due_ns(const run_t *r, int64_t bytes)
{
    return (int64_t)((double)bytes * 1e9 / (double)r->job->bytes_per_second);
}

/* Wait until `until` ns after the start, with the keepalive at least every SLOTMOVE_PACE_TICK_NS. */
static void wait_until(const run_t *r, int64_t until)
{
    for (;;) {
        int64_t used = r->io->now_ns(r->io->user) - r->start;
        if (used >= until)
            return;
        r->io->wait(r->io->user, until - used < SLOTMOVE_PACE_TICK_NS ? until - used : SLOTMOVE_PACE_TICK_NS);
        if (r->io->tick)
            r->io->tick(r->io->tick_arg);
    }
}

/* bytes_per_second, before a group or a batch: wait until what moved so far is due, so
 * that a run lasts at least its bytes / rate whatever the gap to the next run (the run's
 * end waits too: pace_end). Returns 1 (the run stops there, resumable) when one more batch
 * would be due past the budget (twice it mid-group, as spent() says), or when io can not
 * wait and the bytes are not due yet. */
static int pace(const run_t *r, int at_start, int64_t budget)
{
    const slotmove_job_t *j = r->job;
    if (j->bytes_per_second <= 0)
        return 0;
    int64_t limit = at_start ? budget : 2 * budget;
    if (r->pr->commands > 1 && due_ns(r, r->pr->bytes + j->batch_bytes) > limit)
        return 1; /* (the first group always goes: every run moves on) */
    if (!r->io->wait)
        return r->io->now_ns(r->io->user) - r->start < due_ns(r, r->pr->bytes);
    wait_until(r, due_ns(r, r->pr->bytes));
    return 0;
}

/* bytes_per_second, before each pipeline of a batch's MIGRATEs: wait until what moved so
 * far is due, so that a batch is spread over its bytes / rate rather than sent at full
 * speed and followed by a pause (a burst holds the source, the target and their replicas
 * at once: bench/README.md, "Paced by the pipeline"). Never stops the run: whether a batch
 * goes at all was pace()'s call. */
static void pace_pipeline(const run_t *r)
{
    if (r->job->bytes_per_second > 0 && r->io->wait)
        wait_until(r, due_ns(r, r->pr->bytes));
}

/* bytes_per_second, at a run's end: it returns no earlier than its bytes are due (twice
 * the budget at most: a batch larger than that at the rate is the one excess). */
static void pace_end(const run_t *r)
{
    if (r->job->bytes_per_second <= 0 || !r->io->wait)
        return;
    int64_t due = due_ns(r, r->pr->bytes);
    wait_until(r, due < 2 * r->job->budget_ns ? due : 2 * r->job->budget_ns);
}

static int any_in(const run_t *r, slotmove_state_t st)
{
    for (size_t i = 0; i < r->ng; i++)
        if (r->g[i].m.state == st)
            return 1;
    return 0;
}

/* The group's slots, in lockstep: IMPORTING of them all in one pipeline to the target,
 * MIGRATING in one to the source, then batches (GETKEYS, SIZES, MIGRATEs) while a slot
 * has keys, then NODE to the target, the source and each other master, one pipeline each,
 * for every slot emptied. Stops (1) before a batch once spent or paced out: the slots
 * emptied are closed all the same, the others left open (RESUMING). Returns 0, 1, or -1
 * at the first slot that failed (err). */
static int run_group(run_t *r, char *err, size_t errlen)
{
    const slotmove_io_t *io = r->io;
    int64_t budget = r->job->budget_ns;
    int rc = round_of(r, SLOTMOVE_IMPORTING, err, errlen);
    if (!rc)
        rc = round_of(r, SLOTMOVE_MIGRATING, err, errlen);
    while (!rc && (any_in(r, SLOTMOVE_GETKEYS) || any_in(r, SLOTMOVE_SIZES))) {
        if (io->tick)
            io->tick(io->tick_arg);
        if (spent(r, 0, budget) || pace(r, 0, budget)) {
            rc = 1;
            break;
        }
        snprintf(r->num[2], sizeof(r->num[2]), "%zu",
                 slotmove_list_count(r->job->batch_bytes, r->bytes_seen, r->keys_seen));
        rc = round_of(r, SLOTMOVE_GETKEYS, err, errlen);
        if (!rc)
            rc = sizes_round(r, err, errlen);
        while (!rc && any_in(r, SLOTMOVE_MIGRATE)) { /* PIPELINES; again with REPLACE after a BUSYKEY */
            pace_pipeline(r);
            rc = round_of(r, SLOTMOVE_MIGRATE, err, errlen);
        }
    }
    if (rc < 0)
        return rc;
    int closed = close_round(r, err, errlen);
    if (!closed)
        closed = round_of(r, SLOTMOVE_NODE_SOURCE, err, errlen);
    while (!closed && any_in(r, SLOTMOVE_NODE_OTHERS))
        closed = round_of(r, SLOTMOVE_NODE_OTHERS, err, errlen);
    return closed ? closed : rc;
}

/* The slots the source still has to do with (it owns them, or has them MIGRATING): what
 * its own CLUSTER NODES line says now. A plan made from an older observation may name
 * slots moved since: they are skipped, not moved again. Returns 0, or -1 with err. */
static int source_slots(const slotmove_io_t *io, cn_slots_t *mine, slotmove_progress_t *pr, char *err, size_t errlen)
{
    static const char *const argv[] = {"CLUSTER", "NODES"};
    static const size_t lens[] = {7, 5};
    char e[256] = "";
    redisReply *r = io->command(io->user, SLOTMOVE_TO_SOURCE, 2, argv, lens, e, sizeof(e));
    pr->commands++;
    pr->round_trips++;
    cn_view_t *v = NULL;
    int rc = -1;
    if (!r || r->type != REDIS_REPLY_STRING) {
        snprintf(err, errlen, "CLUSTER NODES on the source: %s", r ? answer(r, NULL) : e);
    } else if (cn_parse(r->str, r->len, &v, e, sizeof(e)) || !cn_myself(v)) {
        snprintf(err, errlen, "CLUSTER NODES on the source: %s", *e ? e : "no myself line");
    } else {
        const cn_node_t *me = cn_myself(v);
        memset(mine, 0, sizeof(*mine));
        cn_slots_add_node(mine, me);
        for (size_t i = 0; i < me->nopen; i++)
            if (!me->open[i].importing)
                cn_slots_set(mine, me->open[i].slot);
        rc = 0;
    }
    cn_view_destroy(&v);
    freeReplyObject(r);
    return rc;
}

/* ---- REPLICATED ---------------------------------------------------------------------------- */

/* The integer after "key:" in INFO text, -1 when none. */
static int64_t info_int(const char *info, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, kl) && p[kl] == ':')
            return strtoll(p + kl + 1, NULL, 10);
    return -1;
}

/* The replica lines of INFO text (slave0:..., slave1:...). */
static int replica_lines(const char *info)
{
    int n = 0;
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += !strncmp(p, "slave", 5) && p[5] >= '0' && p[5] <= '9';
    return n;
}

int slotmove_acked(const char *info, int64_t offset)
{
    int n = 0;
    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "slave", 5) || p[5] < '0' || p[5] > '9')
            continue;
        size_t len = strcspn(p, "\r\n");
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
        const char *st = strstr(line, ",state="), *off = strstr(line, ",offset=");
        n += st && off && !strncmp(st + 7, "online,", 7) && strtoll(off + 8, NULL, 10) >= offset;
    }
    return n;
}

/* INFO replication of the target into *reply (a string), or -1 with err. */
static int target_info(const run_t *r, redisReply **reply, char *err, size_t errlen)
{
    static const char *const argv[] = {"INFO", "replication"};
    static const size_t lens[] = {4, 11};
    char e[256] = "";
    *reply = r->io->command(r->io->user, SLOTMOVE_TO_TARGET, 2, argv, lens, e, sizeof(e));
    r->pr->commands++;
    if (*reply && (*reply)->type == REDIS_REPLY_STRING)
        return 0;
    snprintf(err, errlen, "INFO replication on the target: %s", *reply ? answer(*reply, NULL) : e);
    freeReplyObject(*reply);
    *reply = NULL;
    return -1;
}

/* WAIT <connected + 1> SLOTMOVE_ACK_WAIT_MS on the target: its replicas acknowledge now. */
static void ask_acks(const run_t *r, int connected)
{
    char num[16], ms[16], e[256];
    snprintf(num, sizeof(num), "%d", connected + 1);
    snprintf(ms, sizeof(ms), "%d", SLOTMOVE_ACK_WAIT_MS);
    const char *argv[] = {"WAIT", num, ms};
    const size_t lens[] = {4, strlen(num), strlen(ms)};
    freeReplyObject(r->io->command(r->io->user, SLOTMOVE_TO_TARGET, 3, argv, lens, e, sizeof(e)));
    r->pr->commands++;
}

/* 1 when node `to`'s own CLUSTER NODES credits the target with every slot the run closed. */
static int credits(const run_t *r, int to)
{
    static const char *const argv[] = {"CLUSTER", "NODES"};
    static const size_t lens[] = {7, 5};
    char e[256];
    redisReply *reply = r->io->command(r->io->user, to, 2, argv, lens, e, sizeof(e));
    r->pr->commands++;
    cn_view_t *v = NULL;
    const cn_node_t *t = reply && reply->type == REDIS_REPLY_STRING &&
                         !cn_parse(reply->str, reply->len, &v, e, sizeof(e)) ? cn_find(v, r->job->target.id) : NULL;
    cn_slots_t has;
    memset(&has, 0, sizeof(has));
    if (t)
        cn_slots_add_node(&has, t);
    int ok = t != NULL;
    for (int s = 0; s < CN_SLOTS && ok; s++)
        ok = !cn_slots_has(&r->done, s) || cn_slots_has(&has, s);
    cn_view_destroy(&v);
    freeReplyObject(reply);
    return ok;
}

/* How many of the job's target replicas credit the target with the run's slots. */
static int replicas_credit(const run_t *r)
{
    int n = 0;
    for (size_t i = 0; i < r->job->nreplicas && i < SLOTMOVE_MAX_REPLICAS; i++)
        n += credits(r, SLOTMOVE_TO_REPLICA(i));
    return n;
}

/* REPLICATED: the target's replicas hold what the run moved and, when the job names them
 * and the run closed slots, credit the target with those slots in their own view.
 * Returns 0, or -1 with err. */
static int confirm(const run_t *r, char *err, size_t errlen)
{
    int64_t start = r->io->now_ns(r->io->user), want = -1;
    int views = r->pr->slots_done > 0 ? (int)r->job->nreplicas : 0;
    if (views > r->job->wait_replicas)
        views = r->job->wait_replicas;
    for (int round = 0;; round++) {
        redisReply *info = NULL;
        if (target_info(r, &info, err, errlen))
            return -1;
        if (want < 0)
            want = info_int(info->str, "master_repl_offset");
        int acked = slotmove_acked(info->str, want), connected = replica_lines(info->str), credited = 0;
        freeReplyObject(info);
        if (want >= 0 && acked >= r->job->wait_replicas && (credited = views ? replicas_credit(r) : 0) >= views)
            return 0;
        if (want < 0 || r->io->now_ns(r->io->user) - start >= SLOTMOVE_CONFIRM_NS ||
            round >= SLOTMOVE_CONFIRM_NS / (SLOTMOVE_ACK_WAIT_MS * 1000000)) {
            if (want >= 0 && acked >= r->job->wait_replicas)
                snprintf(err, errlen, "the target's replicas did not credit it with the moved slots: %d of %d "
                         "within %lld ms", credited, views, (long long)(SLOTMOVE_CONFIRM_NS / 1000000));
            else
                snprintf(err, errlen, "the target's replicas did not acknowledge the moved keys: %d of %d at "
                         "offset %lld within %lld ms", acked, r->job->wait_replicas, (long long)want,
                         (long long)(SLOTMOVE_CONFIRM_NS / 1000000));
            return -1;
        }
        ask_acks(r, connected);
    }
}

static void group_free(run_t *r)
{
    for (size_t i = 0; i < r->ng; i++) {
        freeReplyObject(r->g[i].keys);
        r->g[i].keys = NULL;
    }
    r->ng = 0;
}

/* The next group of the job's slots from *x, *s on (the source's: the others skipped),
 * started at IMPORTING into r->g. Returns how many. */
static size_t next_group(run_t *r, size_t *x, int *s)
{
    const slotmove_job_t *job = r->job;
    size_t max = job->group_slots > 0 && job->group_slots < SLOTMOVE_MAX_GROUP ? (size_t)job->group_slots
                                                                                : SLOTMOVE_MAX_GROUP;
    group_free(r);
    for (; *x < job->nranges && r->ng < max; *x += 1, *s = -1) {
        if (*s < job->ranges[*x].from)
            *s = job->ranges[*x].from;
        for (; *s <= job->ranges[*x].to && r->ng < max; *s += 1) {
            if (!cn_slots_has(&r->mine, *s)) {
                r->pr->skipped++;
                continue;
            }
            mach_t *m = &r->g[r->ng++];
            memset(m, 0, sizeof(*m));
            slotmove_start(&m->m, *s);
            snprintf(m->num, sizeof(m->num), "%d", *s);
        }
        if (*s <= job->ranges[*x].to)
            break;
    }
    return r->ng;
}

int slotmove_run(const slotmove_job_t *job, const slotmove_io_t *io, const char *password,
                 slotmove_progress_t *progress, char *err, size_t errlen)
{
    memset(progress, 0, sizeof(*progress));
    err[0] = '\0';
    run_t *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        progress->failed = 1;
        return -1;
    }
    *r = (run_t){.job = job, .io = io, .password = password, .pr = progress, .start = io->now_ns(io->user)};
    r->pipe_bytes = job->pipeline_bytes > 0 ? job->pipeline_bytes : SLOTMOVE_DEFAULT_PIPELINE_BYTES;
    r->pipe_migrates = job->pipeline_migrates <= 0 ? SLOTMOVE_PIPELINE_MIGRATES
                       : job->pipeline_migrates < SLOTMOVE_MAX_GROUP ? (size_t)job->pipeline_migrates
                                                                     : SLOTMOVE_MAX_GROUP;
    snprintf(r->num[0], sizeof(r->num[0]), "%d", job->target.port);
    snprintf(r->num[1], sizeof(r->num[1]), "%d", SLOTMOVE_MIGRATE_TIMEOUT_MS);
    int rc = source_slots(io, &r->mine, progress, err, errlen);
    size_t x = 0;
    int s = -1;
    while (!rc && next_group(r, &x, &s)) {
        if (io->tick)
            io->tick(io->tick_arg);
        if (spent(r, 1, job->budget_ns) || pace(r, 1, job->budget_ns)) {
            rc = 1;
            break;
        }
        rc = run_group(r, err, errlen);
        for (size_t i = 0; i < r->ng; i++)
            if (r->g[i].m.state == SLOTMOVE_DONE) {
                progress->slots_done++;
                cn_slots_set(&r->done, r->g[i].m.slot);
            }
    }
    progress->stopped = rc == 1;
    if (rc >= 0 && (progress->keys > 0 || (progress->slots_done > 0 && job->nreplicas > 0)) &&
        job->wait_replicas > 0 && confirm(r, err, errlen))
        rc = -1;
    progress->failed = rc < 0;
    if (rc >= 0)
        pace_end(r);
    group_free(r);
    free(r);
    return rc;
}

/* ---- the job as JSON ---------------------------------------------------------------------- */

void slotmove_count(const char *ns, const char *cluster, const slotmove_progress_t *progress)
{
    metrics_registry_t *reg = metrics_default();
    const char *labels[] = {ns ? ns : "", cluster ? cluster : ""};
    metric_counter_add(metrics_counter(reg, "rdc_redis_cluster_moved_keys_total",
                                       "Cluster mode: keys moved between shards (MIGRATE).", "namespace,rediscluster"),
                       labels, (double)progress->keys);
    metric_counter_add(metrics_counter(reg, "rdc_redis_cluster_moved_bytes_total",
                                       "Cluster mode: bytes moved between shards (the keys' MEMORY USAGE).",
                                       "namespace,rediscluster"),
                       labels, (double)progress->bytes);
    metric_counter_add(metrics_counter(reg, "rdc_redis_cluster_moved_slots_total",
                                       "Cluster mode: hash slots moved between shards.", "namespace,rediscluster"),
                       labels, (double)progress->slots_done);
}

static json_object *node_json(const slotmove_node_t *n, int *oom)
{
    json_object *o = jsonx_new_obj(oom);
    jsonx_put(o, "pod", jsonx_new_str(n->pod, oom), oom);
    jsonx_put(o, "ip", jsonx_new_str(n->ip, oom), oom);
    jsonx_put(o, "port", jsonx_new_int(n->port, oom), oom);
    jsonx_put(o, "id", jsonx_new_str(n->id, oom), oom);
    return o;
}

json_object *slotmove_job_to_json(const slotmove_job_t *job)
{
    int oom = 0;
    char slots[1024];
    cn_ranges_text(job->ranges, job->nranges, slots, sizeof(slots));
    json_object *o = jsonx_new_obj(&oom), *others = jsonx_new_arr(&oom), *replicas = NULL;
    jsonx_put(o, "cluster", jsonx_new_str(job->cluster, &oom), &oom);
    jsonx_put(o, "slots", jsonx_new_str(slots, &oom), &oom);
    jsonx_put(o, "source", node_json(&job->source, &oom), &oom);
    jsonx_put(o, "target", node_json(&job->target, &oom), &oom);
    for (size_t i = 0; i < job->nothers; i++)
        jsonx_push(others, node_json(&job->others[i], &oom), &oom);
    jsonx_put(o, "others", others, &oom);
    jsonx_put(o, "batchBytes", jsonx_new_int(job->batch_bytes, &oom), &oom);
    if (job->pipeline_bytes > 0)
        jsonx_put(o, "pipelineBytes", jsonx_new_int(job->pipeline_bytes, &oom), &oom);
    jsonx_put(o, "maxBytes", jsonx_new_int(job->max_bytes, &oom), &oom);
    jsonx_put(o, "budgetMs", jsonx_new_int(job->budget_ns / 1000000, &oom), &oom);
    jsonx_put(o, "bytesPerSecond", jsonx_new_int(job->bytes_per_second, &oom), &oom);
    jsonx_put(o, "waitReplicas", jsonx_new_int(job->wait_replicas, &oom), &oom);
    if (job->nreplicas) {
        replicas = jsonx_new_arr(&oom);
        for (size_t i = 0; i < job->nreplicas; i++)
            jsonx_push(replicas, node_json(&job->replicas[i], &oom), &oom);
        jsonx_put(o, "replicas", replicas, &oom);
    }
    if (oom) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static int node_from(const json_object *o, slotmove_node_t *n)
{
    const char *pod = JSONX_STR_AT(o, "pod"), *ip = JSONX_STR_AT(o, "ip"), *id = JSONX_STR_AT(o, "id");
    const json_object *port = jsonx_get(o, "port");
    if (!pod || !ip || !*ip || !id || strlen(id) != CN_ID_LEN || !port || !json_object_is_type(port, json_type_int))
        return -1;
    snprintf(n->pod, sizeof(n->pod), "%s", pod);
    snprintf(n->ip, sizeof(n->ip), "%s", ip);
    snprintf(n->id, sizeof(n->id), "%s", id);
    n->port = (int)json_object_get_int64(port);
    return n->port > 0 && n->port < 65536 ? 0 : -1;
}

static int64_t int_of(const json_object *o, const char *key, int64_t dflt)
{
    const json_object *v = jsonx_get(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}

/* "0-5,9" into ranges. Returns how many, -1 when not such a list. */
static int ranges_from(const char *text, cn_range_t *out, size_t max)
{
    size_t n = 0;
    const char *p = text;
    while (p && *p) {
        char *end;
        long from = strtol(p, &end, 10), to = from;
        if (end == p)
            return -1;
        if (*end == '-') {
            const char *q = end + 1;
            to = strtol(q, &end, 10);
            if (end == q)
                return -1;
        }
        if (from < 0 || to < from || to >= CN_SLOTS || n >= max || (*end && *end != ','))
            return -1;
        out[n++] = (cn_range_t){(int)from, (int)to};
        p = *end ? end + 1 : end;
    }
    return (int)n;
}

int slotmove_job_from_json(const json_object *body, slotmove_job_t *job, char *err, size_t errlen)
{
    memset(job, 0, sizeof(*job));
    const char *slots = JSONX_STR_AT(body, "slots");
    const json_object *others = jsonx_get(body, "others");
    int n = slots ? ranges_from(slots, job->ranges, SLOTMOVE_MAX_RANGES) : -1;
    if (n <= 0 || node_from(jsonx_get(body, "source"), &job->source) ||
        node_from(jsonx_get(body, "target"), &job->target) || jsonx_len(others) > SLOTMOVE_MAX_OTHERS) {
        snprintf(err, errlen, "a slot move needs slots, a source and a target with pod, ip, port and a node id");
        return -1;
    }
    job->nranges = (size_t)n;
    const char *cluster = JSONX_STR_AT(body, "cluster");
    snprintf(job->cluster, sizeof(job->cluster), "%s", cluster ? cluster : "");
    for (size_t i = 0; i < jsonx_len(others); i++)
        if (node_from(json_object_array_get_idx(others, i), &job->others[job->nothers++])) {
            snprintf(err, errlen, "a slot move's others[%zu] is not a node", i);
            return -1;
        }
    const json_object *replicas = jsonx_get(body, "replicas");
    for (size_t i = 0; i < jsonx_len(replicas); i++)
        if (i >= SLOTMOVE_MAX_REPLICAS ||
            node_from(json_object_array_get_idx(replicas, i), &job->replicas[job->nreplicas++])) {
            snprintf(err, errlen, "a slot move's replicas[%zu] is not a node (at most %d)", i, SLOTMOVE_MAX_REPLICAS);
            return -1;
        }
    job->batch_bytes = int_of(body, "batchBytes", SLOTMOVE_DEFAULT_BATCH_BYTES);
    job->pipeline_bytes = int_of(body, "pipelineBytes", 0);
    job->max_bytes = int_of(body, "maxBytes", 0);
    job->budget_ns = int_of(body, "budgetMs", SLOTMOVE_DEFAULT_BUDGET_NS / 1000000) * 1000000;
    job->bytes_per_second = int_of(body, "bytesPerSecond", 0);
    job->wait_replicas = (int)int_of(body, "waitReplicas", 0);
    if (job->batch_bytes <= 0 || job->pipeline_bytes < 0 || job->max_bytes < 0 || job->budget_ns <= 0 ||
        job->bytes_per_second < 0 || job->wait_replicas < 0 || job->wait_replicas > 16) {
        snprintf(err, errlen, "a slot move's batchBytes and budgetMs must be positive, pipelineBytes and "
                 "bytesPerSecond not negative, waitReplicas 0..16");
        return -1;
    }
    return 0;
}
