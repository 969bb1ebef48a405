/* classcheck: may spec.storage.size grow on this StorageClass? See classcheck.h. */
#include "classcheck.h"

#include "clock.h"
#include "jsonx.h"
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
    kube_client_t *client;
    char why_none[512];
};

classcheck_reader_t *classcheck_reader_new(kube_client_t *client, const char *why_none)
{
    classcheck_reader_t *r = calloc(1, sizeof(*r));
    if (r) {
        r->client = client;
        snprintf(r->why_none, sizeof(r->why_none), "%s", why_none ? why_none : "no API client");
    }
    return r;
}

void classcheck_reader_destroy(classcheck_reader_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

int classcheck_read(void *user, const char *cls, json_object **out, char *err, size_t errlen)
{
    classcheck_reader_t *r = user;
    kube_req_opts_t ro = {0};
    kube_error_t kerr;
    buf_t path;
    char *rv = NULL;
    int rc = -1;
    *out = NULL;
    if (!r->client) {
        snprintf(err, errlen, "%s", r->why_none);
        return -1;
    }
    kube_error_clear(&kerr);
    buf_init(&path, 1024);
    if (kube_path(&path, "storage.k8s.io", "v1", NULL, "storageclasses", cls, NULL)) {
        snprintf(err, errlen, "cannot make the path of StorageClass %s", cls ? cls : "(list)");
        goto out;
    }
    kube_client_set_deadline(r->client, clock_mono_ns() + (int64_t)CLASSCHECK_TIMEOUT_MS * 1000000);
    int krc = cls ? kube_client_get(r->client, buf_str(&path), &ro, out, &kerr)
                  : kube_client_list_all(r->client, buf_str(&path), &ro, out, &rv, &kerr);
    kube_client_set_deadline(r->client, 0);
    if (krc) {
        kube_error_str(&kerr, err, errlen);
        goto out;
    }
    rc = 0;
out:
    free(rv);
    buf_free(&path);
    return rc;
}
