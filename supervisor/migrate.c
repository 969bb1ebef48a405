/* migrate: storage version migration of RedisClusters. See migrate.h. */
#include "migrate.h"

#include "buf.h"
#include "clock.h"
#include "jsonx.h"
#include "ratelimit.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAX_BYTES (1 << 20) /* a state file is a few hundred bytes; refuse anything huge */
#define MAX_RESTARTS 3            /* listings started over after an expired continue token */

typedef struct {
    kube_client_t *c;
    const char *crd, *group, *resource, *version, *state_file;
    long page_size;
    int max_conflicts, dry_run;
    ratelimit_t rl;
    int64_t (*now_ns)(void *);
    void (*sleep_ns)(void *, int64_t);
    void *clock_user;
    migrate_report_t *r;
    kube_error_code_t obj_code; /* code of the last object that failed */
    kube_error_t obj_err;
} run_t;

static int64_t real_now(void *user)
{
    (void)user;
    return clock_mono_ns();
}

static void real_sleep(void *user, int64_t ns)
{
    (void)user;
    struct timespec ts = {(time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* Fill err (optional) as a client-side error. Returns code. */
static int fail(kube_error_t *err, kube_error_code_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(kube_error_t *err, kube_error_code_t code, const char *fmt, ...)
{
    if (err) {
        kube_error_clear(err);
        err->code = code;
        BUF_FORMAT_VA(err->message, sizeof(err->message), fmt);
    }
    return code;
}

/* "v1alpha1,v1" from a JSON array of strings. */
static void join_versions(const json_object *arr, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    if (!arr || !json_object_is_type(arr, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(arr) && off < len; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        int n = snprintf(out + off, len - off, "%s%s", i ? "," : "",
                         v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "?");
        if (n < 0)
            break;
        off += (size_t)n;
    }
}

/* Percent-encode s (a continue token) into out. */
static int put_encoded(buf_t *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                    ch == '.' || ch == '_' || ch == '~';
        char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
        if (plain ? buf_append(out, s, 1) : buf_append(out, enc, 3))
            return -1;
    }
    return 0;
}

/* ---- The CRD ------------------------------------------------------------------------- */

/* Read the CRD: its storage version must be run->version. Fills stored_before and
 * already_done. */
static int check_crd(run_t *run, kube_error_t *err)
{
    buf_t path;
    buf_init(&path, 4096);
    json_object *crd = NULL;
    int rc;
    if (kube_path(&path, "apiextensions.k8s.io", "v1", NULL, "customresourcedefinitions", run->crd, NULL)) {
        rc = fail(err, KERR_CONFIG, "CRD name \"%.200s\": not a valid name", run->crd);
        goto out;
    }
    if ((rc = kube_client_get(run->c, buf_str(&path), NULL, &crd, err)))
        goto out;
    const char *storage = NULL;
    json_object *versions = jsonx_get(jsonx_get(crd, "spec"), "versions");
    for (size_t i = 0; versions && json_object_is_type(versions, json_type_array) &&
                       i < json_object_array_length(versions); i++) {
        json_object *v = json_object_array_get_idx(versions, i), *st = jsonx_get(v, "storage");
        if (st && json_object_is_type(st, json_type_boolean) && json_object_get_boolean(st))
            jsonx_string(v, "name", &storage);
    }
    json_object *stored = jsonx_get(jsonx_get(crd, "status"), "storedVersions");
    join_versions(stored, run->r->stored_before, sizeof(run->r->stored_before));
    if (!storage || strcmp(storage, run->version)) {
        rc = fail(err, KERR_CONFIG,
                  "CRD %s: the storage version is %s, not %s: apply the CRD with %s as its storage version first",
                  run->crd, storage ? storage : "unknown", run->version, run->version);
        goto out;
    }
    run->r->already_done = !strcmp(run->r->stored_before, run->version);
out:
    json_object_put(crd);
    buf_free(&path);
    return rc;
}

static int patch_stored_versions(run_t *run, kube_error_t *err)
{
    buf_t path;
    buf_init(&path, 4096);
    int oom = 0, rc;
    json_object *patch = jsonx_new_obj(&oom), *status = jsonx_new_obj(&oom), *list = jsonx_new_arr(&oom), *out = NULL;
    jsonx_push(list, jsonx_new_str(run->version, &oom), &oom);
    jsonx_put(status, "storedVersions", list, &oom);
    jsonx_put(patch, "status", status, &oom);
    if (oom || kube_path(&path, "apiextensions.k8s.io", "v1", NULL, "customresourcedefinitions", run->crd, "status")) {
        rc = fail(err, KERR_CONFIG, "patching storedVersions of %s: out of memory", run->crd);
        goto out;
    }
    if ((rc = kube_client_patch(run->c, buf_str(&path), KUBE_PATCH_MERGE, patch, NULL, &out, err)))
        goto out;
    run->r->stored_versions_patched = 1;
    join_versions(jsonx_get(jsonx_get(out, "status"), "storedVersions"), run->r->stored_after,
                  sizeof(run->r->stored_after));
out:
    json_object_put(out);
    json_object_put(patch);
    buf_free(&path);
    return rc;
}

/* ---- The state file -------------------------------------------------------------------- */

static const char *const COUNT_KEYS[] = {"listed", "rewritten", "unchanged", "conflicts", "gone", "failed"};

static uint64_t *count_of(migrate_report_t *r, size_t i)
{
    uint64_t *const counts[] = {&r->listed, &r->rewritten, &r->unchanged, &r->conflicts, &r->gone, &r->failed};
    return counts[i];
}

/* Load the state file: on a match, the counts into the report and *cont (malloc'd). A
 * missing, unreadable or foreign file is no state. */
static void state_load(run_t *run, char **cont)
{
    *cont = NULL;
    if (!run->state_file)
        return;
    FILE *f = fopen(run->state_file, "re");
    if (!f)
        return;
    char *text = malloc(STATE_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, STATE_MAX_BYTES + 1, f) : 0;
    fclose(f);
    json_object *st = NULL;
    if (text && n <= STATE_MAX_BYTES) {
        text[n] = '\0';
        st = json_tokener_parse(text);
    }
    free(text);
    const char *crd = NULL, *version = NULL, *c = NULL;
    jsonx_string(st, "crd", &crd);
    jsonx_string(st, "version", &version);
    jsonx_string(st, "continue", &c);
    if (crd && version && c && *c && !strcmp(crd, run->crd) && !strcmp(version, run->version) &&
        (*cont = strdup(c))) {
        for (size_t i = 0; i < sizeof(COUNT_KEYS) / sizeof(COUNT_KEYS[0]); i++) {
            json_object *v = jsonx_get(st, COUNT_KEYS[i]);
            if (v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
                *count_of(run->r, i) = (uint64_t)json_object_get_int64(v);
        }
        run->r->resumed = 1;
    }
    json_object_put(st);
}

/* Write the progress (cont = the next page's token) to FILE.new and rename it into place.
 * A failure is not fatal (the run is idempotent): it only loses the resume point. */
static void state_save(run_t *run, const char *cont)
{
    if (!run->state_file)
        return;
    int oom = 0;
    json_object *st = jsonx_new_obj(&oom);
    jsonx_put(st, "crd", jsonx_new_str(run->crd, &oom), &oom);
    jsonx_put(st, "version", jsonx_new_str(run->version, &oom), &oom);
    jsonx_put(st, "continue", jsonx_new_str(cont, &oom), &oom);
    for (size_t i = 0; i < sizeof(COUNT_KEYS) / sizeof(COUNT_KEYS[0]); i++)
        jsonx_put(st, COUNT_KEYS[i], jsonx_new_int((int64_t)*count_of(run->r, i), &oom), &oom);
    buf_t tmp;
    buf_init(&tmp, 8192);
    const char *text = oom ? NULL : json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN);
    if (text && !buf_printf(&tmp, "%s.new", run->state_file)) {
        FILE *f = fopen(buf_str(&tmp), "we");
        if (f) {
            int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f) || fsync(fileno(f));
            bad |= fclose(f) != 0;
            if (bad || rename(buf_str(&tmp), run->state_file))
                unlink(buf_str(&tmp));
        }
    }
    buf_free(&tmp);
    json_object_put(st);
}

/* ---- Rewriting one object ------------------------------------------------------------------ */

static void wait_turn(run_t *run)
{
    int64_t wait = ratelimit_reserve(&run->rl, run->now_ns(run->clock_user));
    if (wait > 0)
        run->sleep_ns(run->clock_user, wait);
}

static void object_failed(run_t *run, const char *ns, const char *name, const kube_error_t *e)
{
    run->r->failed++;
    run->obj_code = e->code;
    run->obj_err = *e;
    buf_t b;
    buf_init(&b, sizeof(run->r->last_error) - 1);
    /* Whatever fits: the cap cuts the message, never the start of the line. */
    if (buf_printf(&b, "%s/%s: %s %s: %s%s%.300s", ns, name, e->method, e->target, kube_error_code_name(e->code),
                   e->message[0] ? ": " : "", e->message))
        buf_printf(&b, "%.63s/%.253s: %s", ns, name, kube_error_code_name(e->code));
    snprintf(run->r->last_error, sizeof(run->r->last_error), "%s", buf_str(&b));
    buf_free(&b);
}

/* PUT item as read; on a conflict read it again and retry. */
static void rewrite_one(run_t *run, json_object *item)
{
    json_object *meta = jsonx_get(item, "metadata"), *obj = json_object_get(item), *out = NULL;
    const char *ns = NULL, *name = NULL, *rv = NULL;
    jsonx_string(meta, "namespace", &ns);
    jsonx_string(meta, "name", &name);
    buf_t path;
    buf_init(&path, 4096);
    kube_error_t e;
    kube_error_clear(&e);
    if (!name || !ns || kube_path(&path, run->group, run->version, ns, run->resource, name, NULL)) {
        fail(&e, KERR_DECODE, "listed object without a valid metadata.namespace and name");
        object_failed(run, ns ? ns : "?", name ? name : "?", &e);
        goto out;
    }
    kube_req_opts_t ro = {.dry_run = run->dry_run};
    for (int attempt = 0;; attempt++) {
        jsonx_string(jsonx_get(obj, "metadata"), "resourceVersion", &rv);
        wait_turn(run);
        int rc = kube_client_update(run->c, buf_str(&path), obj, &ro, &out, &e);
        if (rc == 0) {
            const char *nrv = NULL;
            jsonx_string(jsonx_get(out, "metadata"), "resourceVersion", &nrv);
            if (!run->dry_run && rv && nrv && strcmp(rv, nrv))
                run->r->rewritten++;
            else
                run->r->unchanged++;
            break;
        }
        if (rc == KERR_NOT_FOUND) {
            run->r->gone++;
            break;
        }
        if (rc != KERR_CONFLICT || attempt >= run->max_conflicts) {
            object_failed(run, ns, name, &e);
            break;
        }
        run->r->conflicts++;
        json_object_put(obj);
        obj = NULL;
        rc = kube_client_get(run->c, buf_str(&path), NULL, &obj, &e);
        if (rc == KERR_NOT_FOUND) {
            run->r->gone++;
            break;
        }
        if (rc || !obj) {
            if (!rc)
                fail(&e, KERR_DECODE, "GET %s: empty answer", buf_str(&path));
            object_failed(run, ns, name, &e);
            break;
        }
    }
out:
    json_object_put(out);
    json_object_put(obj);
    buf_free(&path);
}

/* ---- The run -------------------------------------------------------------------------------- */

/* List page by page from *cont (NULL = the first page), rewriting every object. */
static int list_and_rewrite(run_t *run, char **cont, kube_error_t *err)
{
    buf_t path, query;
    buf_init(&path, 4096);
    buf_init(&query, 64 << 10);
    int rc = 0, restarts = 0;
    if (kube_path(&path, run->group, run->version, NULL, run->resource, NULL, NULL)) {
        rc = fail(err, KERR_CONFIG, "group, version or resource missing");
        goto out;
    }
    for (;;) {
        json_object *page = NULL;
        buf_reset(&query);
        buf_printf(&query, "limit=%ld", run->page_size);
        if (*cont && (buf_puts(&query, "&continue=") || put_encoded(&query, *cont))) {
            rc = fail(err, KERR_CONFIG, "continue token too long");
            goto out;
        }
        rc = kube_client_request(run->c, "GET", buf_str(&path), buf_str(&query), NULL, NULL, 0, 1, &page, err);
        if (rc == KERR_GONE && *cont && restarts < MAX_RESTARTS) {
            /* The token expired (etcd compacted): start over; the run is idempotent. */
            restarts++;
            run->r->restarted = 1;
            free(*cont);
            *cont = NULL;
            continue;
        }
        if (rc)
            goto out;
        run->r->pages++;
        json_object *items = jsonx_get(page, "items");
        size_t n = items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
        for (size_t i = 0; i < n; i++) {
            run->r->listed++;
            rewrite_one(run, json_object_array_get_idx(items, i));
        }
        const char *next = NULL;
        jsonx_string(jsonx_get(page, "metadata"), "continue", &next);
        free(*cont);
        *cont = next && *next ? strdup(next) : NULL;
        json_object_put(page);
        if (!*cont)
            break;
        state_save(run, *cont);
    }
out:
    buf_free(&path);
    buf_free(&query);
    return rc;
}

int migrate_storage(kube_client_t *client, const migrate_opts_t *opts, migrate_report_t *report, kube_error_t *err)
{
    static const migrate_opts_t defaults = {0};
    const migrate_opts_t *o = opts ? opts : &defaults;
    memset(report, 0, sizeof(*report));
    if (err)
        kube_error_clear(err);
    run_t run = {
        .c = client,
        .crd = o->crd_name ? o->crd_name : MIGRATE_DEFAULT_CRD,
        .group = o->group ? o->group : MIGRATE_DEFAULT_GROUP,
        .resource = o->resource ? o->resource : MIGRATE_DEFAULT_RESOURCE,
        .version = o->version ? o->version : MIGRATE_DEFAULT_VERSION,
        .state_file = o->state_file,
        .page_size = o->page_size > 0 ? o->page_size : 100,
        .max_conflicts = o->max_conflict_retries < 0 ? 0 : o->max_conflict_retries ? o->max_conflict_retries : 5,
        .dry_run = o->dry_run,
        .now_ns = o->now_ns ? o->now_ns : real_now,
        .sleep_ns = o->sleep_ns ? o->sleep_ns : real_sleep,
        .clock_user = o->clock_user,
        .r = report,
    };
    ratelimit_init(&run.rl, o->qps == 0 ? 10.0 : o->qps, o->burst);
    char *cont = NULL;
    int rc = check_crd(&run, err);
    if (rc || report->already_done)
        goto out;
    state_load(&run, &cont);
    if ((rc = list_and_rewrite(&run, &cont, err)))
        goto out; /* the state file keeps the last page reached */
    if (run.state_file)
        unlink(run.state_file);
    if (report->failed) {
        rc = run.obj_code ? (int)run.obj_code : KERR_OTHER;
        if (err) {
            *err = run.obj_err;
            snprintf(err->message, sizeof(err->message),
                     "%" PRIu64 " object(s) could not be rewritten, "
                     "storedVersions left as [%s]; last: %s",
                     report->failed, report->stored_before, report->last_error);
        }
        goto out;
    }
    if (!run.dry_run)
        rc = patch_stored_versions(&run, err);
out:
    free(cont);
    return rc;
}

int migrate_report_format(const migrate_report_t *r, const migrate_opts_t *opts, buf_t *out)
{
    const char *crd = opts && opts->crd_name ? opts->crd_name : MIGRATE_DEFAULT_CRD;
    const char *version = opts && opts->version ? opts->version : MIGRATE_DEFAULT_VERSION;
    if (r->already_done)
        return buf_printf(out, "migrate-storage %s to %s: nothing to do, storedVersions is [%s]", crd, version,
                          r->stored_before);
    return buf_printf(out,
                      "migrate-storage %s to %s%s: %" PRIu64 " listed, %" PRIu64 " rewritten, %" PRIu64
                      " unchanged, %" PRIu64 " conflicts, %" PRIu64 " gone, %" PRIu64 " failed, %" PRIu64
                      " page%s%s%s; storedVersions [%s]%s%s%s",
                      crd, version, opts && opts->dry_run ? " (dry run)" : "", r->listed, r->rewritten, r->unchanged,
                      r->conflicts, r->gone, r->failed, r->pages, r->pages == 1 ? "" : "s",
                      r->resumed ? ", resumed" : "", r->restarted ? ", listing restarted" : "", r->stored_before,
                      r->stored_versions_patched ? " -> [" : " unchanged",
                      r->stored_versions_patched ? r->stored_after : "", r->stored_versions_patched ? "]" : "");
}
