/* redisexec: workerd's Redis client side: a command to one Redis server, synchronously,
 * through the one transport (common/redis_sync.h over redis_conn.h: plain text or TLS,
 * AUTH, a deadline on each step; docs/tls-and-acl.md).
 *
 * The executor (executor.h) carries out a plan's PLAN_REDIS actions with redisexec_run:
 * connect to ip:port (TLS when the cluster's client says so, the server's certificate
 * checked for "<pod>.<tls_domain>"), AUTH with the cluster's password when there is one,
 * send the command, and read the reply, each within the timeout. An error reply is a
 * failure. The connection is closed afterwards: a reconcile sends a handful of commands
 * at most, and a fresh connection per command never carries a half-read reply into the
 * next (a guard and its command share one).
 *
 * redisexec_observe is `workerd --once`'s own look at the cluster (under the supervisor
 * the observation comes from observerd with the work item): INFO replication of every
 * pod with an IP, in observerd's observation shape (docs/observer.md), so the plan sees
 * the same input either way.
 *
 * The passwords and secrets are never copied into an error message or a log line (an
 * error reply that quotes one, as ACL SETUSER's does, has it replaced by its token); an
 * argument that ends with REDISEXEC_PASSWORD_TOKEN, REDISEXEC_OLD_PASSWORD_TOKEN or one
 * of the client's secrets' tokens has the token replaced by that secret on the wire only
 * (">${password}" is ACL's "add this password"): plans and their JSON show the tokens.
 * An argument that is exactly REDISEXEC_CURRENT_TOKEN after the name of a CONFIG SET
 * pair is the value the server has for it (CONFIG GET first, on the same connection):
 * setting a TLS file to the path it has makes Redis read the file again, whatever the
 * path is on that machine.
 */
#ifndef RDC_WORKERD_REDISEXEC_H
#define RDC_WORKERD_REDISEXEC_H

#include "redis_tls.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define REDISEXEC_PASSWORD_TOKEN "${password}"
#define REDISEXEC_OLD_PASSWORD_TOKEN "${old-password}"
#define REDISEXEC_CURRENT_TOKEN "${current}"
/* ACL SETUSER's "add this password" and "remove that one" with the tokens (one literal
 * each: clang's -Wstring-concatenation takes ">" TOKEN in an array for a missing comma). */
#define REDISEXEC_ACL_ADD_PASSWORD ">${password}"
#define REDISEXEC_ACL_DROP_OLD_PASSWORD "<${old-password}"
#define REDISEXEC_TIMEOUT_NS (INT64_C(2000000000)) /* connect, and each reply */
#define REDISEXEC_MAX_ARGS 140 /* CONFIG SET with every run-time pair (plan.h); ACL SETUSER with its rules */
#define REDISEXEC_MAX_SECRETS 40

/* A secret a command argument may end with: token replaced by value on the wire only. */
typedef struct {
    const char *token;
    const char *value;
} redisexec_secret_t;

/* How workerd reaches one cluster's Redis servers. Every pointer is borrowed. */
typedef struct {
    const char *password;     /* AUTH (the default user); NULL or "": none */
    const char *old_password; /* AUTH with this when password is refused (a rotation in
                                 progress, the node not yet given the new one) */
    const redis_tls_t *tls;   /* spec.tls's settings; NULL: plain text */
    const char *tls_domain;   /* TLS: a pod's certificate is checked for "<pod>.<tls_domain>"
                                 ("<cluster>.<namespace>.svc", the headless Service); NULL, or a
                                 node without a pod name: for its IP */
    const redisexec_secret_t *secrets; /* more tokens (ACL users' password hashes); n_secrets */
    size_t n_secrets;                  /* at most REDISEXEC_MAX_SECRETS */
} redisexec_client_t;

/* Run argv (argc elements, 1..REDISEXEC_MAX_ARGS) on ip:port (pod names the node for TLS;
 * NULL: verify its IP) as cl says (NULL: plain text, no AUTH). Tokens as above. On
 * success returns 0 and, when reply is not NULL, copies the reply's text (status,
 * string, integer as digits; "" for others) into reply[replylen]. On failure returns -1
 * with one line in err[errlen], the phase first ("connect 10.0.0.5:6379: Connection
 * refused", "AUTH 10.0.0.5:6379: WRONGPASS ...", "TLS handshake 10.0.0.5:6379:
 * certificate verify failed: ...", "REPLICAOF 10.0.0.5:6379: ERR ..."), without a secret. */
int redisexec_run(const redisexec_client_t *cl, const char *pod, const char *ip, int port, int argc,
                  const char *const *argv, int64_t timeout_ns, char *reply, size_t replylen, char *err, size_t errlen);

/* text with every occurrence of cl's tokens (the passwords' and the secrets') replaced
 * by its secret: a new string the caller wipes and frees, or NULL when out of memory.
 * For a file the executor writes into a Secret (the ACL file's password hashes). */
char *redisexec_expand_text(const redisexec_client_t *cl, const char *text);

/* redisexec_run in plain text with password and old_password (NULL or "": none). */
int redisexec_command(const char *ip, int port, const char *password, const char *old_password, int argc,
                      const char *const *argv, int64_t timeout_ns, char *reply, size_t replylen, char *err,
                      size_t errlen);

/* 1 when err, Redis's error answer to argv (argc elements), says that what argv asks for
 * is in effect already, so the command counts as done; 0 otherwise. Pure. Two answers:
 *   - ACL SETUSER ... <password: "does not exist", the password was removed by an earlier
 *     attempt of the same rotation;
 *   - CLUSTER FORGET <id>: "Unknown node", the node forgot it already (a FORGET planned
 *     from an observation older than the last FORGET pass, or Redis's own forgetting). */
int redisexec_done_already(int argc, const char *const *argv, const char *err);

/* The guard of a promotion (REPLICAOF NO ONE, docs/failover.md): INFO replication of
 * ip:port, then, for a replica, INFO replication of the server it follows (over the
 * client's transport, AUTH with its password, else the old one), bounded by guard_ns.
 * Returns 1 when the node is a master already (nothing to do: an earlier attempt did it),
 * 0 when it may be promoted (a replica whose primary gives no answer at all, a SIGSTOPped
 * one accepts the connection and never answers; or answers as a replica itself: two
 * servers left replicas of each other must not block every promotion for ever), -1 with
 * one line in err when it may not (its primary answers again as a primary, or answers
 * but what it is cannot be told: the password refused, or over TLS a certificate not for
 * its address, which is all the guard knows of it: the decision is out of date) or the
 * node cannot be asked. */
#define REDISEXEC_PROMOTE_GUARD_NS (INT64_C(300000000))
int redisexec_promote_guard_on(const redisexec_client_t *cl, const char *pod, const char *ip, int port,
                               int64_t guard_ns, char *err, size_t errlen);

/* redisexec_promote_guard_on in plain text with password and old_password. */
int redisexec_promote_guard(const char *ip, int port, const char *password, const char *old_password,
                            int64_t guard_ns, char *err, size_t errlen);

/* The guard of a switchover (FAILOVER TO, docs/failover.md), on the INFO replication
 * text of the old primary: 1 when it is done or under way (a replica of
 * target_ip:target_port already, or master_failover_state not no-failover), 0 when the
 * FAILOVER may be sent (a master whose replica line for the target says state=online and
 * an offset at most max_lag bytes behind its own), -1 with one line in err when not
 * (not a master, the target not linked, or behind). Pure. */
int redisexec_switchover_check(const char *info, const char *target_ip, int target_port, int64_t max_lag, char *err,
                               size_t errlen);

/* The guard of CLUSTER FAILOVER FORCE (docs/cluster-mode.md, step 2b), on what the
 * executor reads right before it: nodes, the CLUSTER NODES text of the replica to promote
 * (NULL: not read), gone, the id of the master the plan saw gone; info[0] that replica's
 * INFO replication, info[1..n-1] those of the other replicas of the same master (NULL:
 * no answer), pod[i] their names. 0 when the replica still follows gone (its own line
 * says so: a plan from a look older than a failover since would force a replica over a
 * live master) and holds at least what every other candidate holds: each answers as a
 * replica, of the same replication history (master_replid) as info[0], at an offset
 * (slave_repl_offset) no higher; -1 with one line in err otherwise (the next plan, from a
 * look probed after this one's record, chooses again; replicas of two histories, some
 * resynchronised from the new node at the old address, are waited for until they agree:
 * offsets of two histories say nothing of which holds more). Pure. */
int redisexec_force_check(const char *nodes, const char *gone, const char *const *info, const char *const *pod,
                          size_t n, char *err, size_t errlen);

/* Carry out argv, a FAILOVER TO <ip> <port> ... on ip:port, behind
 * redisexec_switchover_check (INFO replication first, on the same connection): returns 0
 * when sent, 1 when it is done or under way already (the check's 1, or Redis's "FAILOVER
 * already in progress"), -1 with one line in err otherwise. Client as redisexec_run. */
int redisexec_switchover_on(const redisexec_client_t *cl, const char *pod, const char *ip, int port, int argc,
                            const char *const *argv, int64_t max_lag, char *err, size_t errlen);

/* redisexec_switchover_on in plain text with password and old_password. */
int redisexec_switchover(const char *ip, int port, const char *password, const char *old_password, int argc,
                         const char *const *argv, int64_t max_lag, char *err, size_t errlen);

/* One observation of pods (an array of Pod objects; those without status.podIP are
 * listed unreachable with ip ""), probing each as cl says (NULL: plain text, no AUTH)
 * with INFO replication and INFO keyspace within timeout_ns: {"observedAt": observed_at,
 * "nodes": [{"pod","ip","reachable","role","masterHost","masterPort","linkUp","offset",
 * "lastOkAgoMs","downSinceMs","linkDownSinceMs","probedAgoMs","masterIoAgoMs","keys"
 * [,"tlsCert"]}, ...]} (probedAgoMs 0: probed now; -1 for a pod without an IP), tlsCert
 * the SHA-256 of the certificate the node presented (over TLS). With cluster (a
 * Cluster-mode RedisCluster), each reachable node also gets observerd's "cluster" object
 * (docs/observer.md: CLUSTER NODES normalized with cn_format, CLUSTER INFO's state and
 * slot counts). A new object the caller puts, or NULL when out of memory. */
json_object *redisexec_observe_with(const json_object *pods, const redisexec_client_t *cl, int port,
                                    int64_t timeout_ns, const char *observed_at, int cluster);

/* redisexec_observe_with in plain text with password. */
json_object *redisexec_observe(const json_object *pods, const char *password, int port, int64_t timeout_ns,
                               const char *observed_at, int cluster);

/* Parse the replication fields of INFO text into the observation node fields. Pure; used
 * by redisexec_observe and the unit tests. role gets "master", "slave" or "". */
void redisexec_parse_info(const char *text, char *role, size_t rolelen, char *master_host, size_t hostlen,
                          int *master_port, int *link_up, int64_t *offset);

#endif
