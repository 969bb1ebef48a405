/* redisexec: one Redis command, synchronously, with timeouts. See redisexec.h. */
#include "redisexec.h"

#include "clusternodes.h"

#include "jsonx.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define MAX_ARGS 130 /* CONFIG SET with 64 name/value pairs (plan.h, RUNTIME CONFIG) */

static struct timeval tv_of(int64_t ns)
{
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000), .tv_usec = (suseconds_t)((ns % 1000000000) / 1000)};
    return tv;
}

/* AUTH with password on c. Returns 0, 1 when refused (err set), -1 on a connection
 * failure (err set). */
static int auth(redisContext *c, const char *ip, int port, const char *password, char *err, size_t errlen)
{
    const char *av[2] = {"AUTH", password};
    redisReply *r = redisCommandArgv(c, 2, av, NULL);
    int rc = 0;
    if (!r) {
        snprintf(err, errlen, "AUTH %s:%d: %s", ip, port, c->errstr);
        rc = -1;
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* The reply (WRONGPASS, ...) never quotes the password. */
        snprintf(err, errlen, "AUTH %s:%d: %s", ip, port, r->str);
        rc = 1;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Connect (and AUTH, with old_password when password is refused). Returns the context,
 * or NULL with err. */
static redisContext *connect_auth(const char *ip, int port, const char *password, const char *old_password,
                                  int64_t timeout_ns, char *err, size_t errlen)
{
    redisContext *c = redisConnectWithTimeout(ip, port, tv_of(timeout_ns));
    if (!c) {
        snprintf(err, errlen, "connect %s:%d: out of memory", ip, port);
        return NULL;
    }
    if (c->err) {
        snprintf(err, errlen, "connect %s:%d: %s", ip, port, c->errstr);
        redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv_of(timeout_ns)) != REDIS_OK) {
        snprintf(err, errlen, "%s:%d: cannot set the timeout", ip, port);
        redisFree(c);
        return NULL;
    }
    if (password && *password) {
        int a = auth(c, ip, port, password, err, errlen);
        if (a == 1 && old_password && *old_password)
            a = auth(c, ip, port, old_password, err, errlen);
        if (a) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

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

/* The tokens a command's arguments may end with, and what replaces them. */
static const char *const tokens[2] = {REDISEXEC_PASSWORD_TOKEN, REDISEXEC_OLD_PASSWORD_TOKEN};

/* av[i] = argv[i] with a trailing token replaced by its secret (a copy in made[i], which
 * the caller wipes and frees), else argv[i] itself. Returns 0, or -1 when out of memory. */
static int expand_tokens(int argc, const char *const *argv, const char *const secrets[2], const char **av,
                         char **made)
{
    for (int i = 0; i < argc; i++) {
        av[i] = argv[i];
        size_t n = strlen(argv[i]);
        for (int t = 0; t < 2; t++) {
            size_t tl = strlen(tokens[t]);
            if (n < tl || strcmp(argv[i] + n - tl, tokens[t]))
                continue;
            size_t len = n - tl + strlen(secrets[t]) + 1;
            if (!(made[i] = malloc(len)))
                return -1;
            snprintf(made[i], len, "%.*s%s", (int)(n - tl), argv[i], secrets[t]);
            av[i] = made[i];
            break;
        }
    }
    return 0;
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

int redisexec_command(const char *ip, int port, const char *password, const char *old_password, int argc,
                      const char *const *argv, int64_t timeout_ns, char *reply, size_t replylen, char *err,
                      size_t errlen)
{
    if (reply && replylen)
        reply[0] = '\0';
    if (argc < 1 || argc > MAX_ARGS) {
        snprintf(err, errlen, "a command of %d arguments", argc);
        return -1;
    }
    const char *av[MAX_ARGS];
    char *made[MAX_ARGS] = {0};
    int rc = -1;
    redisContext *c = NULL;
    redisReply *r = NULL;
    const char *secrets[2] = {password ? password : "", old_password ? old_password : ""};
    if (expand_tokens(argc, argv, secrets, av, made)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    c = connect_auth(ip, port, password, old_password, timeout_ns, err, errlen);
    if (!c)
        goto out;
    r = redisCommandArgv(c, argc, av, NULL);
    if (!r) {
        snprintf(err, errlen, "%s %s:%d: %s", argv[0], ip, port,
                 c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK) ? "timeout" : c->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s %s:%d: %s", argv[0], ip, port, r->str);
    } else {
        rc = 0;
        reply_text(r, reply, replylen);
    }
out:
    if (rc && errlen) /* ACL SETUSER's errors quote the modifier, password and all */
        for (int t = 0; t < 2; t++)
            scrub(err, errlen, secrets[t], tokens[t]);
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    for (int i = 0; i < argc; i++) {
        if (made[i]) {
            memset(made[i], 0, strlen(made[i]));
            free(made[i]);
        }
    }
    return rc;
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

/* observerd's "cluster" object of the node at ip (CLUSTER NODES normalized, CLUSTER
 * INFO), or NULL when it cannot be read or memory runs out. */
static json_object *observe_cluster(const char *ip, int port, const char *password, int64_t timeout_ns)
{
    enum { CAP = 1 << 18 };
    char *text = malloc(CAP), *norm = malloc(CAP), err[256], info[4096];
    const char *nodes[2] = {"CLUSTER", "NODES"}, *cinfo[2] = {"CLUSTER", "INFO"};
    cn_view_t *v = NULL;
    json_object *o = NULL;
    int oom = 0;
    if (text && norm &&
        !redisexec_command(ip, port, password, NULL, 2, nodes, timeout_ns, text, CAP, err, sizeof(err)) &&
        !redisexec_command(ip, port, password, NULL, 2, cinfo, timeout_ns, info, sizeof(info), err, sizeof(err))) {
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
    if (oom) {
        json_object_put(o);
        return NULL;
    }
    return o;
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

json_object *redisexec_observe(const json_object *pods, const char *password, int port, int64_t timeout_ns,
                               const char *observed_at, int cluster)
{
    int oom = 0;
    json_object *res = jsonx_new_obj(&oom), *arr = jsonx_new_arr(&oom);
    jsonx_put(res, "observedAt", jsonx_new_str(observed_at, &oom), &oom);
    size_t n = pods && json_object_is_type(pods, json_type_array) ? json_object_array_length(pods) : 0;
    for (size_t i = 0; i < n && !oom; i++) {
        const json_object *p = json_object_array_get_idx(pods, i);
        const char *pod = JSONX_STR_AT(p, "metadata", "name"), *ip = JSONX_STR_AT(p, "status", "podIP");
        if (!pod)
            continue;
        char info[8192], err[256], role[16] = "", host[256] = "";
        int mport = 0, link = 0, ok = 0;
        int64_t offset = -1;
        const char *av[2] = {"INFO", "replication"};
        if (ip && *ip &&
            !redisexec_command(ip, port, password, NULL, 2, av, timeout_ns, info, sizeof(info), err, sizeof(err))) {
            redisexec_parse_info(info, role, sizeof(role), host, sizeof(host), &mport, &link, &offset);
            ok = 1;
        }
        json_object *node = jsonx_new_obj(&oom);
        jsonx_put(node, "pod", jsonx_new_str(pod, &oom), &oom);
        jsonx_put(node, "ip", jsonx_new_str(ip ? ip : "", &oom), &oom);
        jsonx_put(node, "reachable", json_object_new_boolean(ok), &oom);
        jsonx_put(node, "role", jsonx_new_str(role, &oom), &oom);
        jsonx_put(node, "masterHost", jsonx_new_str(host, &oom), &oom);
        jsonx_put(node, "masterPort", jsonx_new_int(mport, &oom), &oom);
        jsonx_put(node, "linkUp", json_object_new_boolean(link), &oom);
        jsonx_put(node, "offset", jsonx_new_int(offset, &oom), &oom);
        jsonx_put(node, "lastOkAgoMs", jsonx_new_int(ok ? 0 : -1, &oom), &oom);
        jsonx_put(node, "downSinceMs", jsonx_new_int(0, &oom), &oom);
        char ld[32];
        int64_t link_down_ms = -1;
        if (ok && !strcmp(role, "slave") && !link &&
            info_field(info, "master_link_down_since_seconds", ld, sizeof(ld)) && to_int(ld, -1) >= 0)
            link_down_ms = to_int(ld, -1) * 1000;
        jsonx_put(node, "linkDownSinceMs", jsonx_new_int(link_down_ms, &oom), &oom);
        jsonx_put(node, "probedAgoMs", jsonx_new_int(ip && *ip ? 0 : -1, &oom), &oom); /* probed just now */
        char io[32];
        int64_t io_ms = -1;
        if (ok && !strcmp(role, "slave") && link && info_field(info, "master_last_io_seconds_ago", io, sizeof(io)) &&
            to_int(io, -1) >= 0)
            io_ms = (to_int(io, -1) + 1) * 1000;
        jsonx_put(node, "masterIoAgoMs", jsonx_new_int(io_ms, &oom), &oom);
        const char *ks[2] = {"INFO", "keyspace"};
        char kinfo[4096];
        int64_t keys = -1;
        if (ok && !redisexec_command(ip, port, password, NULL, 2, ks, timeout_ns, kinfo, sizeof(kinfo), err, sizeof(err)))
            keys = keyspace_keys(kinfo);
        jsonx_put(node, "keys", jsonx_new_int(keys, &oom), &oom);
        json_object *cl = ok && cluster ? observe_cluster(ip, port, password, timeout_ns) : NULL;
        if (cl)
            jsonx_put(node, "cluster", cl, &oom);
        jsonx_push(arr, node, &oom);
    }
    jsonx_put(res, "nodes", arr, &oom);
    if (oom) {
        json_object_put(res);
        return NULL;
    }
    return res;
}

/* What the server at ip:port says it is, asked within timeout_ns with INFO replication
 * (after AUTH with password): GUARD_SILENT (no answer at all), GUARD_REPLICA (role:slave),
 * GUARD_REFUSED (it refused the password: alive, role unknown), or GUARD_PRIMARY (role
 * master, or any other answer: -LOADING, a reply without a role). */
enum { GUARD_SILENT = 0, GUARD_REPLICA, GUARD_REFUSED, GUARD_PRIMARY };
static int guard_role(const char *ip, int port, const char *password, int64_t timeout_ns)
{
    redisContext *c = redisConnectWithTimeout(ip, port, tv_of(timeout_ns));
    int said = GUARD_SILENT;
    redisReply *r = NULL;
    if (!c || c->err || redisSetTimeout(c, tv_of(timeout_ns)) != REDIS_OK)
        goto out;
    if (password && *password) {
        r = redisCommand(c, "AUTH %s", password);
        if (r && r->type == REDIS_REPLY_ERROR)
            said = GUARD_REFUSED;
        if (!r || said)
            goto out;
        freeReplyObject(r);
    }
    r = redisCommand(c, "INFO replication");
    if (r) {
        char role[16] = "", host[256];
        int mport = 0, link = 0;
        int64_t off = -1;
        if (r->type == REDIS_REPLY_STRING)
            redisexec_parse_info(r->str, role, sizeof(role), host, sizeof(host), &mport, &link, &off);
        said = strcmp(role, "slave") ? GUARD_PRIMARY : GUARD_REPLICA;
    }
out:
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return said;
}

int redisexec_promote_guard(const char *ip, int port, const char *password, const char *old_password,
                            int64_t guard_ns, char *err, size_t errlen)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192], role[16], host[256];
    int mport = 0, link = 0;
    int64_t offset = -1;
    if (redisexec_command(ip, port, password, old_password, 2, av, REDISEXEC_TIMEOUT_NS, info, sizeof(info), err,
                          errlen))
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
     * replica is no primary to come back to. */
    int said = *host && mport > 0 ? guard_role(host, mport, password, guard_ns) : GUARD_SILENT;
    if (said == GUARD_REFUSED && old_password && *old_password)
        said = guard_role(host, mport, old_password, guard_ns);
    if (said >= GUARD_REFUSED) {
        snprintf(err, errlen, "%s:%d: its primary %s:%d answers again%s: not promoted", ip, port, host, mport,
                 said == GUARD_REFUSED ? " (refusing the password)" : " as a primary");
        return -1;
    }
    return 0;
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

int redisexec_switchover(const char *ip, int port, const char *password, const char *old_password, int argc,
                         const char *const *argv, int64_t max_lag, char *err, size_t errlen)
{
    const char *av[2] = {"INFO", "replication"};
    char info[8192];
    if (argc < 4 || strcmp(argv[0], "FAILOVER") || strcmp(argv[1], "TO")) {
        snprintf(err, errlen, "not a FAILOVER TO command");
        return -1;
    }
    if (redisexec_command(ip, port, password, old_password, 2, av, REDISEXEC_TIMEOUT_NS, info, sizeof(info), err,
                          errlen))
        return -1;
    int check = redisexec_switchover_check(info, argv[2], (int)to_int(argv[3], 0), max_lag, err, errlen);
    if (check)
        return check;
    if (redisexec_command(ip, port, password, old_password, argc, argv, REDISEXEC_TIMEOUT_NS, NULL, 0, err,
                          errlen))
        /* Another attempt's FAILOVER got there first: it is the same handover. */
        return strstr(err, "already in progress") ? 1 : -1;
    return 0;
}
