/* redisexec: one Redis command, synchronously, through the one transport. See
 * redisexec.h. */
#include "redisexec.h"

#include "clusternodes.h"
#include "buf.h"
#include "jsonx.h"
#include "redis_sync.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replace every occurrence of secret in s (NUL-terminated, cap bytes) by token. */
static void scrub(char *s, size_t cap, const char *secret, const char *token)
{
    size_t sl = secret ? strlen(secret) : 0, tl = strlen(token);
    if (!sl)
        return;
    for (char *p = strstr(s, secret); p; p = strstr(p + tl, secret)) {
        size_t rest = strlen(p + sl);
        if ((size_t)(p - s) + tl + rest + 1 > cap) {
            *p = '\0'; /* no room: cut the text there rather than keep the secret */
            return;
        }
        memmove(p + tl, p + sl, rest + 1);
        memcpy(p, token, tl);
    }
}

/* The tokens of cl, each with its secret: the passwords', then the client's. Returns
 * how many (at most 2 + REDISEXEC_MAX_SECRETS). */
static size_t secrets_of(const redisexec_client_t *cl, redisexec_secret_t out[2 + REDISEXEC_MAX_SECRETS])
{
    out[0] = (redisexec_secret_t){REDISEXEC_PASSWORD_TOKEN, cl->password ? cl->password : ""};
    out[1] = (redisexec_secret_t){REDISEXEC_OLD_PASSWORD_TOKEN, cl->old_password ? cl->old_password : ""};
    size_t n = 2;
    for (size_t i = 0; i < cl->n_secrets && i < REDISEXEC_MAX_SECRETS; i++)
        if (cl->secrets[i].token && cl->secrets[i].value)
            out[n++] = cl->secrets[i];
    return n;
}

static void scrub_all(const redisexec_client_t *cl, char *err, size_t errlen)
{
    redisexec_secret_t sec[2 + REDISEXEC_MAX_SECRETS];
    size_t n = secrets_of(cl, sec);
    for (size_t i = 0; errlen && i < n; i++)
        scrub(err, errlen, sec[i].value, sec[i].token);
}

char *redisexec_expand_text(const redisexec_client_t *cl, const char *text)
{
    redisexec_secret_t sec[2 + REDISEXEC_MAX_SECRETS];
    size_t ns = secrets_of(cl, sec);
    buf_t b;
    buf_init(&b, 0);
    int rc = 0;
    for (const char *p = text; *p && !rc;) {
        size_t t = 0;
        while (t < ns && strncmp(p, sec[t].token, strlen(sec[t].token)))
            t++;
        if (t < ns) {
            rc = buf_puts(&b, sec[t].value);
            p += strlen(sec[t].token);
        } else {
            rc = buf_append(&b, p++, 1);
        }
    }
    char *out = rc ? NULL : buf_detach(&b);
    if (!out && !rc)
        out = strdup(""); /* an empty text */
    if (rc && b.data)
        explicit_bzero(b.data, b.alloc);
    buf_free(&b);
    return out;
}

/* 1 when s ends with token. */
static int ends_with(const char *s, size_t n, const char *token)
{
    size_t tl = strlen(token);
    return n >= tl && !strcmp(s + n - tl, token);
}

/* av[i] = argv[i] with a trailing token replaced by its secret (a copy in made[i], which
 * the caller wipes and frees), else argv[i] itself. Returns 0, or -1 when out of memory. */
static int expand_tokens(const redisexec_client_t *cl, int argc, const char *const *argv, const char **av,
                         char **made)
{
    redisexec_secret_t sec[2 + REDISEXEC_MAX_SECRETS];
    size_t ns = secrets_of(cl, sec);
    for (int i = 0; i < argc; i++) {
        av[i] = argv[i];
        size_t n = strlen(argv[i]);
        for (size_t t = 0; t < ns; t++) {
            if (!ends_with(argv[i], n, sec[t].token))
                continue;
            size_t keep = n - strlen(sec[t].token), len = keep + strlen(sec[t].value) + 1;
            if (!(made[i] = malloc(len)))
                return -1;
            snprintf(made[i], len, "%.*s%s", (int)keep, argv[i], sec[t].value);
            av[i] = made[i];
            break;
        }
    }
    return 0;
}

static void free_made(char **made, int argc)
{
    for (int i = 0; i < argc; i++) {
        if (made[i]) {
            explicit_bzero(made[i], strlen(made[i]));
            free(made[i]);
            made[i] = NULL;
        }
    }
}

/* A reply's text for the caller: an integer, a status or a string; "" otherwise. */
static void reply_text(const redisReply *r, char *reply, size_t replylen)
{
    if (!reply || !replylen)
        return;
    if (r->type == REDIS_REPLY_INTEGER)
        snprintf(reply, replylen, "%lld", (long long)r->integer);
    else if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
        snprintf(reply, replylen, "%s", r->str);
}

/* The transport's line "<addr>: <phase>: <why>" as "<phase> <addr>: <why>" (redisexec's
 * lines name what failed first, as they always have); a line of another shape as is. */
static void phase_first(const char *line, const char *addr, char *err, size_t errlen)
{
    size_t al = strlen(addr);
    const char *rest = !strncmp(line, addr, al) && !strncmp(line + al, ": ", 2) ? line + al + 2 : NULL;
    const char *colon = rest ? strstr(rest, ": ") : NULL;
    if (colon)
        snprintf(err, errlen, "%.*s %s: %s", (int)(colon - rest), rest, addr, colon + 2);
    else
        snprintf(err, errlen, "%s", line);
}

/* The node's address as the transport names it ("10.0.0.5:6379", "[fd00::5]:6379"). */
static void addr_of(const char *ip, int port, char *out, size_t len)
{
    snprintf(out, len, strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
}

/* A connection to ip:port as cl says (pod: the name its certificate is checked for).
 * NULL with err (phase first). */
static redis_sync_t *open_node(const redisexec_client_t *cl, const char *pod, const char *ip, int port,
                               int64_t timeout_ns, char *err, size_t errlen)
{
    char name[320] = "", addr[96], line[600];
    if (cl->tls && cl->tls_domain && pod && *pod)
        snprintf(name, sizeof(name), "%s.%s", pod, cl->tls_domain);
    redis_conn_opts_t o = {.host = ip,
                           .port = port,
                           .connect_timeout_ns = timeout_ns,
                           .tls = cl->tls,
                           .tls_server_name = *name ? name : NULL,
                           .password = cl->password,
                           .password_fallback = cl->old_password};
    redis_sync_t *s = redis_sync_open(&o, line, sizeof(line));
    if (!s) {
        addr_of(ip, port, addr, sizeof(addr));
        phase_first(line, addr, err, errlen);
    }
    return s;
}

/* av on s: 0 with the reply's text, or -1 with err (an error reply is one). */
static int command_on(redis_sync_t *s, const char *addr, int argc, const char *const *av, const char *name,
                      int64_t timeout_ns, char *reply, size_t replylen, char *err, size_t errlen)
{
    char line[600];
    redisReply *r = redis_sync_command(s, argc, av, NULL, timeout_ns, line, sizeof(line));
    int rc = -1;
    if (!r)
        phase_first(line, addr, err, errlen);
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "%s %s: %s", name, addr, r->str);
    else
        rc = 0;
    if (!rc)
        reply_text(r, reply, replylen);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* CONFIG SET pairs whose value is REDISEXEC_CURRENT_TOKEN: the server's value (CONFIG
 * GET, on s) into made[i] and av[i]. 0, or -1 with err. */
static int fill_current(redis_sync_t *s, const char *addr, int argc, const char **av, char **made,
                        int64_t timeout_ns, char *err, size_t errlen)
{
    if (argc < 4 || strcasecmp(av[0], "CONFIG") || strcasecmp(av[1], "SET"))
        return 0;
    for (int i = 3; i < argc; i += 2) {
        if (strcmp(av[i], REDISEXEC_CURRENT_TOKEN))
            continue;
        const char *get[3] = {"CONFIG", "GET", av[i - 1]};
        char line[600];
        redisReply *r = redis_sync_command(s, 3, get, NULL, timeout_ns, line, sizeof(line));
        int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING;
        if (ok && !(made[i] = strdup(r->element[1]->str)))
            snprintf(err, errlen, "out of memory");
        else if (!ok && !r)
            phase_first(line, addr, err, errlen);
        else if (!ok)
            snprintf(err, errlen, "CONFIG GET %s %s: no value", av[i - 1], addr);
        if (r)
            freeReplyObject(r);
        if (!made[i])
            return -1;
        av[i] = made[i];
    }
    return 0;
}

static const redisexec_client_t no_client;

int redisexec_run(const redisexec_client_t *cl, const char *pod, const char *ip, int port, int argc,
                  const char *const *argv, int64_t timeout_ns, char *reply, size_t replylen, char *err, size_t errlen)
{
    if (reply && replylen)
        reply[0] = '\0';
    if (argc < 1 || argc > REDISEXEC_MAX_ARGS) {
        snprintf(err, errlen, "a command of %d arguments", argc);
        return -1;
    }
    cl = cl ? cl : &no_client;
    const char *av[REDISEXEC_MAX_ARGS];
    char *made[REDISEXEC_MAX_ARGS] = {0}, addr[96];
    int rc = -1;
    redis_sync_t *s = NULL;
    addr_of(ip, port, addr, sizeof(addr));
    if (expand_tokens(cl, argc, argv, av, made)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!(s = open_node(cl, pod, ip, port, timeout_ns, err, errlen)) ||
        fill_current(s, addr, argc, av, made, timeout_ns, err, errlen))
        goto out;
    rc = command_on(s, addr, argc, av, argv[0], timeout_ns, reply, replylen, err, errlen);
out:
    if (rc) /* ACL SETUSER's errors quote the modifier, password and all */
        scrub_all(cl, err, errlen);
    redis_sync_close(&s);
    free_made(made, argc);
    return rc;
}

int redisexec_command(const char *ip, int port, const char *password, const char *old_password, int argc,
                      const char *const *argv, int64_t timeout_ns, char *reply, size_t replylen, char *err,
                      size_t errlen)
{
    redisexec_client_t cl = {.password = password, .old_password = old_password};
    return redisexec_run(&cl, NULL, ip, port, argc, argv, timeout_ns, reply, replylen, err, errlen);
}

/* The value of "field:" in INFO text, copied into out (up to the line's end). 1 when found. */
static int info_field(const char *text, const char *field, char *out, size_t outlen)
{
    size_t fl = strlen(field);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, field, fl) && p[fl] == ':') {
            const char *v = p + fl + 1;
            size_t n = strcspn(v, "\r\n");
            if (n >= outlen)
                n = outlen - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return 1;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

static int64_t to_int(const char *s, int64_t dflt)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || end == s || *end ? dflt : (int64_t)v;
}

void redisexec_parse_info(const char *text, char *role, size_t rolelen, char *master_host, size_t hostlen,
                          int *master_port, int *link_up, int64_t *offset)
{
    char v[256];
    role[0] = '\0';
    master_host[0] = '\0';
    *master_port = 0;
    *link_up = 0;
    *offset = -1;
    if (info_field(text, "role", v, sizeof(v)) && (!strcmp(v, "master") || !strcmp(v, "slave")))
        snprintf(role, rolelen, "%s", v);
    if (!strcmp(role, "slave")) {
        if (info_field(text, "master_host", master_host, hostlen) == 0)
            master_host[0] = '\0';
        if (info_field(text, "master_port", v, sizeof(v)))
            *master_port = (int)to_int(v, 0);
        *link_up = info_field(text, "master_link_status", v, sizeof(v)) && !strcmp(v, "up");
        if (info_field(text, "slave_repl_offset", v, sizeof(v)))
            *offset = to_int(v, -1);
    }
    if (*offset < 0 && info_field(text, "master_repl_offset", v, sizeof(v)))
        *offset = to_int(v, -1);
}

/* observerd's "cluster" object of the node s (CLUSTER NODES normalized, CLUSTER INFO),
 * or NULL when it cannot be read or memory runs out. */
static json_object *observe_cluster(redis_sync_t *s, const char *addr, int64_t timeout_ns)
{
    enum { CAP = 1 << 18 };
    char *text = malloc(CAP), *norm = malloc(CAP), err[256], info[4096];
    const char *nodes[2] = {"CLUSTER", "NODES"}, *cinfo[2] = {"CLUSTER", "INFO"};
    cn_view_t *v = NULL;
    json_object *o = NULL;
    int oom = 0;
    if (text && norm && !command_on(s, addr, 2, nodes, "CLUSTER", timeout_ns, text, CAP, err, sizeof(err)) &&
        !command_on(s, addr, 2, cinfo, "CLUSTER", timeout_ns, info, sizeof(info), err, sizeof(err))) {
        cn_info_t ci;
        cn_info_parse(info, strlen(info), &ci);
        o = jsonx_new_obj(&oom);
        if (cn_parse(text, strlen(text), &v, err, sizeof(err)) || cn_format(v, norm, CAP))
            jsonx_put(o, "error", jsonx_new_str(err, &oom), &oom);
        else
            jsonx_put(o, "nodes", jsonx_new_str(norm, &oom), &oom);
        if (ci.state_ok >= 0)
            jsonx_put(o, "state", jsonx_new_str(ci.state_ok ? "ok" : "fail", &oom), &oom);
        jsonx_put(o, "slotsAssigned", jsonx_new_int(ci.slots_assigned, &oom), &oom);
        jsonx_put(o, "slotsOk", jsonx_new_int(ci.slots_ok, &oom), &oom);
        jsonx_put(o, "slotsPfail", jsonx_new_int(ci.slots_pfail, &oom), &oom);
        jsonx_put(o, "slotsFail", jsonx_new_int(ci.slots_fail, &oom), &oom);
        jsonx_put(o, "knownNodes", jsonx_new_int(ci.known_nodes, &oom), &oom);
    }
    cn_view_destroy(&v);
    free(text);
    free(norm);
    return jsonx_done(o, oom);
}

/* The keys of every database in INFO keyspace text ("dbN:keys=K,..." lines), 0 for none. */
static int64_t keyspace_keys(const char *text)
{
    int64_t keys = 0;
    for (const char *p = strstr(text, "\ndb"); p; p = strstr(p + 1, "\ndb")) {
        const char *k = strstr(p, ":keys=");
        const char *nl = strchr(p + 1, '\n');
        long long v = k && (!nl || k < nl) ? strtoll(k + 6, NULL, 10) : 0;
        keys += v > 0 ? v : 0;
    }
    return keys;
}

/* What one pod answered: INFO replication, its keys (INFO keyspace, -1 unknown), its
 * cluster object, the certificate it showed. */
typedef struct {
    int ok;
    char info[8192];
    int64_t keys;
    char cert[65];
    json_object *cluster;
} observed_t;

/* Ask the pod pod at ip what observed_t holds (x->ok 0 when it cannot be asked). */
static void observe_node(const redisexec_client_t *cl, const char *pod, const char *ip, int port, int64_t timeout_ns,
                         int cluster, observed_t *x)
{
    const char *av[2] = {"INFO", "replication"};
    char err[256], addr[96];
    memset(x, 0, sizeof(*x));
    addr_of(ip, port, addr, sizeof(addr));
    redis_sync_t *s = open_node(cl, pod, ip, port, timeout_ns, err, sizeof(err));
    x->keys = -1;
    if (s && !command_on(s, addr, 2, av, "INFO", timeout_ns, x->info, sizeof(x->info), err, sizeof(err))) {
        const char *ks[2] = {"INFO", "keyspace"};
        char kinfo[4096];
        x->ok = 1;
        if (!command_on(s, addr, 2, ks, "INFO", timeout_ns, kinfo, sizeof(kinfo), err, sizeof(err)))
            x->keys = keyspace_keys(kinfo);
        snprintf(x->cert, sizeof(x->cert), "%s", redis_sync_peer_cert(s));
        x->cluster = cluster ? observe_cluster(s, addr, timeout_ns) : NULL;
    }
    redis_sync_close(&s);
}

/* The observation node of pod at ip from what it answered (x). */
static json_object *node_json(const char *pod, const char *ip, const observed_t *x, int *oom)
{
    char role[16] = "", host[256] = "", ld[32];
    int mport = 0, link = 0;
    int64_t offset = -1, link_down_ms = -1;
    if (x->ok)
        redisexec_parse_info(x->info, role, sizeof(role), host, sizeof(host), &mport, &link, &offset);
    json_object *node = jsonx_new_obj(oom);
    jsonx_put(node, "pod", jsonx_new_str(pod, oom), oom);
    jsonx_put(node, "ip", jsonx_new_str(ip ? ip : "", oom), oom);
    jsonx_put(node, "reachable", json_object_new_boolean(x->ok), oom);
    jsonx_put(node, "role", jsonx_new_str(role, oom), oom);
    jsonx_put(node, "masterHost", jsonx_new_str(host, oom), oom);
    jsonx_put(node, "masterPort", jsonx_new_int(mport, oom), oom);
    jsonx_put(node, "linkUp", json_object_new_boolean(link), oom);
    jsonx_put(node, "offset", jsonx_new_int(offset, oom), oom);
    jsonx_put(node, "lastOkAgoMs", jsonx_new_int(x->ok ? 0 : -1, oom), oom);
    jsonx_put(node, "downSinceMs", jsonx_new_int(0, oom), oom);
    if (x->ok && !strcmp(role, "slave") && !link &&
        info_field(x->info, "master_link_down_since_seconds", ld, sizeof(ld)) && to_int(ld, -1) >= 0)
        link_down_ms = to_int(ld, -1) * 1000;
    jsonx_put(node, "linkDownSinceMs", jsonx_new_int(link_down_ms, oom), oom);
    jsonx_put(node, "probedAgoMs", jsonx_new_int(ip && *ip ? 0 : -1, oom), oom); /* probed just now */
    char io[32];
    int64_t io_ms = -1;
    if (x->ok && !strcmp(role, "slave") && link && info_field(x->info, "master_last_io_seconds_ago", io, sizeof(io)) &&
        to_int(io, -1) >= 0)
        io_ms = (to_int(io, -1) + 1) * 1000;
    jsonx_put(node, "masterIoAgoMs", jsonx_new_int(io_ms, oom), oom);
    jsonx_put(node, "keys", jsonx_new_int(x->ok ? x->keys : -1, oom), oom);
    if (x->cert[0])
        jsonx_put(node, "tlsCert", jsonx_new_str(x->cert, oom), oom);
    return node;
}

json_object *redisexec_observe_with(const json_object *pods, const redisexec_client_t *cl, int port,
                                    int64_t timeout_ns, const char *observed_at, int cluster)
{
    int oom = 0;
    cl = cl ? cl : &no_client;
    json_object *res = jsonx_new_obj(&oom), *arr = jsonx_new_arr(&oom);
    jsonx_put(res, "observedAt", jsonx_new_str(observed_at, &oom), &oom);
    size_t n = pods && json_object_is_type(pods, json_type_array) ? json_object_array_length(pods) : 0;
    observed_t *x = malloc(sizeof(*x));
    if (!x)
        oom = 1;
    for (size_t i = 0; i < n && !oom; i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const char *pod = JSONX_STR_AT(p, "metadata", "name"), *ip = JSONX_STR_AT(p, "status", "podIP");
        if (!pod)
            continue;
        memset(x, 0, sizeof(*x));
        x->keys = -1;
        if (ip && *ip)
            observe_node(cl, pod, ip, port, timeout_ns, cluster, x);
        json_object *node = node_json(pod, ip, x, &oom);
        if (x->cluster)
            jsonx_put(node, "cluster", x->cluster, &oom);
        jsonx_push(arr, node, &oom);
    }
    free(x);
    jsonx_put(res, "nodes", arr, &oom);
    return jsonx_done(res, oom);
}

json_object *redisexec_observe(const json_object *pods, const char *password, int port, int64_t timeout_ns,
                               const char *observed_at, int cluster)
{
    redisexec_client_t cl = {.password = password};
    return redisexec_observe_with(pods, &cl, port, timeout_ns, observed_at, cluster);
}

/* What the server at host:port says it is, asked within timeout_ns with INFO replication
 * over cl's transport (AUTH with its password, else the old one): GUARD_SILENT (no answer
 * at all), GUARD_REPLICA (role:slave), GUARD_ALIVE (it answers, but what it is cannot be
 * told: the password refused, or over TLS a certificate not for its address, which is all
 * that is known of it here), GUARD_PRIMARY (role master, or any other answer: -LOADING, a
 * reply without a role). */
enum { GUARD_SILENT = 0, GUARD_REPLICA, GUARD_ALIVE, GUARD_PRIMARY };
static int guard_role(const redisexec_client_t *cl, const char *host, int port, int64_t timeout_ns)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192], err[256], role[16] = "", mhost[256];
    int mport = 0, link = 0;
    int64_t off = -1;
    if (!redisexec_run(cl, NULL, host, port, 2, av, timeout_ns, info, sizeof(info), err, sizeof(err))) {
        redisexec_parse_info(info, role, sizeof(role), mhost, sizeof(mhost), &mport, &link, &off);
        return strcmp(role, "slave") ? GUARD_PRIMARY : GUARD_REPLICA;
    }
    /* Any answer at all says it is alive: no AUTH needed (NOAUTH is an answer), and a TLS
     * handshake refused for the name counts too. */
    redis_conn_opts_t o = {.host = host, .port = port, .tls = cl->tls};
    return redis_sync_answers(&o, timeout_ns) ? GUARD_ALIVE : GUARD_SILENT;
}

int redisexec_promote_guard_on(const redisexec_client_t *cl, const char *pod, const char *ip, int port,
                               int64_t guard_ns, char *err, size_t errlen)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192], role[16], host[256];
    int mport = 0, link = 0;
    int64_t offset = -1;
    cl = cl ? cl : &no_client;
    if (redisexec_run(cl, pod, ip, port, 2, av, REDISEXEC_TIMEOUT_NS, info, sizeof(info), err, errlen))
        return -1;
    redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &mport, &link, &offset);
    if (!strcmp(role, "master"))
        return 1;
    if (strcmp(role, "slave")) {
        snprintf(err, errlen, "%s:%d: INFO replication names no role", ip, port);
        return -1;
    }
    /* The server it follows answers as a primary (or alive, but what it is cannot be
     * told): the old primary is back, the decision is out of date. One that answers as a
     * replica is no primary to come back to: two servers left replicas of each other must
     * not block every promotion for ever. */
    int said = *host && mport > 0 ? guard_role(cl, host, mport, guard_ns) : GUARD_SILENT;
    if (said >= GUARD_ALIVE) {
        snprintf(err, errlen, "%s:%d: its primary %s:%d answers again%s: not promoted", ip, port, host, mport,
                 said == GUARD_ALIVE ? " (what it is cannot be told)" : " as a primary");
        return -1;
    }
    return 0;
}

int redisexec_promote_guard(const char *ip, int port, const char *password, const char *old_password,
                            int64_t guard_ns, char *err, size_t errlen)
{
    redisexec_client_t cl = {.password = password, .old_password = old_password};
    return redisexec_promote_guard_on(&cl, NULL, ip, port, guard_ns, err, errlen);
}

/* The replica line of target_ip:target_port in a master's INFO replication
 * ("slaveN:ip=...,port=...,state=...,offset=...,lag=..."): 1 with its state and offset,
 * else 0. */
static int replica_line(const char *text, const char *target_ip, int target_port, char *state, size_t statelen,
                        int64_t *offset)
{
    char want[160];
    snprintf(want, sizeof(want), "ip=%s,port=%d,", target_ip, target_port);
    for (const char *p = text; p && *p;) {
        size_t n = strcspn(p, "\r\n");
        if (!strncmp(p, "slave", 5) && n < 512) {
            char line[512];
            memcpy(line, p, n);
            line[n] = '\0';
            const char *v = strchr(line, ':');
            if (v && !strncmp(v + 1, want, strlen(want))) {
                const char *s = strstr(v, ",state="), *o = strstr(v, ",offset=");
                state[0] = '\0';
                if (s)
                    snprintf(state, statelen, "%.*s", (int)strcspn(s + 7, ","), s + 7);
                *offset = -1;
                if (o) {
                    char num[32];
                    snprintf(num, sizeof(num), "%.*s", (int)strcspn(o + 8, ","), o + 8);
                    *offset = to_int(num, -1);
                }
                return 1;
            }
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

int redisexec_switchover_check(const char *info, const char *target_ip, int target_port, int64_t max_lag, char *err,
                               size_t errlen)
{
    char role[16], host[256], state[32], fstate[64] = "";
    int mport = 0, link = 0;
    int64_t offset = -1, roff = -1;
    redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &mport, &link, &offset);
    if (!strcmp(role, "slave") && !strcmp(host, target_ip) && mport == target_port)
        return 1; /* handed over already */
    if (strcmp(role, "master")) {
        snprintf(err, errlen, "not a primary (role %s, following %s:%d): no FAILOVER", *role ? role : "unknown",
                 *host ? host : "(none)", mport);
        return -1;
    }
    if (info_field(info, "master_failover_state", fstate, sizeof(fstate)) && strcmp(fstate, "no-failover"))
        return 1; /* an earlier FAILOVER is under way */
    if (!replica_line(info, target_ip, target_port, state, sizeof(state), &roff) || strcmp(state, "online")) {
        snprintf(err, errlen, "%s:%d is not a linked replica of it: no FAILOVER", target_ip, target_port);
        return -1;
    }
    if (roff < 0 || offset - roff > max_lag) {
        snprintf(err, errlen, "%s:%d is %lld bytes behind (at most %lld): no FAILOVER yet", target_ip, target_port,
                 (long long)(offset - roff), (long long)max_lag);
        return -1;
    }
    return 0;
}

/* One candidate of redisexec_force_check: its role, history and offset. */
typedef struct {
    char role[16], replid[64];
    int64_t offset;
} force_cand_t;

static void force_cand(const char *info, force_cand_t *c)
{
    char host[256];
    int port = 0, link = 0;
    redisexec_parse_info(info, c->role, sizeof(c->role), host, sizeof(host), &port, &link, &c->offset);
    if (!info_field(info, "master_replid", c->replid, sizeof(c->replid)))
        c->replid[0] = '\0';
}

/* 1 when the myself line of CLUSTER NODES text nodes is a replica of gone. */
static int still_follows(const char *nodes, const char *gone)
{
    cn_view_t *v = NULL;
    char e[128];
    if (!nodes || !gone || cn_parse(nodes, strlen(nodes), &v, e, sizeof(e)))
        return 0;
    const cn_node_t *me = cn_myself(v);
    int yes = me && (me->flags & CN_REPLICA) && !strcmp(me->master, gone);
    cn_view_destroy(&v);
    return yes;
}

int redisexec_force_check(const char *nodes, const char *gone, const char *const *info, const char *const *pod,
                          size_t n, char *err, size_t errlen)
{
    force_cand_t to, c;
    if (!n || !still_follows(nodes, gone)) {
        snprintf(err, errlen, "%s no longer follows the gone master %.12s (its own CLUSTER NODES): no FAILOVER FORCE",
                 n ? pod[0] : "the replica", gone ? gone : "");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!info[i]) {
            snprintf(err, errlen, "%s does not answer: its offset is unknown, no FAILOVER FORCE", pod[i]);
            return -1;
        }
        force_cand(info[i], i ? &c : &to);
        const force_cand_t *x = i ? &c : &to;
        if (strcmp(x->role, "slave") || !*x->replid || x->offset < 0) {
            snprintf(err, errlen, "%s is no replica with an offset (role %s): no FAILOVER FORCE", pod[i],
                     *x->role ? x->role : "unknown");
            return -1;
        }
        if (i && strcmp(c.replid, to.replid)) {
            snprintf(err, errlen, "%s (history %.12s) and %s (history %.12s) hold different replication histories: "
                     "no FAILOVER FORCE until they agree", pod[0], to.replid, pod[i], c.replid);
            return -1;
        }
        if (i && c.offset > to.offset) {
            snprintf(err, errlen, "%s is at offset %lld, %s at %lld: no FAILOVER FORCE to the one behind", pod[0],
                     (long long)to.offset, pod[i], (long long)c.offset);
            return -1;
        }
    }
    return 0;
}

int redisexec_switchover_on(const redisexec_client_t *cl, const char *pod, const char *ip, int port, int argc,
                            const char *const *argv, int64_t max_lag, char *err, size_t errlen)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192], addr[96];
    if (argc < 4 || strcmp(argv[0], "FAILOVER") || strcmp(argv[1], "TO")) {
        snprintf(err, errlen, "not a FAILOVER TO command");
        return -1;
    }
    cl = cl ? cl : &no_client;
    addr_of(ip, port, addr, sizeof(addr));
    redis_sync_t *s = open_node(cl, pod, ip, port, REDISEXEC_TIMEOUT_NS, err, errlen);
    int rc = -1;
    if (!s || command_on(s, addr, 2, av, "INFO", REDISEXEC_TIMEOUT_NS, info, sizeof(info), err, errlen))
        goto out;
    rc = redisexec_switchover_check(info, argv[2], (int)to_int(argv[3], 0), max_lag, err, errlen);
    if (rc)
        goto out;
    /* Another attempt's FAILOVER got there first: it is the same handover. */
    if (command_on(s, addr, argc, argv, argv[0], REDISEXEC_TIMEOUT_NS, NULL, 0, err, errlen))
        rc = strstr(err, "already in progress") ? 1 : -1;
out:
    redis_sync_close(&s);
    if (rc < 0)
        scrub_all(cl, err, errlen);
    return rc;
}

int redisexec_switchover(const char *ip, int port, const char *password, const char *old_password, int argc,
                         const char *const *argv, int64_t max_lag, char *err, size_t errlen)
{
    redisexec_client_t cl = {.password = password, .old_password = old_password};
    return redisexec_switchover_on(&cl, NULL, ip, port, argc, argv, max_lag, err, errlen);
}

int redisexec_done_already(int argc, const char *const *argv, const char *err)
{
    if (!argv || !err || argc < 1)
        return 0;
    if (argc >= 3 && !strcmp(argv[0], "ACL") && argv[argc - 1][0] == '<')
        return strstr(err, "does not exist") != NULL;
    if (argc == 3 && !strcmp(argv[0], "CLUSTER") && !strcmp(argv[1], "FORGET"))
        return strstr(err, "Unknown node") != NULL;
    return 0;
}
