/* kube_config_yaml: kubeconfig YAML -> kcfg_doc_t, with libyaml's document API.
 *
 * The walk is driven by the schema (clusters[].cluster.server, ...), never by the shape of
 * the input, so its depth is fixed. Aliases are followed (libyaml shares the node), which
 * means a small file can name one big node many times: a budget on copied bytes and
 * visited items bounds the work. Unknown keys are ignored, as kubectl ignores them.
 */
#include "kube_config_internal.h"

#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

/* Work allowed per file: copied bytes plus a fixed cost per visited item. */
#define KCFG_PARSE_BUDGET ((long)32 << 20)
#define KCFG_ITEM_COST 64

typedef struct {
    yaml_document_t *ydoc;
    const char *file;
    long budget;
    char *err;
    size_t errlen;
} pctx_t;

static const char *kind_name(const yaml_node_t *n)
{
    if (!n)
        return "nothing";
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a sequence";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

/* Charge the budget; -1 (with the error set) once it is spent. */
static int spend(pctx_t *c, size_t bytes)
{
    c->budget -= (long)(bytes > (size_t)LONG_MAX / 2 ? (size_t)LONG_MAX / 2 : bytes);
    c->budget -= KCFG_ITEM_COST;
    if (c->budget < 0) {
        kcfg_errf(c->err, c->errlen,
                  "kubeconfig %s: document too large or too repetitive (aliases)", c->file);
        return -1;
    }
    return 0;
}

/* The YAML null: an empty plain scalar, "~" or "null" in any of YAML's spellings. */
static int is_null(const yaml_node_t *n)
{
    if (n == NULL)
        return 1;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    return len == 0 || (len == 1 && v[0] == '~') ||
           (len == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) ||
                         !memcmp(v, "NULL", 4)));
}

/* Value of key in a mapping node, or NULL when absent. The first occurrence wins. */
static yaml_node_t *map_get(pctx_t *c, yaml_node_t *map, const char *key)
{
    size_t klen = strlen(key);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->ydoc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
            memcmp(k->data.scalar.value, key, klen) == 0)
            return yaml_document_get_node(c->ydoc, p->value);
    }
    return NULL;
}

static int type_error(pctx_t *c, const char *path, const char *want, const yaml_node_t *n)
{
    kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: expected %s, got %s", c->file, path,
              want, kind_name(n));
    return -1;
}

/* Copy scalar node n (at path) into *out; null leaves *out NULL. */
static int node_string(pctx_t *c, yaml_node_t *n, const char *path, char **out)
{
    *out = NULL;
    if (is_null(n))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return type_error(c, path, "a string", n);
    size_t len = n->data.scalar.length;
    if (memchr(n->data.scalar.value, '\0', len)) {
        kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: contains a NUL character", c->file,
                  path);
        return -1;
    }
    if (spend(c, len))
        return -1;
    *out = strndup((const char *)n->data.scalar.value, len);
    if (*out == NULL) {
        kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: out of memory", c->file, path);
        return -1;
    }
    return 0;
}

/* Append s to buf (size len, used *off), truncating; buf stays NUL-terminated. */
static void append(char *buf, size_t len, size_t *off, const char *s)
{
    size_t n = strlen(s);
    if (*off + 1 >= len)
        return;
    if (n > len - *off - 1)
        n = len - *off - 1; /* a truncated path is still a useful message */
    memcpy(buf + *off, s, n);
    *off += n;
    buf[*off] = '\0';
}

/* Build "prefix.key" (or "key" at the top) into buf. */
static const char *join_path(char *buf, size_t len, const char *prefix, const char *key)
{
    size_t off = 0;
    buf[0] = '\0';
    append(buf, len, &off, prefix);
    if (prefix[0])
        append(buf, len, &off, ".");
    append(buf, len, &off, key);
    return buf;
}

static int get_string(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key,
                      char **out)
{
    char path[256];
    return node_string(c, map_get(c, map, key), join_path(path, sizeof path, prefix, key),
                       out);
}

/* YAML 1.1 booleans, as go-yaml (and so kubectl) reads them. Null is false. */
static int get_bool(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key,
                    int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "y"};
    static const char *const no[] = {"false", "no", "off", "n"};
    char path[256];
    yaml_node_t *n = map_get(c, map, key);
    *out = 0;
    if (is_null(n))
        return 0;
    join_path(path, sizeof path, prefix, key);
    if (n->type != YAML_SCALAR_NODE)
        return type_error(c, path, "a boolean", n);
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (len == strlen(yes[i]) && strncasecmp(v, yes[i], len) == 0) {
            *out = 1;
            return 0;
        }
        if (len == strlen(no[i]) && strncasecmp(v, no[i], len) == 0)
            return 0;
    }
    kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: expected a boolean, got \"%.*s\"",
              c->file, path, (int)(len > 64 ? 64 : len), v);
    return -1;
}

/* The node at key when it is of type (what: "a mapping", "a sequence" for messages);
 * NULL when absent or null. */
static int get_node(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key, yaml_node_type_t type,
                    const char *what, yaml_node_t **out)
{
    char path[256];
    yaml_node_t *n = map_get(c, map, key);
    *out = NULL;
    if (is_null(n))
        return 0;
    if (n->type != type)
        return type_error(c, join_path(path, sizeof path, prefix, key), what, n);
    *out = n;
    return 0;
}

/* The node at key when it is a mapping (NULL when absent or null). */
static int get_map(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key,
                   yaml_node_t **out)
{
    return get_node(c, map, prefix, key, YAML_MAPPING_NODE, "a mapping", out);
}

/* The node at key when it is a sequence (NULL when absent or null), and its length. */
static int get_seq(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key,
                   yaml_node_t **out, size_t *count)
{
    if (get_node(c, map, prefix, key, YAML_SEQUENCE_NODE, "a sequence", out))
        return -1;
    *count = *out ? (size_t)((*out)->data.sequence.items.top - (*out)->data.sequence.items.start) : 0;
    return 0;
}

static yaml_node_t *seq_item(pctx_t *c, yaml_node_t *seq, size_t i)
{
    return yaml_document_get_node(c->ydoc, seq->data.sequence.items.start[i]);
}

static void *alloc_array(pctx_t *c, size_t n, size_t size, const char *path)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL)
        kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: out of memory", c->file, path);
    return p;
}

/* A sequence of strings at map[key] into a new array (*n items; NULL and 0 when absent).
 * A null item is kept as "" (kubectl reads it as the empty string). */
static int get_string_list(pctx_t *c, yaml_node_t *map, const char *prefix, const char *key,
                           char ***out, size_t *n)
{
    char path[256], ipath[300];
    yaml_node_t *seq;
    size_t count;

    *out = NULL;
    *n = 0;
    if (get_seq(c, map, prefix, key, &seq, &count))
        return -1;
    if (seq == NULL)
        return 0;
    join_path(path, sizeof path, prefix, key);
    if ((*out = alloc_array(c, count, sizeof **out, path)) == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
        if (node_string(c, seq_item(c, seq, i), ipath, &(*out)[*n]))
            return -1;
        if ((*out)[*n] == NULL && ((*out)[*n] = strdup("")) == NULL) {
            kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: out of memory", c->file, ipath);
            return -1;
        }
        (*n)++;
    }
    return 0;
}

/* Free the n strings of v, then v. */
/* The plain fields of an exec section, an env entry of it, a cluster, a user and a
 * context: each one's key in the file, kind, and place in its struct; read in this order
 * (the first bad one is the error), and the strings freed with their struct. */
typedef struct {
    const char *key;
    int is_bool; /* an int read by get_bool; else a string (char *) */
    size_t offset;
} field_t;

#define EXEC_STR(key, m) {key, 0, offsetof(kcfg_exec_config_t, m)}
static const field_t exec_fields[] = {
    EXEC_STR("apiVersion", api_version),
    EXEC_STR("command", command),
    EXEC_STR("installHint", install_hint),
    EXEC_STR("interactiveMode", interactive_mode),
    {"provideClusterInfo", 1, offsetof(kcfg_exec_config_t, provide_cluster_info)},
};
static const field_t env_fields[] = {{"name", 0, offsetof(kcfg_env_var_t, name)},
                                     {"value", 0, offsetof(kcfg_env_var_t, value)}};
#define CLUSTER_STR(key, m) {key, 0, offsetof(kcfg_cluster_t, m)}
static const field_t cluster_fields[] = {
    CLUSTER_STR("server", server),
    CLUSTER_STR("certificate-authority", certificate_authority),
    CLUSTER_STR("certificate-authority-data", certificate_authority_data),
    {"insecure-skip-tls-verify", 1, offsetof(kcfg_cluster_t, insecure_skip_tls_verify)},
    CLUSTER_STR("tls-server-name", tls_server_name),
    CLUSTER_STR("proxy-url", proxy_url),
};
#define USER_STR(key, m) {key, 0, offsetof(kcfg_user_t, m)}
static const field_t user_fields[] = {
    USER_STR("client-certificate", client_certificate), USER_STR("client-certificate-data", client_certificate_data),
    USER_STR("client-key", client_key),                 USER_STR("client-key-data", client_key_data),
    USER_STR("token", token),                           USER_STR("tokenFile", token_file),
    USER_STR("as", as),                                 USER_STR("as-uid", as_uid),
};
#define CONTEXT_STR(key, m) {key, 0, offsetof(kcfg_context_t, m)}
static const field_t context_fields[] = {CONTEXT_STR("cluster", cluster), CONTEXT_STR("user", user),
                                         CONTEXT_STR("namespace", namespace_)};
#define N_FIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* The n fields of item, a struct of the body at bpath. */
static int get_fields(pctx_t *c, yaml_node_t *body, const char *bpath, void *item, const field_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *at = (char *)item + f[i].offset;
        if (f[i].is_bool ? get_bool(c, body, bpath, f[i].key, at) : get_string(c, body, bpath, f[i].key, at))
            return -1;
    }
    return 0;
}

/* Frees the strings of item's n fields. */
static void free_fields(void *item, const field_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!f[i].is_bool)
            free(*(char **)((char *)item + f[i].offset));
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void kcfg_exec_config_free(kcfg_exec_config_t *e)
{
    if (e == NULL)
        return;
    free_fields(e, exec_fields, N_FIELDS(exec_fields));
    free_strings(e->args, e->n_args);
    for (size_t i = 0; i < e->n_env; i++)
        free_fields(&e->env[i], env_fields, N_FIELDS(env_fields));
    free(e->env);
    free(e);
}

/* users[i].user.exec */
static int parse_exec(pctx_t *c, yaml_node_t *m, const char *prefix, kcfg_exec_config_t **out)
{
    char path[256], ipath[300];
    yaml_node_t *seq;
    size_t count;
    kcfg_exec_config_t *e = calloc(1, sizeof *e);
    int rc = -1;

    if (e == NULL) {
        kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: out of memory", c->file, prefix);
        goto out;
    }
    if (get_fields(c, m, prefix, e, exec_fields, N_FIELDS(exec_fields)))
        goto out;

    if (get_string_list(c, m, prefix, "args", &e->args, &e->n_args))
        goto out;

    if (get_seq(c, m, prefix, "env", &seq, &count))
        goto out;
    if (seq) {
        if ((e->env = alloc_array(c, count, sizeof *e->env, prefix)) == NULL)
            goto out;
        for (size_t i = 0; i < count; i++) {
            yaml_node_t *item = seq_item(c, seq, i);
            snprintf(ipath, sizeof ipath, "%s.env[%zu]", prefix, i);
            if (item == NULL || item->type != YAML_MAPPING_NODE) {
                type_error(c, ipath, "a mapping", item);
                goto out;
            }
            kcfg_env_var_t *v = &e->env[e->n_env++];
            if (get_fields(c, item, ipath, v, env_fields, N_FIELDS(env_fields)))
                goto out;
            if (v->name == NULL || v->name[0] == '\0' || strchr(v->name, '=')) {
                kcfg_errf(c->err, c->errlen,
                          "kubeconfig %s: %s: name must be set and must not contain '='",
                          c->file, join_path(path, sizeof path, ipath, "name"));
                goto out;
            }
        }
    }
    rc = 0;
out:
    if (rc) {
        kcfg_exec_config_free(e);
        e = NULL;
    }
    *out = e;
    return rc;
}

/* The "name" of a list entry and its body (entry[body_key]) as a mapping or NULL.
 * *skip is set for entries without a name, which kubectl would keep under "" where no
 * context can reach them. */
static int parse_named(pctx_t *c, yaml_node_t *entry, const char *path, const char *body_key,
                       char **name, yaml_node_t **body)
{
    *name = NULL;
    *body = NULL;
    if (spend(c, 0))
        return -1;
    if (entry == NULL || entry->type != YAML_MAPPING_NODE)
        return type_error(c, path, "a mapping", entry);
    if (get_string(c, entry, path, "name", name))
        return -1;
    if (get_map(c, entry, path, body_key, body)) {
        free(*name);
        *name = NULL;
        return -1;
    }
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kubectl refuses a list that names an entry twice. base points at n structs of stride
 * bytes whose first member is their char *name. Sorting copies keeps this O(n log n). */
static int check_unique(pctx_t *c, const char *field, const void *base, size_t n,
                        size_t stride)
{
    char **names;
    int rc = 0;

    if (n < 2)
        return 0;
    if ((names = alloc_array(c, n, sizeof *names, field)) == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        memcpy(&names[i], (const char *)base + i * stride, sizeof names[i]);
    qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: duplicate name \"%s\"", c->file,
                      field, names[i]);
            rc = -1;
            break;
        }
    free(names);
    return rc;
}

/* Fills one named item (a kcfg_cluster_t, kcfg_user_t or kcfg_context_t, its name set)
 * from its body mapping; bpath names the body in messages ("clusters[0].cluster"). */
typedef int (*named_body_fn)(pctx_t *c, yaml_node_t *body, const char *bpath, void *item);

/* The list root[list] of {name, <field>: body} entries (clusters, users, contexts) into a
 * new array *items of elem-byte structs whose first member is the name, *n of them: an
 * entry without a name is skipped, a null body leaves the rest of the struct zero, fill
 * reads any other. The names must be unique. *items is set (for the caller to free) even
 * when -1 is returned. */
static int parse_named_list(pctx_t *c, yaml_node_t *root, const char *list, const char *field, size_t elem,
                            void **items, size_t *n, named_body_fn fill)
{
    char path[64], bpath[96];
    yaml_node_t *seq, *body;
    size_t count;

    if (get_seq(c, root, "", list, &seq, &count))
        return -1;
    if (seq == NULL)
        return 0;
    if ((*items = alloc_array(c, count, elem, list)) == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        char *name;
        snprintf(path, sizeof path, "%s[%zu]", list, i);
        if (parse_named(c, seq_item(c, seq, i), path, field, &name, &body))
            return -1;
        if (name == NULL || name[0] == '\0') {
            free(name);
            continue;
        }
        char *item = (char *)*items + (*n)++ * elem;
        memcpy(item, &name, sizeof name);
        if (body == NULL)
            continue;
        snprintf(bpath, sizeof bpath, "%s.%s", path, field);
        if (fill(c, body, bpath, item))
            return -1;
    }
    return check_unique(c, list, *items, *n, elem);
}

static int fill_cluster(pctx_t *c, yaml_node_t *body, const char *bpath, void *item)
{
    return get_fields(c, body, bpath, item, cluster_fields, N_FIELDS(cluster_fields));
}

/* users[i].user.as-user-extra: a mapping of key -> list of strings, kept in file order. */
static int parse_as_extra(pctx_t *c, yaml_node_t *body, const char *prefix, kcfg_user_t *u)
{
    char path[256], kpath[512];
    yaml_node_t *m;

    if (get_map(c, body, prefix, "as-user-extra", &m))
        return -1;
    if (m == NULL)
        return 0;
    join_path(path, sizeof path, prefix, "as-user-extra");
    size_t count = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    if ((u->as_extra = alloc_array(c, count, sizeof *u->as_extra, path)) == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        yaml_node_pair_t *p = &m->data.mapping.pairs.start[i];
        yaml_node_t *k = yaml_document_get_node(c->ydoc, p->key);
        kcfg_extra_t *x = &u->as_extra[u->n_as_extra];
        if (spend(c, 0))
            return -1;
        if (node_string(c, k, path, &x->key))
            return -1;
        u->n_as_extra++;
        if (x->key == NULL || x->key[0] == '\0') {
            kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: empty key", c->file, path);
            return -1;
        }
        snprintf(kpath, sizeof kpath, "%s.%s", path, x->key);
        yaml_node_t *v = yaml_document_get_node(c->ydoc, p->value);
        if (is_null(v))
            continue;
        if (v->type != YAML_SEQUENCE_NODE)
            return type_error(c, kpath, "a sequence", v);
        size_t nv = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
        if ((x->values = alloc_array(c, nv, sizeof *x->values, kpath)) == NULL)
            return -1;
        for (size_t j = 0; j < nv; j++) {
            if (node_string(c, seq_item(c, v, j), kpath, &x->values[x->n_values]))
                return -1;
            if (x->values[x->n_values] == NULL &&
                (x->values[x->n_values] = strdup("")) == NULL) {
                kcfg_errf(c->err, c->errlen, "kubeconfig %s: %s: out of memory", c->file,
                          kpath);
                return -1;
            }
            x->n_values++;
        }
    }
    return 0;
}

static int fill_user(pctx_t *c, yaml_node_t *body, const char *bpath, void *item)
{
    char epath[128];
    yaml_node_t *exec;
    kcfg_user_t *u = item;
    if (get_fields(c, body, bpath, item, user_fields, N_FIELDS(user_fields)) ||
        get_string_list(c, body, bpath, "as-groups", &u->as_groups, &u->n_as_groups) ||
        parse_as_extra(c, body, bpath, u))
        return -1;
    u->has_auth_provider = !is_null(map_get(c, body, "auth-provider"));
    if (get_map(c, body, bpath, "exec", &exec))
        return -1;
    snprintf(epath, sizeof epath, "%s.exec", bpath);
    if (exec && parse_exec(c, exec, epath, &u->exec))
        return -1;
    return 0;
}

static int fill_context(pctx_t *c, yaml_node_t *body, const char *bpath, void *item)
{
    return get_fields(c, body, bpath, item, context_fields, N_FIELDS(context_fields));
}

/* The clusters, users and contexts of the document root into d. */
static int parse_lists(pctx_t *c, yaml_node_t *root, kcfg_doc_t *d)
{
    void *clusters = NULL, *users = NULL, *contexts = NULL;
    int rc = parse_named_list(c, root, "clusters", "cluster", sizeof *d->clusters, &clusters, &d->n_clusters,
                              fill_cluster) ||
             parse_named_list(c, root, "users", "user", sizeof *d->users, &users, &d->n_users, fill_user) ||
             parse_named_list(c, root, "contexts", "context", sizeof *d->contexts, &contexts, &d->n_contexts,
                              fill_context);
    d->clusters = clusters;
    d->users = users;
    d->contexts = contexts;
    return rc ? -1 : 0;
}

/* 1-based line of byte offset off in buf (for reader errors, which carry no mark). */
static size_t line_of_offset(const char *buf, size_t len, size_t off)
{
    size_t line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += buf[i] == '\n';
    return line;
}

static void yaml_error(const yaml_parser_t *p, const char *buf, size_t len, const char *file,
                       char *err, size_t errlen)
{
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->error == YAML_READER_ERROR) {
        kcfg_errf(err, errlen, "kubeconfig %s: invalid YAML at line %zu (byte %zu): %s", file,
                  line_of_offset(buf, len, p->problem_offset), p->problem_offset, problem);
    } else if (p->context) {
        kcfg_errf(err, errlen,
                  "kubeconfig %s: invalid YAML at line %zu, column %zu: %s (%s at line %zu)",
                  file, p->problem_mark.line + 1, p->problem_mark.column + 1, problem,
                  p->context, p->context_mark.line + 1);
    } else {
        kcfg_errf(err, errlen, "kubeconfig %s: invalid YAML at line %zu, column %zu: %s",
                  file, p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
    }
}

/* Absolute directory of path: its dirname, made absolute against the working directory
 * (as kubectl does with filepath.Abs). Returns a new string or NULL. */
static char *abs_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char cwd[PATH_MAX];
    char *dir = NULL;

    if (slash == path)
        return strdup("/");
    if (slash && path[0] == '/')
        return strndup(path, (size_t)(slash - path));
    if (getcwd(cwd, sizeof cwd) == NULL)
        return slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    if (slash == NULL)
        return strdup(cwd);
    size_t n = strlen(cwd) + 1 + (size_t)(slash - path) + 1;
    if ((dir = malloc(n)) != NULL)
        snprintf(dir, n, "%s/%.*s", cwd, (int)(slash - path), path);
    return dir;
}

int kcfg_doc_parse(const char *buf, size_t len, const char *path, kcfg_doc_t **out,
                   char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t ydoc;
    int have_parser = 0, have_doc = 0, rc = -1;
    kcfg_doc_t *d = NULL;
    pctx_t c = {.ydoc = &ydoc, .file = path, .budget = KCFG_PARSE_BUDGET,
                .err = err, .errlen = errlen};

    *out = NULL;
    if (len > KCFG_MAX_FILE_BYTES) {
        kcfg_errf(err, errlen, "kubeconfig %s: larger than %zu bytes", path,
                  KCFG_MAX_FILE_BYTES);
        goto out;
    }
    if ((d = calloc(1, sizeof *d)) == NULL || (d->path = strdup(path)) == NULL ||
        (d->dir = abs_dir_of(path)) == NULL) {
        kcfg_errf(err, errlen, "kubeconfig %s: out of memory", path);
        goto out;
    }
    if (!yaml_parser_initialize(&parser)) {
        kcfg_errf(err, errlen, "kubeconfig %s: cannot initialise the YAML parser", path);
        goto out;
    }
    have_parser = 1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &ydoc)) {
        yaml_error(&parser, buf, len, path, err, errlen);
        goto out;
    }
    have_doc = 1;

    yaml_node_t *root = yaml_document_get_root_node(&ydoc);
    if (!is_null(root)) { /* an empty file is an empty configuration, as for kubectl */
        if (root->type != YAML_MAPPING_NODE) {
            type_error(&c, "top level", "a mapping", root);
            goto out;
        }
        if (get_string(&c, root, "", "current-context", &d->current_context) ||
            parse_lists(&c, root, d))
            goto out;
    }
    rc = 0;
out:
    if (have_doc)
        yaml_document_delete(&ydoc);
    if (have_parser)
        yaml_parser_delete(&parser);
    if (rc)
        kcfg_doc_destroy(&d);
    *out = d;
    return rc;
}

void kcfg_doc_destroy(kcfg_doc_t **doc_p)
{
    if (doc_p == NULL || *doc_p == NULL)
        return;
    kcfg_doc_t *d = *doc_p;
    for (size_t i = 0; i < d->n_clusters; i++) {
        free(d->clusters[i].name);
        free_fields(&d->clusters[i], cluster_fields, N_FIELDS(cluster_fields));
    }
    free(d->clusters);
    for (size_t i = 0; i < d->n_users; i++) {
        kcfg_user_t *u = &d->users[i];
        free(u->name);
        free_fields(u, user_fields, N_FIELDS(user_fields));
        kcfg_exec_config_free(u->exec);
        free_strings(u->as_groups, u->n_as_groups);
        for (size_t j = 0; j < u->n_as_extra; j++) {
            free(u->as_extra[j].key);
            free_strings(u->as_extra[j].values, u->as_extra[j].n_values);
        }
        free(u->as_extra);
    }
    free(d->users);
    for (size_t i = 0; i < d->n_contexts; i++) {
        free(d->contexts[i].name);
        free_fields(&d->contexts[i], context_fields, N_FIELDS(context_fields));
    }
    free(d->contexts);
    free(d->current_context);
    free(d->path);
    free(d->dir);
    free(d);
    *doc_p = NULL;
}
