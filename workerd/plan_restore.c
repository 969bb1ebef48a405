/* plan_restore: RESTORE FROM A REDISBACKUP. See plan_restore.h. */
#include "plan_restore.h"

#include "buf.h"
#include "clock.h"
#include "jsonx.h"
#include "plan_observe.h"
#include "rdc_spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WHERE "spec.restore.from.backup: RedisBackup %s/%s"
#define NO_POD "no pod is created before it has Succeeded"

/* Set out's state, reason (NULL: none) and message (printf-style, cut to its size). */
static void say(plan_restore_t *out, plan_restore_state_t state, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(plan_restore_t *out, plan_restore_state_t state, const char *reason, const char *fmt, ...)
{
    out->state = state;
    out->reason = reason;
    BUF_FORMAT_VA(out->message, sizeof(out->message), fmt);
}

/* BACKOFF: as long as the cluster has waited since its Ready condition turned False,
 * within PLAN_RESTORE_BACKOFF_MIN_NS..MAX_NS. */
static int64_t backoff_ns(const plan_ctx_t *c)
{
    const json_object *ready = plan_observed_cond(jsonx_get(c->rc, "status"), "Ready");
    const char *t = jsonx_str_set(ready, "lastTransitionTime");
    int64_t since = c->now;
    if (!t || !jsonx_str_is(ready, "status", "False") || clock_parse_rfc3339(t, &since) || since > c->now)
        since = c->now;
    int64_t d = c->now - since;
    return d < PLAN_RESTORE_BACKOFF_MIN_NS ? PLAN_RESTORE_BACKOFF_MIN_NS
           : d > PLAN_RESTORE_BACKOFF_MAX_NS ? PLAN_RESTORE_BACKOFF_MAX_NS
                                             : d;
}

/* o[key] = v (copied) when v is a non-empty string. */
static void put_set(json_object *o, const char *key, const char *v, int *oom)
{
    if (v && *v)
        jsonx_put(o, key, jsonx_new_str(v, oom), oom);
}

/* status.restore.source as spec's restore says it (a record read back, or written anew):
 * a new object, NULL with *oom set. */
static json_object *source_of_spec(const rdc_spec_t *spec, int *oom)
{
    json_object *o = jsonx_new_obj(oom);
    put_set(o, "backup", spec->restore.backup, oom);
    put_set(o, "endpoint", spec->restore.endpoint, oom);
    put_set(o, "bucket", spec->restore.bucket, oom);
    put_set(o, "key", spec->restore.key, oom);
    put_set(o, "region", spec->restore.region, oom);
    put_set(o, "credentialsSecret", spec->restore.credentials_secret, oom);
    put_set(o, "caSecret", spec->restore.ca_secret, oom);
    put_set(o, "sha256", spec->restore.sha256, oom);
    if (spec->restore.nshards > 0) {
        json_object *arr = jsonx_new_arr(oom);
        for (int k = 0; k < spec->restore.nshards; k++) {
            json_object *e = jsonx_new_obj(oom);
            put_set(e, "key", spec->restore.shard[k].key, oom);
            put_set(e, "sha256", spec->restore.shard[k].sha256, oom);
            jsonx_push(arr, e, oom);
        }
        jsonx_put(o, "shards", arr, oom);
    }
    return jsonx_done(o, *oom);
}

/* The source a Succeeded RedisBackup rb names (plan_restore.h, Succeeded), with name as
 * backup: a new object, NULL with *oom set. */
static json_object *source_of_backup(const json_object *rb, const char *name, int *oom)
{
    const json_object *spec = jsonx_get(rb, "spec"), *st = jsonx_get(rb, "status");
    json_object *o = jsonx_new_obj(oom);
    put_set(o, "backup", name, oom);
    put_set(o, "endpoint", JSONX_STR_AT(spec, "destination", "endpoint"), oom);
    put_set(o, "bucket", JSONX_STR_AT(spec, "destination", "bucket"), oom);
    put_set(o, "key", jsonx_str_set(st, "key"), oom);
    put_set(o, "region", JSONX_STR_AT(spec, "destination", "region"), oom);
    put_set(o, "credentialsSecret", JSONX_STR_AT(spec, "credentialsSecret", "name"), oom);
    put_set(o, "caSecret", JSONX_STR_AT(spec, "caSecret", "name"), oom);
    put_set(o, "sha256", jsonx_str_set(st, "sha256"), oom);
    const json_object *shards = jsonx_get(st, "shards");
    if (jsonx_len(shards)) { /* CLUSTER: each shard's object (status.shards[k], shard k's) */
        json_object *arr = jsonx_new_arr(oom);
        for (size_t k = 0; k < jsonx_len(shards); k++) {
            const json_object *sh = json_object_array_get_idx(shards, k);
            json_object *e = jsonx_new_obj(oom);
            put_set(e, "key", jsonx_str_set(sh, "key"), oom);
            put_set(e, "sha256", jsonx_str_set(sh, "sha256"), oom);
            jsonx_push(arr, e, oom);
        }
        jsonx_put(o, "shards", arr, oom);
    }
    return jsonx_done(o, *oom);
}

/* Why rb's shape does not fit the cluster (its mode and shards), into why; 0 when it fits.
 * A Cluster-mode backup (status.shards) restores only in Cluster mode, into at least as
 * many shards (shard k's pods restore shard k's object; shards past the backup's start
 * empty and the slots move to them after); a backup of one server only outside it. */
static int misfit(const plan_ctx_t *c, const json_object *rb, char *why, size_t len)
{
    size_t n = jsonx_len(JSONX_AT(rb, "status", "shards"));
    int cluster = c->spec->mode == RDC_MODE_CLUSTER;
    if (n && !cluster)
        snprintf(why, len, "is a Cluster-mode backup of %zu shards: it restores only into a RedisCluster of "
                 "mode Cluster", n);
    else if (!n && cluster)
        snprintf(why, len, "is a backup of one server (Standalone or Replication): a Cluster-mode RedisCluster "
                 "restores from a Cluster-mode backup (one object per shard)");
    else if (n > (size_t)c->spec->cluster.shards)
        snprintf(why, len, "has %zu shards and spec.cluster.shards is %d: restore into at least %zu shards (each "
                 "shard's pods restore that shard's object), then change spec.cluster.shards", n,
                 c->spec->cluster.shards, n);
    else
        return 0;
    return 1;
}

/* RECORDED: 1 when status.restore.source is the spec's backup's and passes the rules;
 * spec's restore fields are then the record's and out->source its copy. -1 when out of
 * memory. */
static int recorded(const plan_ctx_t *c, rdc_spec_t *spec, plan_restore_t *out)
{
    const json_object *rec = JSONX_AT(c->rc, "status", "restore", "source");
    if (!jsonx_str_is(rec, "backup", spec->restore.backup))
        return 0;
    rdc_field_errors_t *errs = rdc_field_errors_new();
    if (!errs)
        return -1;
    size_t n = rdc_spec_parse_restore_source(rec, "status.restore.source", spec, errs);
    int oom = rdc_field_errors_oom(errs);
    rdc_field_errors_destroy(&errs);
    if (oom)
        return -1;
    if (n)
        return 0; /* a record that is not one (edited by hand): resolved again */
    out->state = PLAN_RESTORE_RECORDED;
    out->source = source_of_spec(spec, &oom);
    return out->source ? 1 : -1;
}

/* RESOLVED, or RestoreFailed when the Succeeded RedisBackup rb does not name an object
 * the bucket/key form accepts. Returns 0, or -1 when out of memory. */
static int resolve(const plan_ctx_t *c, const rdc_spec_t *spec, const json_object *rb, plan_restore_t *out)
{
    int oom = 0;
    const char *name = spec->restore.backup;
    char fit[300];
    if (misfit(c, rb, fit, sizeof(fit))) {
        say(out, PLAN_RESTORE_FAILED, "RestoreFailed", WHERE " %s; no pod is created", c->ns, name, fit);
        out->requeue_ns = backoff_ns(c);
        return 0;
    }
    json_object *src = source_of_backup(rb, name, &oom);
    rdc_field_errors_t *errs = src ? rdc_field_errors_new() : NULL;
    rdc_spec_t scratch = *spec;
    buf_t why;
    buf_init(&why, PLAN_API_QUOTED);
    size_t n = errs ? rdc_spec_parse_restore_source(src, "source", &scratch, errs) : 0;
    int bad = !errs || rdc_field_errors_oom(errs) || (n && rdc_field_errors_format(errs, &why));
    rdc_field_errors_destroy(&errs);
    if (!bad && n)
        say(out, PLAN_RESTORE_FAILED, "RestoreFailed",
            WHERE " Succeeded but cannot be restored from: %s; no pod is created", c->ns, name, buf_str(&why));
    else if (!bad)
        say(out, PLAN_RESTORE_RESOLVED, "RestorePending",
            WHERE " Succeeded: its object %s/%s is recorded in status.restore.source; the pods are created from "
                  "that record",
            c->ns, name, scratch.restore.bucket, scratch.restore.key);
    buf_free(&why);
    /* the record as a record reads back (RECORDED: the region defaulted), so that the next
     * plan finds its status already said */
    if (!bad && !n)
        bad = !(out->source = source_of_spec(&scratch, &oom));
    json_object_put(src);
    out->requeue_ns = n ? backoff_ns(c) : PLAN_RESTORE_RECORDED_NS;
    return bad ? -1 : 0;
}

/* The unresolved restore, from what the caller read of the RedisBackup (or the plan's
 * request for it). Returns 0, or -1 when out of memory. */
static int from_backup(const plan_ctx_t *c, const rdc_spec_t *spec, plan_restore_t *out)
{
    const plan_observed_t *m = c->more;
    const char *name = spec->restore.backup;
    out->requeue_ns = backoff_ns(c);
    if (!m || !m->restore_backup_read) {
        plan_set_restore_read(c->plan, name);
        say(out, PLAN_RESTORE_WAITING, "RestorePending", WHERE " is not read yet: " NO_POD, c->ns, name);
        return *plan_oom(c->plan) ? -1 : 0;
    }
    const json_object *rb = jsonx_typed(m->restore_backup, json_type_object);
    const char *phase = JSONX_STR_AT(rb, "status", "phase");
    const char *msg = JSONX_STR_AT(rb, "status", "message");
    if (m->restore_backup_error)
        say(out, PLAN_RESTORE_WAITING, "RestorePending", WHERE " cannot be read (%.*s): " NO_POD, c->ns, name,
            PLAN_API_QUOTED, m->restore_backup_error);
    else if (!rb)
        say(out, PLAN_RESTORE_FAILED, "RestoreFailed", WHERE " does not exist: " NO_POD, c->ns, name);
    else if (phase && !strcmp(phase, "Failed"))
        say(out, PLAN_RESTORE_FAILED, "RestoreFailed",
            WHERE " Failed (%.*s): no pod is created; a failed backup is not taken again: create a new RedisBackup "
                  "of that name, or a new RedisCluster restoring from another one",
            c->ns, name, PLAN_API_QUOTED, msg && *msg ? msg : "no message");
    else if (!phase || strcmp(phase, "Succeeded")) {
        say(out, PLAN_RESTORE_WAITING, "RestorePending", WHERE " is %s: " NO_POD, c->ns, name,
            phase && *phase ? phase : "Pending");
        out->requeue_ns = PLAN_RESTORE_POLL_NS;
    } else
        return resolve(c, spec, rb, out);
    return 0;
}

int plan_restore(const plan_ctx_t *c, rdc_spec_t *spec, plan_restore_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!spec->restore.backup)
        return 0;
    int r = recorded(c, spec, out);
    if (r)
        return r < 0 ? -1 : 0;
    out->hold = 1;
    return from_backup(c, spec, out);
}

void plan_restore_free(plan_restore_t *out)
{
    json_object_put(out->source);
    out->source = NULL;
}
