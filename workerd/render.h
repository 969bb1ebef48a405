/* render: the desired children of a RedisCluster, built as Kubernetes JSON.
 *
 * Pure builders with no I/O: from a validated spec (render_input_t) they produce the
 * ConfigMap holding redis.conf, the headless Service and the StatefulSet exactly as the
 * operator applies them (server-side apply, field manager "rediscluster-operator"). Every
 * object carries the operator's labels and a controller owner reference to the
 * RedisCluster. What the builders put in an object is, by definition, the set of fields
 * the operator manages: plan_children.c compares observed objects on those fields only.
 *
 * Also here: the image reference rule (when to append spec.version as a tag), the
 * redis.conf renderer and its SHA-256, and Kubernetes quantity comparison.
 *
 * Objects are built with jsonx.h's helpers (jsonx_put and friends), which record
 * allocation failure in an int flag instead of returning codes at every step: build a
 * whole object, then check the flag once.
 */
#ifndef RDC_RENDER_H
#define RDC_RENDER_H

#include "buf.h"
#include "jsonx.h"
#include "rdc_spec.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define RENDER_GROUP_VERSION RDC_GROUP_VERSION
#define RENDER_KIND "RedisCluster"
#define RENDER_FIELD_MANAGER "rediscluster-operator"
#define RENDER_CONFIG_HASH_ANNOTATION "cache.example.com/config-hash"
#define RENDER_CONFIG_KEY "redis.conf"
#define RENDER_REDIS_PORT 6379
#define RENDER_DEFAULT_STORAGE RDC_SPEC_DEFAULT_STORAGE_SIZE /* "1Gi" */

/* Label keys and the values that do not depend on the RedisCluster. The selector uses
 * RENDER_LABEL_NAME and RENDER_LABEL_INSTANCE only (a StatefulSet selector is immutable,
 * so it must never grow). */
#define RENDER_LABEL_NAME "app.kubernetes.io/name"
#define RENDER_LABEL_INSTANCE "app.kubernetes.io/instance"
#define RENDER_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define RENDER_LABEL_PART_OF "app.kubernetes.io/part-of"
#define RENDER_APP_NAME "redis"
#define RENDER_PART_OF "rediscluster"

/* The uid and gid of the redis user in the official images: the pod runs as them. */
#define RENDER_REDIS_UID 999

/* Container resources, from the design document's StatefulSet builder. */
#define RENDER_CPU_REQUEST "100m"
#define RENDER_MEMORY_REQUEST "256Mi"
#define RENDER_CPU_LIMIT "500m"
#define RENDER_MEMORY_LIMIT "1Gi"

/* What the builders render from: the RedisCluster's name, namespace and uid, and its spec
 * parsed by rdc_spec_parse (the DEFAULTS applied there). Every string is borrowed. */
typedef struct {
    const char *name;       /* metadata.name of the RedisCluster (and of every child) */
    const char *ns;         /* metadata.namespace */
    const char *uid;        /* metadata.uid, for the owner references */
    const rdc_spec_t *spec; /* the typed spec (never NULL) */
    int shard;              /* CLUSTER: the shard a StatefulSet or PDB is rendered for; -1 = none */
    int shard_replicas;     /* the StatefulSet's replicas; 0 = the spec's: CLUSTER that shard's,
                               1 + replicasPerShard (while pods leave the layout keeps more:
                               cluster_topo.h RETIRE); the other modes spec.size (SCALE-IN keeps
                               more while the primary is handed over: plan_scale.h) */
    const char *operator_image; /* RESTORE: the image of the restore init container; NULL:
                                   RENDER_OPERATOR_IMAGE_DEFAULT */
} render_input_t;

/* KNOBS (v1, issue 20), each from in->spec (rdc_spec_t's pod, pdb and storage parts) and
 * rendered only where stated:
 *   resources                  the container's resources as given (integers as strings),
 *                              else the RENDER_*_REQUEST/LIMIT defaults
 *   securityContext            merged key by key over the container's restricted defaults
 *   podSecurityContext         merged key by key over the pod's restricted defaults (so
 *                              setting runAsUser keeps runAsNonRoot and seccompProfile)
 *   affinity                   as given, else preferred pod anti-affinity (weight 100,
 *                              topologyKey kubernetes.io/hostname, the selector labels)
 *   tolerations, nodeSelector, topologySpreadConstraints, priorityClassName,
 *   imagePullSecrets, terminationGracePeriodSeconds
 *                              copied into the pod template when set, absent otherwise
 *   podMetadata                labels and annotations added to the pod template's
 *   serviceMetadata            labels and annotations added to the Service's (the
 *                              operator's own keys cannot be set: rdc_spec.h)
 *   storage.retention          the StatefulSet's persistentVolumeClaimRetentionPolicy
 *                              (whenDeleted, whenScaled; an unset one is Retain); absent
 *                              when unset (the API's default is Retain, Retain)
 *   podDisruptionBudget        render_pdb's maxUnavailable (default 1)
 *   config.extra               "name value" lines after the operator's, by name */

/* CLUSTER (spec.mode Cluster, docs/cluster-mode.md): one ConfigMap and one headless
 * Service <name> for the whole cluster; a StatefulSet <name>-shard<k> of
 * 1 + replicasPerShard pods and a PodDisruptionBudget <name>-shard<k> per shard k
 * (in->shard), their selector and pod labels carrying RENDER_LABEL_SHARD "<k>" besides
 * the instance label (so the Service selects every pod and each StatefulSet its own).
 * The StatefulSets roll OnDelete (the operator hands a master's role over first) and
 * start their pods in parallel (a shard's nodes must all run before they are met); the
 * pods announce their pod IP (cluster-announce-ip $(POD_IP)) and have the preStop hook of
 * SWITCHOVER. redis.conf adds cluster-enabled yes, cluster-config-file
 * nodes.conf (in dir /data, on the volume: a restarted pod keeps its node id), cluster-node-timeout
 * (spec.failover.downAfter) and cluster-allow-replica-migration no (a shard's pods stay in
 * it: the operator keeps the layout). */
#define RENDER_LABEL_SHARD "cache.example.com/shard"
#define RENDER_NODES_CONF "nodes.conf" /* relative to dir /data: on the volume */

/* The name of shard k's StatefulSet and PDB, "<name>-shard<k>", into out (len bytes).
 * Returns 0, or -1 when it does not fit. */
int render_shard_name(const char *name, int k, char *out, size_t len);

/* The name of the i-th pod of the cluster name with spec (i < spec->size): "<name>-<i>",
 * or in Cluster mode "<name>-shard<k>-<j>" with k = i / (1 + replicasPerShard) and j the
 * rest. Returns 0, or -1 when it does not fit. */
int render_pod_name(const rdc_spec_t *spec, const char *name, int i, char *out, size_t len);

/* The PodDisruptionBudget's default spec.maxUnavailable (rdc_spec.h DEFAULTS). */
#define RENDER_PDB_MAX_UNAVAILABLE RDC_SPEC_DEFAULT_MAX_UNAVAILABLE

/* The role label workerd keeps on each pod of a Replication cluster, and what the role
 * Services select. */
#define RENDER_LABEL_ROLE "cache.example.com/role"
/* spec.failover's defaults (Replication): min-replicas-to-write 1 when size >= 3, else 0;
 * min-replicas-max-lag 10 s. */
#define RENDER_MIN_REPLICAS_TO_WRITE RDC_SPEC_DEFAULT_MIN_REPLICAS_TO_WRITE
#define RENDER_MIN_REPLICAS_MAX_LAG RDC_SPEC_DEFAULT_MIN_REPLICAS_MAX_LAG
#define RENDER_ROLE_PRIMARY "primary"
#define RENDER_ROLE_REPLICA "replica"
#define RENDER_AUTH_DEFAULT_KEY RDC_SPEC_DEFAULT_AUTH_KEY /* and the record's data key */
/* The container's environment variable holding the password (from the Secret, never
 * rendered: a secretKeyRef); REDISCLI_AUTH too, so the probes and kubectl exec
 * authenticate. */
#define RENDER_PASSWORD_ENV "REDIS_PASSWORD"
/* Replication: the pod IP (fieldRef status.podIP), Redis's replica-announce-ip. */
#define RENDER_POD_IP_ENV "POD_IP"

/* The container image to run: image, plus ":" version when version is non-empty and image
 * has neither a tag nor a digest (rdc_spec_image_has_tag_or_digest: a tag is a ':' in the
 * last path component, so the port in "host:5000/redis" is not one; a digest is anything
 * after '@'). Appends to out. Returns 0, or -1 when out refused the text (cap or memory). */
int render_image_ref(const char *image, const char *version, buf_t *out);

/* PERSISTENCE (spec.persistence; docs/knobs.md "Persistence"): what Redis writes to /data.
 *
 *   mode           appendonly  appendfsync  save
 *   aof (default)  yes         everysec     900 1 300 10 60 10000
 *   rdb            no          -            900 1 300 10 60 10000
 *   none           no          -            "" (no snapshot)
 *
 * A spec without the field (v1alpha1, a spec the defaulting webhook did not see) is aof,
 * as the v1 schema defaults it. spec.config.extra may tune what the mode leaves open
 * (rdc_spec.h, redisconf_owned): `save` unless the mode is none, `appendfsync` when it is
 * aof; such a directive of extra replaces the mode's line here. Every one of these
 * directives is one Redis changes at run time, so a change of mode rolls no pod: the
 * directives join spec.config.extra's run-time ones (runtimecfg.h) and reach the running
 * servers with CONFIG SET.
 *
 * The directives for spec (NULL: every default) in the form CONFIG SET takes them ("save"
 * with all its pairs in one value, "" for none), in the order redis.conf lists them:
 * appendonly, appendfsync, save. Returns how many were written to out (at most
 * RENDER_PERSISTENCE_MAX); names and values are static strings. */
#define RENDER_PERSISTENCE_MAX 3
#define RENDER_SAVE_POINTS "900 1 300 10 60 10000"
typedef struct {
    const char *name;
    const char *value;
} render_directive_t;
size_t render_persistence(const rdc_spec_t *spec, render_directive_t out[RENDER_PERSISTENCE_MAX]);

/* REPLICATION SYNC (Replication and Cluster modes; docs/replication.md, "Full
 * resynchronisation at once"): `repl-diskless-sync-delay 0`, so that a replica that needs
 * a full sync (a restarted pod of a rolling restart, a repointed second master) gets its
 * RDB transfer at once instead of after Redis's 5 s wait for more replicas to share it.
 * Replicas that arrive while a transfer runs still share the next one, so N replicas cost
 * at most two transfers. Left out when spec.config.extra sets repl-diskless-sync-delay or
 * repl-diskless-sync-max-replicas (the user tunes the batching), and out of the restart
 * hash (Redis changes it at run time): it reaches a running pod at its next start. */
#define RENDER_REPL_SYNC_DELAY "0"

/* Append the redis.conf for in: fixed defaults (port 6379, protected-mode no, dir /data),
 * the PERSISTENCE directives of in->spec (save points one per line, `save ""` for none),
 * then maxmemory and maxmemory-policy when set, the replication guard, REPLICATION SYNC,
 * and spec.config.extra. The text is stable for a given input, so its hash changes only with
 * the config. Returns 0, or -1 when out refused the text. */
int render_redis_conf(const render_input_t *in, buf_t *out);

/* render_redis_conf without what Redis can change at run time: the text whose hash goes on
 * the pod template, so that a change to those alone does not roll the pods: plan applies
 * them to the running pods with CONFIG SET instead (plan.h RUNTIME CONFIG, runtimecfg.h).
 * Left out: spec.config.extra's run-time directives (redisconf_runtime_settable); the
 * PERSISTENCE directives are the default (aof) lines whatever the mode, the text every
 * cluster's hash has always been made of, so a change of persistence rolls nothing and
 * no existing cluster rolls for it. Returns 0 or -1. */
int render_redis_conf_restart(const render_input_t *in, buf_t *out);

/* Lower-case hex SHA-256 of len bytes at data into hex (65 bytes with the terminator).
 * Returns 0, or -1 when OpenSSL fails (hex is then ""). */
int render_sha256_hex(const char *data, size_t len, char hex[65]);

/* The pod selector for /scale: "app.kubernetes.io/name=redis,app.kubernetes.io/instance=<name>".
 * Appends to out. Returns 0, or -1 when out refused the text. */
int render_selector_string(const char *name, buf_t *out);

/* The desired children. Each returns a new object the caller owns (json_object_put), or
 * NULL when out of memory. redis_conf is render_redis_conf's text; config_hash is its
 * render_sha256_hex, which goes on the pod template so that a config change rolls the
 * pods. */
json_object *render_configmap(const render_input_t *in, const char *redis_conf);
json_object *render_service(const render_input_t *in);
json_object *render_statefulset(const render_input_t *in, const char *config_hash);
/* In spec.mode Replication the StatefulSet rolls OnDelete (updateStrategy: the operator
 * deletes the pods itself, replicas first, the primary after a switchover; plan.h
 * SWITCHOVER), and the redis container has a preStop hook (RENDER_PRESTOP_SCRIPT) that
 * holds a pod's shutdown, up to 15 s (150 x 0.1 s; the default grace period is 30 s),
 * while a replica is linked to it: a primary, while the operator hands its role over; and
 * the old primary after its FAILOVER, while a replica still follows it (Redis's FAILOVER
 * leaves the other replicas chained behind it until the operator repoints them; gone
 * early, its successor at the same address would take them back as a fresh master).
 * A pod seen a master during the wait returns only after no replica has been connected
 * for 2 s (20 polls): at its FAILOVER's resynchronisation Redis drops its replicas, which
 * reconnect to it, chained, within a second (their replication cron); a replica that
 * never was a master returns as soon as none is connected. */
#define RENDER_PRESTOP_SCRIPT                                                                             \
    "i=0; m=0; z=0; while [ $i -lt 150 ]; do"                                                           \
    " r=$(redis-cli info replication 2>/dev/null) || exit 0;"                                           \
    " case \"$r\" in *role:master*) m=1;; esac;"                                                         \
    " case \"$r\" in *connected_slaves:0*) z=$((z+1)); if [ $m = 0 ] || [ $z -ge 20 ]; then exit 0; fi;;"  \
    " *) z=0;; esac;"                                                                                    \
    " sleep 0.1; i=$((i+1)); done"
/* The policy/v1 PodDisruptionBudget of the cluster's pods: named like the cluster, the
 * selector labels, spec.maxUnavailable from spec.podDisruptionBudget (default 1). */
json_object *render_pdb(const render_input_t *in);
/* The Service <name>-primary (role RENDER_ROLE_PRIMARY) or <name>-replicas (role
 * RENDER_ROLE_REPLICA): ClusterIP, port 6379, selecting the cluster's pods that carry
 * that role label. Clients without Sentinel support write to <name>-primary. */
json_object *render_role_service(const render_input_t *in, const char *role);
/* DAY-2 (issue 34, docs/knobs.md "Day-2"), from in->spec's service, extras and netpol:
 *   spec.service           the role Services' type; externalTrafficPolicy (Cluster when
 *                          unset) with NodePort and LoadBalancer; loadBalancerSourceRanges
 *                          with LoadBalancer; its labels and annotations, then
 *                          serviceMetadata's, beside the operator's (spec.service's win for a
 *                          key both set). The headless Service takes serviceMetadata only.
 *   imagePullPolicy        the redis container's
 *   serviceAccountName     the pod's
 *   env, volumeMounts      the redis container's, after the operator's
 *   volumes                the pod's, after the operator's
 *   initContainers         the pod's, as given
 *   containers             the pod's, after redis, as given
 *   networkPolicy          render_network_policy */
/* RESTORE (issue 36, docs/backup.md "Restore at creation"): with spec.restore.from the pod
 * template's first init container is RENDER_RESTORE_CONTAINER, in the operator's image
 * (render_input_t.operator_image), running
 *   /usr/local/bin/rdc-backup restore --to RENDER_RESTORE_DATA_DIR/dump.rdb [--aof]
 *     --endpoint E --bucket B --key K --region R --credentials-dir RENDER_RESTORE_CREDENTIALS_DIR
 *     [--s3-ca-file RENDER_RESTORE_CA_DIR/ca.crt] [--expect-sha256 H]
 * with --aof when the pods run with appendonly yes (spec.persistence aof, or
 * spec.config.extra's appendonly): Redis 7 then loads the AOF directory, never dump.rdb.
 * The data volume is mounted at RENDER_RESTORE_DATA_DIR (the redis container's /data),
 * credentialsSecret's access-key-id and secret-access-key (volume
 * RENDER_RESTORE_CREDENTIALS_VOLUME) and caSecret's ca.crt (RENDER_RESTORE_CA_VOLUME)
 * read-only; terminationMessagePolicy FallbackToLogsOnError, so a failure's one line is
 * the container's termination message (plan_diagnosis: RestoreFailed); the redis
 * container's securityContext. The paths are under /var/run so that the test data
 * plane's mount namespaces (tests/cluster/runtime/mountns.go) can place them.
 * In Cluster mode (a record of a sharded backup: spec.restore.nshards) shard k's
 * StatefulSet restores shard k's object (K and H of spec.restore.shard[k]) with
 * `--only-pod <name>-shard<k>-0`: the shard's other pods start empty and replicate from
 * it (two pods loading the RDB would both claim its slots); a shard past the backup's has
 * no restore container and no restore volumes. */
#define RENDER_RESTORE_CONTAINER "restore"
#define RENDER_RESTORE_BIN "/usr/local/bin/rdc-backup"
#define RENDER_RESTORE_DATA_DIR "/var/run/rdc-restore/data"
#define RENDER_RESTORE_CREDENTIALS_DIR "/var/run/rdc-restore/credentials"
#define RENDER_RESTORE_CA_DIR "/var/run/rdc-restore/ca"
#define RENDER_RESTORE_CREDENTIALS_VOLUME "restore-credentials"
#define RENDER_RESTORE_CA_VOLUME "restore-ca"
/* workerd's --operator-image's default (env RDC_OPERATOR_IMAGE): deploy/'s image. */
#define RENDER_OPERATOR_IMAGE_DEFAULT "rediscluster-operator:" RDC_VERSION
#define RENDER_CLUSTER_BUS_PORT 16379 /* Redis Cluster's bus: RENDER_REDIS_PORT + 10000 */
/* The operator's pods: their label (deploy/base/manager) and, when workerd cannot tell
 * (it runs outside a pod), their namespace. */
#define RENDER_OPERATOR_LABEL_VALUE "rediscluster-operator"
#define RENDER_OPERATOR_NAMESPACE "rediscluster-operator-system"
/* The networking.k8s.io/v1 NetworkPolicy <name> of spec.networkPolicy.enabled: the pods of
 * the selector labels, policyTypes [Ingress], admitted: the Redis port (and the plain-text
 * port with spec.tls.allowPlaintext) from the cluster's own pods, the operator's pods
 * (app.kubernetes.io/name rediscluster-operator in operator_ns, NULL:
 * RENDER_OPERATOR_NAMESPACE), the cluster's backup pods (RENDER_LABEL_BACKUP_CLUSTER <name>,
 * in its namespace: BACKUP) and each of spec.networkPolicy.allowedPeers; in Cluster mode
 * also the cluster bus from the cluster's own pods. */
json_object *render_network_policy(const render_input_t *in, const char *operator_ns);
/* The Secret <name>-redis-auth in which workerd records the password Redis runs with
 * (plan.h, AUTH): type Opaque, stringData {password: password_token}; the token is
 * replaced by the executor, never rendered. */
#define RENDER_AUTH_RECORD_SUFFIX "-redis-auth"
json_object *render_auth_record(const render_input_t *in, const char *password_token);

/* BACKUP (docs/backup.md "What the operator does"): the batch/v1 Job that takes one
 * RedisBackup. Named after the RedisBackup, in its namespace, owned by it (controller,
 * blockOwnerDeletion), labelled RENDER_LABEL_MANAGED_BY, RENDER_LABEL_INSTANCE <cluster>
 * and RENDER_LABEL_BACKUP <backup>; its pod template RENDER_LABEL_BACKUP_CLUSTER <cluster>
 * and RENDER_LABEL_BACKUP <backup> only (no instance or managed-by label: a backup pod is
 * never one of the Redis pods, informerd). backoffLimit 0, activeDeadlineSeconds
 * RENDER_BACKUP_DEADLINE_S, restartPolicy Never, the operator's image
 * (in->operator_image), the pod's and redis container's security contexts (non-root,
 * read-only root), terminationMessagePolicy FallbackToLogsOnError; one container
 * RENDER_BACKUP_CONTAINER running
 *   /usr/local/bin/rdc-backup take --redis <ip>:6379 ([ip]:6379 for IPv6)
 *     [--password-file RENDER_BACKUP_DIR/auth/<spec.auth key>] [--tls-dir RENDER_BACKUP_DIR/tls]
 *     --endpoint E --bucket B [--region R] (--key K | --prefix P --keep N)
 *     --credentials-dir RENDER_BACKUP_DIR/s3 [--s3-ca-file RENDER_BACKUP_DIR/s3-ca/ca.crt]
 *     --termination-log /dev/termination-log
 * with spec.auth's Secret, spec.tls's Secret, the credentials Secret and the CA Secret
 * mounted read-only (mode 0440) under RENDER_BACKUP_DIR (under /var/run, as RESTORE's, for
 * the test data plane's mount namespaces). In Cluster mode (b->sharded) one such container
 * per shard, RENDER_BACKUP_SHARD_PREFIX "<k>", each taking its shard's take[k] with
 * `--slots <ranges>` when given. in is the cluster's (its spec: auth, tls, security
 * contexts); NULL only when out of memory. */
#define RENDER_LABEL_BACKUP "cache.example.com/backup"
#define RENDER_LABEL_BACKUP_CLUSTER "cache.example.com/backup-cluster"
#define RENDER_LABEL_SCHEDULE "cache.example.com/schedule"
#define RENDER_BACKUP_CONTAINER "backup"
#define RENDER_BACKUP_DIR "/var/run/rdc-backup"
#define RENDER_BACKUP_DEADLINE_S 3600
#define RENDER_BACKUP_SHARD_PREFIX "shard-" /* CLUSTER: a shard's container, "shard-<k>" */
#define RENDER_BACKUP_MAX_SHARDS 20
/* One take: one container. */
typedef struct {
    const char *ip;                 /* the source pod's IP */
    const char *key;                /* --key K; NULL: --prefix prefix --keep keep */
    const char *prefix;
    const char *slots;              /* CLUSTER: --slots (the shard's), NULL: none */
} render_backup_take_t;
typedef struct {
    const char *name, *ns, *uid;    /* the RedisBackup: the Job's name, namespace and owner */
    const char *endpoint, *bucket;
    const char *region;             /* NULL: none given (rdc-backup's default) */
    int keep;
    const char *credentials_secret; /* keys access-key-id, secret-access-key */
    const char *ca_secret;          /* ca.crt; NULL: the system's CAs */
    /* the takes: one (container RENDER_BACKUP_CONTAINER), or in Cluster mode (sharded) one
     * per shard (take[k] in container RENDER_BACKUP_SHARD_PREFIX "<k>", all at once) */
    int ntakes, sharded;
    render_backup_take_t take[RENDER_BACKUP_MAX_SHARDS];
} render_backup_t;
json_object *render_backup_job(const render_input_t *in, const render_backup_t *b);

/* ownerReferences [{apiVersion RENDER_GROUP_VERSION, kind, name, uid, controller true,
 * blockOwnerDeletion true}]: a new array, *oom set when out of memory. */
json_object *render_controller_refs(const char *kind, const char *name, const char *uid, int *oom);
/* ACL (spec.acl, docs/tls-and-acl.md): with ACL users, redis.conf says `aclfile
 * RENDER_ACL_FILE`, the Secret <name>-redis-acl (RENDER_ACL_SUFFIX) mounted read-only at
 * RENDER_ACL_DIR (volume RENDER_ACL_VOLUME, item RENDER_ACL_KEY, mode 0440), which the
 * operator writes (never a ConfigMap) with the file render_acl_file makes: the default
 * user, spec.auth's (RENDER_ACL_DEFAULT_RULES, the rules it always had), then each user
 * of spec.acl.users by name,
 *   user <name> on #${acl-hash:<name>} <rules, one blank apart>
 * where ${acl-hash:<name>} (render_acl_hash_token) stands for the SHA-256 of the user's
 * password, which the executor puts in (the Secret never holds a password, only hashes;
 * the plan only tokens). The Secret's annotations say what it holds:
 * RENDER_ACL_DIGEST_ANNOTATION (the file's digest, tokens and passwords: a change is a
 * new digest) and RENDER_ACL_USERS_ANNOTATION (its users, by name, comma-separated). */
#define RENDER_ACL_SUFFIX "-redis-acl"
#define RENDER_ACL_VOLUME "acl"
#define RENDER_ACL_DIR "/etc/redis-acl"
#define RENDER_ACL_KEY "users.acl"
#define RENDER_ACL_FILE RENDER_ACL_DIR "/" RENDER_ACL_KEY
#define RENDER_ACL_DEFAULT_RULES "~* &* +@all"
#define RENDER_ACL_DIGEST_ANNOTATION "cache.example.com/acl-digest"
#define RENDER_ACL_USERS_ANNOTATION "cache.example.com/acl-users"
#define RENDER_ACL_HASH_TOKEN_PREFIX "${acl-hash:"

/* The token that stands for user's password hash, "${acl-hash:<user>}", into out.
 * Returns 0, or -1 when it does not fit. */
int render_acl_hash_token(const char *user, char *out, size_t len);

/* Append the ACL file of spec (with its users; tokens for the hashes) to out. Returns 0,
 * or -1 when out refused the text or a user's rules do not split (a spec not parsed). */
int render_acl_file(const rdc_spec_t *spec, buf_t *out);

/* The Secret <name>-redis-acl holding file (stringData RENDER_ACL_KEY, tokens and all:
 * the executor replaces them) with the annotations digest and users. NULL when out of
 * memory. */
json_object *render_acl_secret(const render_input_t *in, const char *file, const char *digest, const char *users);

/* TLS (spec.tls, docs/tls-and-acl.md): Redis serves TLS on RENDER_REDIS_PORT, the port
 * every client, probe, replica and the operator use (port 0: no plain text; plain text on
 * RENDER_PLAINTEXT_PORT while spec.tls.allowPlaintext, a second port of the container and
 * the Services), with tls-replication yes, tls-cluster yes in Cluster mode (the bus on
 * 16379 speaks TLS), tls-auth-clients yes/no as spec.tls.clientAuth; the Secret's
 * tls.crt, tls.key and ca.crt mounted read-only at RENDER_TLS_DIR (volume
 * RENDER_TLS_VOLUME, mode 0440); the probes and the preStop hook run redis-cli --tls
 * --cacert --cert --key with them (redis-cli checks the chain, not the name; the hook's
 * shell finds them through the environment variable RENDER_TLS_DIR_ENV). All of it
 * is in the pods' restart hash. The pod template carries RENDER_TLS_ANNOTATION
 * RENDER_TLS_ON, so that a pod says which protocol it speaks on 6379 (observerd and
 * the plan read it: a replica cannot follow a primary that speaks the other one, so
 * turning TLS on or off restarts every pod at once, plan.h TLS). */
#define RENDER_TLS_ANNOTATION "cache.example.com/tls"
#define RENDER_TLS_ON "on"
#define RENDER_PLAINTEXT_PORT 6380
#define RENDER_PLAINTEXT_PORT_NAME "redis-plain"
#define RENDER_TLS_VOLUME "tls"
#define RENDER_TLS_DIR "/etc/redis-tls"
#define RENDER_TLS_DIR_ENV "REDIS_TLS_DIR"
/* With spec.tls the probes speak to Redis over this Unix socket (on the data volume), not
 * over TLS: a probe presenting the mounted certificate as its client certificate fails
 * once an expired or refused one reaches the files, and the liveness probe would then
 * restart every pod onto it (test_tls.sh, part 6). The socket is the pod's own. */
#define RENDER_PROBE_SOCKET "/data/redis.sock"
#define RENDER_TLS_CERT RENDER_TLS_DIR "/tls.crt"
#define RENDER_TLS_KEY RENDER_TLS_DIR "/tls.key"
#define RENDER_TLS_CA RENDER_TLS_DIR "/ca.crt"

/* The name of that Service into out[outlen]: "<name>-primary" or "<name>-replicas". */
void render_role_service_name(const char *name, const char *role, char *out, size_t outlen);
/* With in->auth_secret, the container gets RENDER_PASSWORD_ENV and REDISCLI_AUTH from the
 * Secret (secretKeyRef: the password is in neither the ConfigMap nor the pod spec) and
 * starts as `redis-server /etc/redis/redis.conf --requirepass $(REDIS_PASSWORD)
 * --masterauth $(REDIS_PASSWORD)` (the kubelet expands $(VAR)); its redis-cli probes
 * authenticate through REDISCLI_AUTH. */
/* The pod template passes Pod Security "restricted": pod securityContext runAsNonRoot,
 * runAsUser/runAsGroup/fsGroup RENDER_REDIS_UID, seccompProfile RuntimeDefault; the
 * container's allowPrivilegeEscalation false, capabilities drop ALL,
 * readOnlyRootFilesystem true (Redis writes only to the /data volume). */

/* Parse a Kubernetes resource quantity ("1Gi", "500m", "0.5", "1e3", "128974848") into
 * nano-units (value x 10^9; a fraction of a nano-unit rounds up, as the API server rounds).
 * Returns 0, or -1 when s is not a quantity or is too large to hold (more than 30
 * significant digits or beyond 2^126 nano-units). */
int render_quantity_nano(const char *s, __int128 *nano);

/* 1 when a and b are the same quantity ("1Gi" and "1024Mi", "0.5" and "500m"), or the
 * same string when either is not a quantity; else 0. */
int render_quantity_equal(const char *a, const char *b);

#endif
