/* redisexec: workerd's Redis client side: one command to one Redis server, synchronously,
 * with hiredis's blocking API bounded by timeouts.
 *
 * The executor (executor.h) carries out a plan's PLAN_REDIS actions with
 * redisexec_command: connect to ip:port within the timeout, AUTH with the cluster's
 * password when there is one, send the command, and read the reply within the same
 * timeout (SO_RCVTIMEO/SO_SNDTIMEO through redisSetTimeout). An error reply is a failure.
 * The connection is closed afterwards: a reconcile sends a handful of commands at most,
 * and a fresh connection per command never carries a half-read reply into the next.
 *
 * redisexec_observe is `workerd --once`'s own look at the cluster (under the supervisor
 * the observation comes from observerd with the work item): INFO replication of every
 * pod with an IP, in observerd's observation shape (docs/observer.md), so the plan sees
 * the same input either way.
 *
 * The passwords are never copied into an error message or a log line (an error reply
 * that quotes one, as ACL SETUSER's does, has it replaced by its token); an argument
 * that ends with REDISEXEC_PASSWORD_TOKEN or REDISEXEC_OLD_PASSWORD_TOKEN has the token
 * replaced by that password on the wire only (">${password}" is ACL's "add this
 * password"): plans and their JSON show the tokens.
 */
#ifndef RDC_WORKERD_REDISEXEC_H
#define RDC_WORKERD_REDISEXEC_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define REDISEXEC_PASSWORD_TOKEN "${password}"
#define REDISEXEC_OLD_PASSWORD_TOKEN "${old-password}"
/* ACL SETUSER's "add this password" and "remove that one" with the tokens (one literal
 * each: clang's -Wstring-concatenation takes ">" TOKEN in an array for a missing comma). */
#define REDISEXEC_ACL_ADD_PASSWORD ">${password}"
#define REDISEXEC_ACL_DROP_OLD_PASSWORD "<${old-password}"
#define REDISEXEC_TIMEOUT_NS (INT64_C(2000000000)) /* connect, and each reply */

/* Run argv (argc elements, 1..130) on ip:port. password NULL or "" = no AUTH; when AUTH
 * with password is refused and old_password is set (a rotation in progress, the node not
 * yet given the new one), AUTH with old_password. Tokens as above. On success returns
 * 0 and, when reply is not NULL, copies the reply's text (status, string, integer as
 * digits; "" for others) into reply[replylen]. On failure returns -1 with one line in
 * err[errlen] ("connect 10.0.0.5:6379: Connection refused", "AUTH: WRONGPASS ...",
 * "REPLICAOF: ERR ...", "timeout"), without the password. */
int redisexec_command(const char *ip, int port, const char *password, const char *old_password, int argc,
                      const char *const *argv,
                      int64_t timeout_ns, char *reply, size_t replylen, char *err, size_t errlen);

/* The guard of a promotion (REPLICAOF NO ONE, docs/failover.md): INFO replication of
 * ip:port, then, for a replica, INFO replication of the server it follows (AUTH with
 * password, else old_password), bounded by guard_ns. Returns 1 when the node is a master
 * already (nothing to do: an earlier attempt did it), 0 when it may be promoted (a
 * replica whose primary gives no answer at all, a SIGSTOPped one accepts the connection
 * and never answers; or answers as a replica itself: two servers left replicas of each
 * other must not block every promotion for ever), -1 with one line in err when it may
 * not (its primary answers again as a primary, or alive but refusing the password: the
 * decision is out of date) or cannot be asked. */
#define REDISEXEC_PROMOTE_GUARD_NS (INT64_C(300000000))
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

/* Carry out argv, a FAILOVER TO <ip> <port> ... on ip:port, behind
 * redisexec_switchover_check (INFO replication first): returns 0 when sent, 1 when it
 * is done or under way already (the check's 1, or Redis's "FAILOVER already in
 * progress"), -1 with one line in err otherwise. Passwords as redisexec_command. */
int redisexec_switchover(const char *ip, int port, const char *password, const char *old_password, int argc,
                         const char *const *argv, int64_t max_lag, char *err, size_t errlen);

/* One observation of pods (an array of Pod objects; those without status.podIP are
 * listed unreachable with ip ""), probing each with [AUTH] INFO replication within
 * timeout_ns: {"observedAt": observed_at, "nodes": [{"pod","ip","reachable","role",
 * "masterHost","masterPort","linkUp","offset","lastOkAgoMs","downSinceMs","linkDownSinceMs",
 * "probedAgoMs","masterIoAgoMs","keys"}, ...]} (probedAgoMs 0: probed now; -1 for a pod
 * without an IP).
 * With cluster (a Cluster-mode RedisCluster), each reachable node also gets observerd's
 * "cluster" object (docs/observer.md: CLUSTER NODES normalized with cn_format, CLUSTER
 * INFO's state and slot counts). A new object the caller puts, or NULL when out of
 * memory. */
json_object *redisexec_observe(const json_object *pods, const char *password, int port, int64_t timeout_ns,
                               const char *observed_at, int cluster);

/* Parse the replication fields of INFO text into the observation node fields. Pure; used
 * by redisexec_observe and the unit tests. role gets "master", "slave" or "". */
void redisexec_parse_info(const char *text, char *role, size_t rolelen, char *master_host, size_t hostlen,
                          int *master_port, int *link_up, int64_t *offset);

#endif
