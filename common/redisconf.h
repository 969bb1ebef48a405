/* redisconf: what the operator knows of redis.conf directives, for spec.config.extra.
 *
 * Two tables, both pure and both keyed by the directive's name in lower case (Redis reads
 * names case-insensitively, so every lookup folds case first):
 *
 *   OWNED      directives the operator renders or relies on itself; spec.config.extra may
 *              not set them, and the refusal names the directive and what owns it
 *              ("port: the operator listens on 6379"). Always owned: bind, port, tls-port,
 *              unixsocket, unixsocketperm, daemonize, supervised, pidfile, logfile, dir,
 *              include, replicaof, slaveof, masterauth, masteruser, requirepass, user,
 *              aclfile, rename-command, protected-mode, cluster-enabled,
 *              cluster-config-file, replica-announce-ip, slave-announce-ip,
 *              replica-announce-port, slave-announce-port, min-replicas-to-write,
 *              min-slaves-to-write, min-replicas-max-lag, min-slaves-max-lag, maxmemory,
 *              maxmemory-policy, and spec.tls's (tls-cert-file, tls-key-file,
 *              tls-key-file-pass, tls-client-cert-file, tls-client-key-file,
 *              tls-client-key-file-pass, tls-ca-cert-file, tls-ca-cert-dir,
 *              tls-auth-clients, tls-replication, tls-cluster; tls-protocols,
 *              tls-ciphers and the other tuning ones stay open). Owned when
 *              spec.persistence is set: appendonly.
 *   RUNTIME    directives Redis accepts in CONFIG SET (redis 7.x, without
 *              enable-protected-configs), so a change to them needs no restart. A
 *              directive absent from the table is treated as needing one: the pods roll.
 *
 * The syntax of an extra directive and its value (what the CRD schema also states):
 *   name   [a-z][a-z0-9-]{0,63}  (lower case, as redis.conf documents them)
 *   value  1..REDISCONF_VALUE_MAX bytes of printable ASCII and blanks, no '\n', '\r' or
 *          other control byte, so that it can never start a directive of its own.
 */
#ifndef RDC_REDISCONF_H
#define RDC_REDISCONF_H

#include <stddef.h>

#define REDISCONF_NAME_MAX 64
#define REDISCONF_VALUE_MAX 1024
#define REDISCONF_EXTRA_MAX 64 /* directives in spec.config.extra */

/* 1 when name is a directive name as above, else 0. */
int redisconf_name_ok(const char *name);

/* 1 when value is a directive value as above, else 0. */
int redisconf_value_ok(const char *value);

/* When the operator owns name (any case): a static string that says what owns it
 * ("the operator listens on port 6379"); NULL when spec.config.extra may set it.
 * persistence: spec.persistence ("none", "rdb", "aof"), NULL when unset. With it set,
 * appendonly is owned; save too when it is none, appendfsync when it is not aof (what the
 * mode leaves open, extra may tune: workerd/render.h PERSISTENCE). */
const char *redisconf_owned(const char *name, const char *persistence);

/* The i-th always-owned directive of the table (appendonly aside), NULL past the end: the
 * CRD's CEL rule on spec.config.extra lists the same names (test_knobs compares them). */
const char *redisconf_owned_name(size_t i);

/* 1 when Redis can change name (any case) at run time with CONFIG SET, else 0. */
int redisconf_runtime_settable(const char *name);

#endif
