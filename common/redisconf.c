/* redisconf: the owned and runtime-settable redis.conf directives. See redisconf.h. */
#include "redisconf.h"

#include <string.h>
#include <strings.h>

/* What spec.config.extra may not set, and why (redisconf.h, OWNED). */
static const struct {
    const char *name;
    const char *why;
} owned[] = {
    {"bind", "the operator lets Redis listen on every interface of the pod"},
    {"port", "the operator listens on port 6379 (probes, Services and replication use it)"},
    {"tls-port", "set by spec.tls (TLS on port 6379)"},
    {"unixsocket", "the operator serves Redis on TCP port 6379 only"},
    {"unixsocketperm", "the operator serves Redis on TCP port 6379 only"},
    {"daemonize", "Redis must stay in the foreground as the container's process"},
    {"supervised", "Redis must stay in the foreground as the container's process"},
    {"pidfile", "the root filesystem is read-only (Redis writes only to /data)"},
    {"logfile", "Redis logs to the container's output (kubectl logs)"},
    {"dir", "the operator keeps Redis' files in /data, the PersistentVolumeClaim"},
    {"include", "the operator renders the whole redis.conf"},
    {"replicaof", "the operator decides the replication topology (spec.mode)"},
    {"slaveof", "the operator decides the replication topology (spec.mode)"},
    {"masterauth", "set by spec.auth"},
    {"masteruser", "set by spec.auth"},
    {"requirepass", "set by spec.auth"},
    {"user", "set by spec.auth and spec.acl (the operator renders the ACL file)"},
    {"aclfile", "set by spec.auth and spec.acl (the operator renders the ACL file)"},
    {"rename-command", "the operator and the probes need Redis' commands under their own names"},
    {"protected-mode", "the operator runs Redis without protected mode (the pod network is the boundary)"},
    {"cluster-enabled", "Redis Cluster mode is not supported (spec.mode)"},
    {"cluster-config-file", "Redis Cluster mode is not supported (spec.mode)"},
    {"replica-announce-ip", "the operator decides the replication topology (spec.mode)"},
    {"slave-announce-ip", "the operator decides the replication topology (spec.mode)"},
    {"replica-announce-port", "the operator decides the replication topology (spec.mode)"},
    {"slave-announce-port", "the operator decides the replication topology (spec.mode)"},
    {"min-replicas-to-write", "set by spec.failover.minReplicasToWrite"},
    {"min-slaves-to-write", "set by spec.failover.minReplicasToWrite"},
    {"min-replicas-max-lag", "set by spec.failover.minReplicasMaxLag"},
    {"min-slaves-max-lag", "set by spec.failover.minReplicasMaxLag"},
    {"maxmemory", "set by spec.config.maxmemory"},
    {"maxmemory-policy", "set by spec.config.maxmemoryPolicy"},
    {"tls-cert-file", "set by spec.tls (its Secret is mounted)"},
    {"tls-key-file", "set by spec.tls (its Secret is mounted)"},
    {"tls-key-file-pass", "set by spec.tls (the key is read without a passphrase)"},
    {"tls-client-cert-file", "set by spec.tls (its Secret is mounted)"},
    {"tls-client-key-file", "set by spec.tls (its Secret is mounted)"},
    {"tls-client-key-file-pass", "set by spec.tls (the key is read without a passphrase)"},
    {"tls-ca-cert-file", "set by spec.tls (its Secret is mounted)"},
    {"tls-ca-cert-dir", "set by spec.tls (its Secret's ca.crt)"},
    {"tls-auth-clients", "set by spec.tls.clientAuth"},
    {"tls-replication", "set by spec.tls (replicas follow over TLS)"},
    {"tls-cluster", "set by spec.tls (the cluster bus speaks TLS)"},
};

/* Redis 7.x directives CONFIG SET accepts (not IMMUTABLE_CONFIG, not PROTECTED_CONFIG). */
static const char *const runtime[] = {
    "active-defrag-cycle-max", "active-defrag-cycle-min", "active-defrag-ignore-bytes",
    "active-defrag-max-scan-fields", "active-defrag-threshold-lower", "active-defrag-threshold-upper",
    "active-expire-effort", "activedefrag", "activerehashing", "aof-rewrite-incremental-fsync",
    "aof-use-rdb-preamble", "appendfsync", "appendonly", "auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage",
    "busy-reply-threshold", "client-output-buffer-limit", "client-query-buffer-limit", "dynamic-hz",
    "hash-max-listpack-entries", "hash-max-listpack-value", "hash-max-ziplist-entries",
    "hash-max-ziplist-value", "hll-sparse-max-bytes", "hz", "jemalloc-bg-thread",
    "latency-monitor-threshold", "latency-tracking", "lazyfree-lazy-eviction", "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del", "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "lfu-decay-time",
    "lfu-log-factor", "list-compress-depth", "list-max-listpack-size", "list-max-ziplist-size", "loglevel",
    "lua-time-limit", "maxclients", "maxmemory-clients", "maxmemory-eviction-tenacity", "maxmemory-samples",
    "notify-keyspace-events", "oom-score-adj", "oom-score-adj-values", "proto-max-bulk-len",
    "rdb-save-incremental-fsync", "rdbcompression", "repl-backlog-size", "repl-backlog-ttl",
    "repl-diskless-load", "repl-diskless-sync", "repl-diskless-sync-delay",
    "repl-diskless-sync-max-replicas", "repl-ping-replica-period", "repl-timeout", "replica-lazy-flush",
    "replica-priority", "replica-read-only", "replica-serve-stale-data", "save",
    "set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value", "shutdown-timeout",
    "slowlog-log-slower-than", "slowlog-max-len", "stop-writes-on-bgsave-error", "stream-node-max-bytes",
    "stream-node-max-entries", "tcp-keepalive", "timeout", "tracking-table-max-keys",
    "zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
};

int redisconf_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > REDISCONF_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
            return 0;
    return 1;
}

int redisconf_value_ok(const char *value)
{
    size_t n = strlen(value);
    if (n == 0 || n > REDISCONF_VALUE_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c >= 0x7f)
            return 0;
    }
    return 1;
}

const char *redisconf_owned(const char *name, const char *persistence)
{
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (!strcasecmp(name, owned[i].name))
            return owned[i].why;
    int none = persistence && !strcmp(persistence, "none"), rdb = persistence && !strcmp(persistence, "rdb");
    if (persistence && !strcasecmp(name, "appendonly"))
        return "set by spec.persistence";
    if (none && !strcasecmp(name, "save"))
        return "spec.persistence is none (no snapshots); with rdb or aof, save may be tuned here";
    if ((none || rdb) && !strcasecmp(name, "appendfsync"))
        return "it applies to the append-only file only, which spec.persistence aof writes";
    return NULL;
}

const char *redisconf_owned_name(size_t i)
{
    return i < sizeof(owned) / sizeof(owned[0]) ? owned[i].name : NULL;
}

int redisconf_runtime_settable(const char *name)
{
    for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
        if (!strcasecmp(name, runtime[i]))
            return 1;
    return 0;
}
