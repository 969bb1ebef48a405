/* rdc_spec: the rules a RedisCluster must follow, the defaults of its spec, and the spec
 * parsed once into a C struct (rdc_spec_t, "The typed spec" below) that workerd's plan
 * and render and the admission webhook read instead of the JSON.
 *
 * One statement of the rules that workerd's plan (plan.h, decision 4) applies before it
 * reconciles, for the admission webhook to refuse what the operator could not reconcile:
 *
 *   metadata.name          a DNS-1035 label of at most 52 characters (it names the Service
 *                          and the StatefulSet, whose pods add a suffix)
 *   spec                   required, an object
 *   spec.size              required, an integer from 1 to 10
 *   spec.image             required, a non-empty string of printable ASCII without blanks,
 *                          at most 512 bytes
 *   spec.version           optional, an image tag [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   spec.config            optional object; maxmemory <digits>[b|k|kb|m|mb|g|gb] (any case,
 *                          at most 19 digits, so at most 21 bytes); maxmemoryPolicy
 *                          allkeys-lru | volatile-lru | noeviction
 *   spec.storage           optional object; size ^[0-9]+(Gi|Mi|Ti)$, non-zero, at most 2^62
 *                          bytes and 32 characters; storageClass a DNS-1123 subdomain (at
 *                          most 253 characters)
 *
 * and the fields only v1 has (docs/api-versions.md), each checked only when present, as
 * the CRD's v1 schema states them (the schema also gives their defaults; the defaulting
 * webhook writes none of them, so a spec's defaults, and what the operator renders from
 * it, are the same in both versions; rdc_spec_parse fills an absent one in as DEFAULTS
 * below says):
 *   spec.mode              Replication | Standalone | Cluster
 *   spec.cluster           shards 3..20 (default 3), replicasPerShard 0..4 (default 1); in
 *                          Cluster mode spec.size must be shards x (1 + replicasPerShard)
 *                          (the defaulting webhook sets it; up to 100, not 10) and
 *                          metadata.name at most 44 characters (the StatefulSets are
 *                          <name>-shard<k>); a change to or from Cluster mode is Forbidden
 *   spec.persistence       none | rdb | aof
 *   spec.auth              an object with secretRef (required): name a DNS-1123 subdomain
 *                          (required), key [-._a-zA-Z0-9]+ of at most 253 characters
 *   spec.tls               secretRef.name (required) a DNS-1123 subdomain: a Secret in
 *                          cert-manager's layout (tls.crt, tls.key, ca.crt); clientAuth and
 *                          allowPlaintext booleans (default false). docs/tls-and-acl.md
 *   spec.acl               users: at most RDC_SPEC_ACL_USERS_MAX, each name
 *                          [A-Za-z0-9_.-]{1,64}, unique, not "default" (Forbidden: the default
 *                          user is spec.auth's), rules (required) Redis ACL rules of at most
 *                          RDC_SPEC_ACL_RULES_MAX bytes and RDC_SPEC_ACL_TOKENS_MAX rules
 *                          (rdc_spec_acl_rules_split), passwordSecretRef {name (required),
 *                          key (default "password")}; users without spec.auth are Forbidden
 *   spec.scaleDownPolicy   Allow | Forbid: whether spec.size may decrease (Replication and
 *                          Standalone; Cluster mode's size follows its shards). Forbid keeps
 *                          the design document's rule (rdc_spec_validate_update; the CRD's
 *                          CEL rule does the same, also for the scale subresource)
 *   spec.failover          downAfter a duration (Go's syntax, ^([0-9]+([.][0-9]+)?(ms|s|m|h))+$,
 *                          at most 32 characters) from 1s to 5m; minReplicasToWrite 0..9
 *                          and less than spec.size; minReplicasMaxLag 1..3600
 *
 *   spec.restore          restore at creation (docs/backup.md "Restore at creation"): from
 *                          (required) names a RedisBackup or an object, exactly one of the
 *                          two (both: "spec.restore.from: Forbidden: " RDC_SPEC_RESTORE_BOTH;
 *                          neither: "spec.restore.from: Required value: "
 *                          RDC_SPEC_RESTORE_NEITHER; the CRD's CEL rules say the same):
 *                          {backup: a RedisBackup of this namespace, a DNS subdomain (docs/
 *                          backup.md "Restore from a RedisBackup")} or {endpoint (required)
 *                          http(s)://host[:port]; bucket (required) an S3 bucket name; key
 *                          (required) 1..1024 bytes, no control byte; region [a-z0-9-]{1,64};
 *                          credentialsSecret (required) and caSecret Secret names; sha256 64
 *                          lower-case hex digits} (the bucket/key form). In Cluster mode
 *                          only the RedisBackup form ("spec.restore.from: Forbidden: "
 *                          RDC_SPEC_RESTORE_CLUSTER_OBJECT: each shard has its own object);
 *                          immutable, also from unset to set (rdc_spec_validate_update)
 *   spec.backup           scheduled backups (docs/backup.md "What the operator does"):
 *                          schedule (required) a cron expression (schedule.h; cron_parse's
 *                          message), at most RDC_SPEC_BACKUP_SCHEDULE_MAX bytes; keep 1..100
 *                          (default 7); destination (required) {endpoint (required), bucket
 *                          (required), region as spec.restore.from's; prefix (required) 1..900
 *                          bytes, no control byte, not beginning with '/'}; credentialsSecret
 *                          (required) and caSecret Secret names (in Cluster mode each
 *                          shard's objects under <prefix>/shard-<k>); mutable
 *
 * and the pod, disruption-budget, storage and config knobs of v1 (issue 20; the CRD states
 * their shapes in full, these are the rules the reconcile relies on):
 *   spec.resources         requests and limits only, each a map of quantities (strings or
 *                          non-negative integers)
 *   spec.securityContext, spec.podSecurityContext, spec.affinity
 *                          objects (merged over, or replacing, the defaults: render.h)
 *   spec.tolerations, spec.topologySpreadConstraints, spec.imagePullSecrets
 *                          arrays of at most RDC_SPEC_LIST_MAX objects; an image pull
 *                          secret's name a DNS subdomain
 *   spec.nodeSelector      labels (keys qualified names, values label values)
 *   spec.priorityClassName a DNS subdomain
 *   spec.terminationGracePeriodSeconds  0..RDC_SPEC_GRACE_MAX
 *   spec.podMetadata, spec.serviceMetadata  {labels, annotations}: at most
 *                          RDC_SPEC_MAP_MAX each; the operator's labels
 *                          (app.kubernetes.io/name, instance, managed-by, part-of) and
 *                          annotations under cache.example.com/ are Forbidden
 *   spec.podDisruptionBudget.maxUnavailable  0..10, or a percentage "0%".."100%"
 *   spec.storage.retention whenDeleted, whenScaled: Retain | Delete
 *   spec.config.extra      at most REDISCONF_EXTRA_MAX directives (redisconf.h: name and
 *                          value syntax); a directive the operator owns is Forbidden with a
 *                          message naming it and its owner ("spec.config.extra.port:
 *                          Forbidden: directive \"port\" is owned by the operator: ...");
 *                          appendonly is owned when spec.persistence is set
 *
 * and the day-2 knobs (issue 34, docs/knobs.md "Day-2"):
 *   spec.service           type ClusterIP | NodePort | LoadBalancer (not ClusterIP: Forbidden
 *                          outside spec.mode Replication, the only mode with role Services);
 *                          labels, annotations as serviceMetadata's; externalTrafficPolicy
 *                          Cluster | Local, Forbidden with ClusterIP; loadBalancerSourceRanges
 *                          at most RDC_SPEC_SOURCE_RANGES_MAX IPv4/IPv6 CIDRs, Forbidden but
 *                          with LoadBalancer
 *   spec.imagePullPolicy   Always | IfNotPresent | Never
 *   spec.serviceAccountName  a DNS subdomain
 *   spec.env               at most RDC_SPEC_ENV_MAX {name, value | valueFrom}, names
 *                          [-._a-zA-Z][-._a-zA-Z0-9]* unique, never one the operator sets
 *                          (REDIS_PASSWORD, REDISCLI_AUTH, POD_IP, REDIS_TLS_DIR: Forbidden)
 *   spec.volumes           at most RDC_SPEC_VOLUMES_MAX objects, each a DNS-1123 label name,
 *                          unique, never the operator's (data, config, tls, acl, and with
 *                          spec.restore (either form) restore-credentials, restore-ca: Forbidden)
 *   spec.volumeMounts      at most RDC_SPEC_VOLUMES_MAX {name (a volume of spec.volumes),
 *                          mountPath (absolute, not /data, /etc/redis or the TLS and ACL
 *                          directories, nor under them)}
 *   spec.initContainers, spec.containers  at most RDC_SPEC_CONTAINERS_MAX objects each,
 *                          with a name (a DNS-1123 label, unique over both lists, not
 *                          "redis", nor "restore" with spec.restore: Forbidden) and an image
 *   spec.networkPolicy     enabled (a boolean); allowedPeers at most RDC_SPEC_PEERS_MAX
 *                          objects with a namespaceSelector or a podSelector (or both)
 *
 * The string bounds (RDC_SPEC_*_MAX) are the CRD schema's maxLength values
 * (crds/cache.example.com_redisclusters.yaml; test_admission checks that they agree), so
 * the schema, the webhook and the reconcile refuse the same lengths.
 *
 * An optional string that is null or "" counts as absent (as Go's omitempty would make it).
 * A string holding a NUL byte is never valid.
 *
 * On UPDATE (rdc_spec_validate_update) the transition rules of the design: spec.size may not
 * decrease (scaling down is not allowed), and spec.storage.size and spec.storage.storageClass
 * are immutable, because a StatefulSet's volumeClaimTemplates are; spec.restore is
 * immutable (a restore happens at creation only). Absent values are compared
 * as their defaults, and sizes as quantities ("1Gi" = "1024Mi").
 *
 * Problems are recorded as Kubernetes field errors and printed as the API server prints
 * them ("spec.size: Invalid value: 11: must be between 1 and 10"), so users read the same
 * shape of message whether the schema, a CEL rule or the webhook refused them.
 *
 * Every function is pure: no I/O, the inputs are only read.
 */
#ifndef RDC_SPEC_H
#define RDC_SPEC_H

#include "buf.h"
#include "rdc_api.h"
#include "redisconf.h"
#include "schedule.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define RDC_SPEC_SIZE_MIN 1
#define RDC_SPEC_SIZE_MAX 10
#define RDC_SPEC_CLUSTER_SHARDS_MIN 3   /* Redis Cluster: a majority of masters votes a failover */
#define RDC_SPEC_CLUSTER_SHARDS_MAX 20
#define RDC_SPEC_CLUSTER_REPLICAS_MAX 4
#define RDC_SPEC_CLUSTER_SIZE_MAX 100   /* shards x (1 + replicasPerShard) */
#define RDC_SPEC_CLUSTER_NAME_MAX 44    /* <name>-shard<k> is a StatefulSet: 52 at most */
#define RDC_SPEC_MIGRATION_BATCH_MIN 1024
#define RDC_SPEC_MIGRATION_BATCH_MAX (INT64_C(64) << 20)
#define RDC_SPEC_DEFAULT_MIGRATION_BATCH (INT64_C(1) << 20)
/* spec.cluster.migration.bytesPerSecond when absent: a move spread at this rate (by MEMORY
 * USAGE bytes) leaves the masters' clients shorter waits than one at full speed, and is
 * still faster than redis-cli --cluster rebalance (bench/README.md, "A default rate"). */
#define RDC_SPEC_DEFAULT_MIGRATION_RATE INT64_C(24000000)
#define RDC_SPEC_MIGRATION_RATE_MAX (INT64_C(10) << 30)
#define RDC_SPEC_DEFAULT_SHARDS 3
#define RDC_SPEC_DEFAULT_REPLICAS_PER_SHARD 1
#define RDC_SPEC_NAME_MAX 52
#define RDC_SPEC_IMAGE_MAX 512
#define RDC_SPEC_VERSION_MAX 128
#define RDC_SPEC_MAXMEMORY_MAX 21
#define RDC_SPEC_MAXMEMORY_POLICY_MAX 12
#define RDC_SPEC_STORAGE_SIZE_MAX 32
#define RDC_SPEC_STORAGE_CLASS_MAX 253
#define RDC_SPEC_SECRET_KEY_MAX 253
#define RDC_SPEC_DOWN_AFTER_MAX 32
#define RDC_SPEC_DOWN_AFTER_MIN_NS 1000000000LL   /* 1s */
#define RDC_SPEC_DOWN_AFTER_MAX_NS 300000000000LL /* 5m */
#define RDC_SPEC_LIST_MAX 32        /* tolerations, topologySpreadConstraints, imagePullSecrets */
#define RDC_SPEC_MAP_MAX 64         /* nodeSelector, podMetadata/serviceMetadata labels and annotations */
#define RDC_SPEC_ANNOTATION_MAX 4096
#define RDC_SPEC_GRACE_MAX 86400    /* terminationGracePeriodSeconds */
#define RDC_SPEC_ACL_USERS_MAX 16   /* spec.acl.users */
#define RDC_SPEC_ACL_NAME_MAX 64    /* an ACL user's name */
#define RDC_SPEC_ACL_RULES_MAX 1024 /* an ACL user's rules, bytes */
#define RDC_SPEC_ACL_TOKENS_MAX 64  /* ... and rules (tokens; a selector is one) */
/* DAY-2 (issue 34) bounds; the CRD's maxItems/maxLength say the same. */
#define RDC_SPEC_SOURCE_RANGES_MAX 32 /* spec.service.loadBalancerSourceRanges */
#define RDC_SPEC_CIDR_MAX 43          /* an IPv6 address and /128 */
#define RDC_SPEC_ENV_MAX 64           /* spec.env */
#define RDC_SPEC_ENV_NAME_MAX 253
#define RDC_SPEC_ENV_VALUE_MAX 4096
#define RDC_SPEC_VOLUMES_MAX 16       /* spec.volumes, spec.volumeMounts */
#define RDC_SPEC_MOUNT_PATH_MAX 1024
#define RDC_SPEC_CONTAINERS_MAX 8     /* spec.initContainers, spec.containers (each) */
#define RDC_SPEC_CONTAINER_NAME_MAX 63
#define RDC_SPEC_PEERS_MAX 16         /* spec.networkPolicy.allowedPeers */
/* spec.restore.from (docs/backup.md "Restore at creation"); the CRD's maxLength say the same. */
#define RDC_SPEC_RESTORE_ENDPOINT_MAX 256
#define RDC_SPEC_RESTORE_KEY_MAX 1024
#define RDC_SPEC_RESTORE_REGION_MAX 64
/* spec.restore.from names both forms, or neither (the details of the Forbidden and the
 * Required error; the CRD's CEL rules carry the same messages). */
#define RDC_SPEC_RESTORE_BOTH                                                                                       \
    "must name either a RedisBackup (backup) or an object (endpoint, bucket, key, credentialsSecret), not both"
#define RDC_SPEC_RESTORE_NEITHER                                                                                    \
    "must name a RedisBackup (backup) or an object (endpoint, bucket, key, credentialsSecret)"
/* spec.restore.from's bucket/key form in Cluster mode (Forbidden; the CEL rule's words) */
#define RDC_SPEC_RESTORE_CLUSTER_OBJECT                                                                             \
    "in Cluster mode must name a RedisBackup (backup): each shard restores its own object"
/* spec.backup */
#define RDC_SPEC_BACKUP_SCHEDULE_MAX 128
#define RDC_SPEC_BACKUP_PREFIX_MAX 900
#define RDC_SPEC_BACKUP_KEEP_MAX 100

/* DEFAULTS: what a spec that leaves a field unset (absent, null, or an empty string) runs
 * with, the same in workerd with or without the defaulting webhook (rdc_spec_parse applies
 * them, in one place; rdc_spec_default_ops writes the first three into a stored object):
 *   spec.version                   "7.2", as the tag of an image that names none (an image
 *                                  with a tag or digest runs as given)
 *   spec.storage.size              "1Gi"
 *   spec.config.maxmemoryPolicy    allkeys-lru
 *   spec.mode                      Standalone (the v1 schema defaults it to Replication on
 *                                  every object the API server stores; v1alpha1 clusters
 *                                  are converted to Standalone)
 *   spec.persistence               aof (as the v1 schema defaults it)
 *   spec.scaleDownPolicy           Allow
 *   spec.auth.secretRef.key        "password"
 *   spec.failover.downAfter        3s
 *   spec.failover.minReplicasToWrite  1 when spec.size >= 3, else 0
 *   spec.failover.minReplicasMaxLag   10 (seconds)
 *   spec.cluster.shards            3; spec.cluster.replicasPerShard 1 (Cluster mode; spec.size
 *                                  is then shards x (1 + replicasPerShard), which the
 *                                  defaulting webhook writes)
 *   spec.podDisruptionBudget.maxUnavailable  1
 *   spec.restore.from.region       us-east-1
 *   spec.backup.keep               7; spec.backup.destination.region us-east-1
 *   spec.storage.retention.whenDeleted, whenScaled  Retain (each, once retention is set;
 *                                  without retention the StatefulSet carries no policy)
 * The pod knobs (resources, securityContext, affinity, ...) have no value of their own
 * when unset: the rendered pod then has render.h's (workerd/render.h, KNOBS). */
#define RDC_SPEC_DEFAULT_VERSION "7.2"
#define RDC_SPEC_DEFAULT_STORAGE_SIZE "1Gi"
#define RDC_SPEC_DEFAULT_MAXMEMORY_POLICY "allkeys-lru"
#define RDC_SPEC_DEFAULT_MODE "Standalone"
#define RDC_SPEC_DEFAULT_PERSISTENCE "aof"
#define RDC_SPEC_DEFAULT_AUTH_KEY "password"
#define RDC_SPEC_DEFAULT_DOWN_AFTER_NS 3000000000LL /* 3s */
#define RDC_SPEC_DEFAULT_MIN_REPLICAS_TO_WRITE 1   /* with spec.size >= 3; else 0 */
#define RDC_SPEC_DEFAULT_MIN_REPLICAS_MAX_LAG 10
#define RDC_SPEC_DEFAULT_MAX_UNAVAILABLE 1
#define RDC_SPEC_DEFAULT_RESTORE_REGION "us-east-1"
#define RDC_SPEC_DEFAULT_BACKUP_KEEP 7

/* ---- Field errors ------------------------------------------------------------------ */

typedef enum {
    RDC_FIELD_REQUIRED,    /* "<field>: Required value" */
    RDC_FIELD_INVALID,     /* "<field>: Invalid value: <value>: <detail>" */
    RDC_FIELD_UNSUPPORTED, /* "<field>: Unsupported value: <value>: supported values: ..." */
    RDC_FIELD_FORBIDDEN,   /* "<field>: Forbidden: <detail>" */
} rdc_field_error_type_t;

typedef struct rdc_field_errors rdc_field_errors_t;

/* A new, empty list of field errors; NULL when out of memory. */
rdc_field_errors_t *rdc_field_errors_new(void);

/* Free the list and set *self_p to NULL. NULL (or *self_p NULL) is fine. */
void rdc_field_errors_destroy(rdc_field_errors_t **self_p);

/* Number of errors recorded. At most RDC_FIELD_ERRORS_MAX are kept; more are counted in
 * rdc_field_errors_dropped. */
#define RDC_FIELD_ERRORS_MAX 32
size_t rdc_field_errors_count(const rdc_field_errors_t *e);
size_t rdc_field_errors_dropped(const rdc_field_errors_t *e);

/* 1 when a record was lost for lack of memory (the list is then incomplete). */
int rdc_field_errors_oom(const rdc_field_errors_t *e);

/* The i-th error's type, field path ("spec.storage.size") and full text
 * ("spec.storage.size: Invalid value: \"0Gi\": must be greater than zero"). The strings
 * belong to the list. Out of range: type RDC_FIELD_INVALID and NULL strings. */
rdc_field_error_type_t rdc_field_error_type(const rdc_field_errors_t *e, size_t i);
const char *rdc_field_error_field(const rdc_field_errors_t *e, size_t i);
const char *rdc_field_error_text(const rdc_field_errors_t *e, size_t i);

/* 1 when every recorded error is RDC_FIELD_FORBIDDEN (and there is at least one). */
int rdc_field_errors_all_forbidden(const rdc_field_errors_t *e);

/* Append the texts as Kubernetes joins field errors: the only one as is, several as
 * "[first, second, ...]". Errors past RDC_FIELD_ERRORS_MAX, and texts that would not fit
 * in out's cap (each is kept whole or not at all), are counted at the end: "[first, and
 * 3 more]". Returns 0, or -1 when out refused even that (cap or memory). */
int rdc_field_errors_format(const rdc_field_errors_t *e, buf_t *out);

/* Append s quoted as the messages quote a value (Go's %q: quotes and backslashes escaped,
 * control bytes as \xNN), cut to its first max bytes at a UTF-8 character boundary with
 * "..." before the closing quote. */
void rdc_spec_put_quoted(buf_t *b, const char *s, size_t max);

/* ---- Validation ---------------------------------------------------------------------- */

/* Check a RedisCluster (anything at all: wrong types are reported, never trusted) against
 * the rules above and record each problem in errs. Returns the number recorded.
 * (rdc_spec_parse without the typed result.) */
size_t rdc_spec_validate(const json_object *rc, rdc_field_errors_t *errs);

/* Check the transition from old_rc to new_rc (size may not decrease when new_rc's
 * spec.scaleDownPolicy is Forbid; storage size may grow, never shrink, and not change in
 * Cluster mode; storage class and spec.restore immutable) and record each problem in errs. Values that
 * are themselves invalid are left to rdc_spec_validate. Returns the number recorded. */
size_t rdc_spec_validate_update(const json_object *old_rc, const json_object *new_rc,
                                rdc_field_errors_t *errs);

/* 1 when new_rc's spec is old_rc's, or old_rc's with only the defaults added: an update
 * that changes nothing in the spec (metadata, finalizers, labels). Else 0. */
int rdc_spec_unchanged(const json_object *old_rc, const json_object *new_rc);

/* ---- The typed spec -------------------------------------------------------------------- */

/* spec.mode, spec.persistence and a retention policy. The first value is the default. */
typedef enum { RDC_MODE_STANDALONE = 0, RDC_MODE_REPLICATION, RDC_MODE_CLUSTER } rdc_mode_t;
typedef enum { RDC_PERSISTENCE_AOF = 0, RDC_PERSISTENCE_RDB, RDC_PERSISTENCE_NONE } rdc_persistence_t;
typedef enum { RDC_RETAIN = 0, RDC_DELETE } rdc_retention_t;
/* spec.service.type (DAY-2): the type of the role Services. */
typedef enum { RDC_SVC_CLUSTER_IP = 0, RDC_SVC_NODE_PORT, RDC_SVC_LOAD_BALANCER } rdc_service_type_t;

/* A redis.conf directive of spec.config.extra. */
typedef struct {
    const char *name;
    const char *value;
} rdc_directive_t;

/* An ACL user of spec.acl.users. */
typedef struct {
    const char *name;
    const char *rules;  /* as given: rdc_spec_acl_rules_split splits it */
    const char *secret; /* passwordSecretRef.name */
    const char *key;    /* passwordSecretRef.key, default "password" */
} rdc_acl_user_t;

/* A RedisCluster's spec as the rules above accept it, with the DEFAULTS applied: what
 * workerd's plan and render and the admission webhook read, instead of the JSON. Every
 * string and JSON value is borrowed from the object it was parsed from. */
typedef struct {
    int size;                      /* spec.size, RDC_SPEC_SIZE_MIN..RDC_SPEC_SIZE_MAX (Cluster mode:
                                      shards x (1 + replicasPerShard), up to RDC_SPEC_CLUSTER_SIZE_MAX) */
    const char *image;             /* spec.image as given */
    const char *version;           /* spec.version as given, NULL when unset */
    const char *tag;               /* the tag the image runs with when it names none: version,
                                      or RDC_SPEC_DEFAULT_VERSION; NULL when it names one */
    rdc_mode_t mode;
    rdc_persistence_t persistence;
    int persistence_set;           /* spec.persistence given: it owns more of config.extra
                                      (redisconf_owned) */
    int scale_down_forbidden;      /* spec.scaleDownPolicy Forbid (default Allow) */
    struct {
        const char *maxmemory;        /* NULL: unset (no maxmemory line) */
        const char *maxmemory_policy;
        size_t n_extra;
        rdc_directive_t extra[REDISCONF_EXTRA_MAX]; /* spec.config.extra, sorted by name */
    } config;
    struct {
        const char *size;
        const char *storage_class;    /* NULL: the cluster's default class */
        int retention_set;            /* spec.storage.retention given */
        rdc_retention_t when_deleted, when_scaled;
    } storage;
    struct {
        const char *secret;           /* spec.auth.secretRef.name; NULL: no password */
        const char *key;
    } auth;
    struct {
        const char *secret;           /* spec.tls.secretRef.name; NULL: no TLS */
        int client_auth;              /* spec.tls.clientAuth: Redis asks clients for a certificate */
        int allow_plaintext;          /* spec.tls.allowPlaintext: plain text on a second port */
    } tls;
    struct {
        size_t n_users;
        rdc_acl_user_t users[RDC_SPEC_ACL_USERS_MAX]; /* spec.acl.users, sorted by name */
    } acl;
    struct {
        int64_t down_after_ns;
        int min_replicas_to_write;
        int min_replicas_max_lag;     /* seconds */
    } failover;
    struct {
        int shards;                   /* spec.cluster.shards (Cluster mode) */
        int replicas_per_shard;
        int64_t migration_batch_bytes;      /* spec.cluster.migration.batchBytes */
        int64_t migration_bytes_per_second; /* .bytesPerSecond, 0: no bound (absent: the default) */
    } cluster;
    struct {
        int max_unavailable;          /* when max_unavailable_percent is NULL */
        const char *max_unavailable_percent; /* "0%".."100%", or NULL */
    } pdb;
    /* The pod and Service knobs rendered as given (render.h KNOBS): free-form JSON of
     * the type the rules above check, or NULL when unset. */
    struct {
        const json_object *resources, *security_context, *pod_security_context, *affinity;
        const json_object *tolerations, *topology_spread_constraints, *image_pull_secrets; /* arrays */
        const json_object *node_selector;                  /* an object of strings */
        const json_object *pod_metadata, *service_metadata; /* {labels, annotations} */
        const char *priority_class_name;                   /* NULL: unset */
        int64_t termination_grace_period_seconds;          /* -1: unset */
    } pod;
    /* DAY-2 (issue 34): spec.service, the pod extras, spec.networkPolicy (rdc_spec.c,
     * "Day-2 knobs"; docs/knobs.md). Borrowed JSON, NULL when unset. */
    struct {
        rdc_service_type_t type;                    /* spec.service.type, default ClusterIP */
        const json_object *labels, *annotations;    /* spec.service.{labels,annotations} */
        const char *external_traffic_policy;        /* Cluster | Local, NULL: unset */
        const json_object *source_ranges;           /* loadBalancerSourceRanges, an array of CIDRs */
    } service;
    struct {
        const char *image_pull_policy;              /* Always | IfNotPresent | Never, NULL: unset */
        const char *service_account_name;           /* NULL: unset */
        const json_object *env, *volumes, *volume_mounts, *init_containers, *containers; /* arrays */
    } extras;
    /* spec.restore.from (docs/backup.md "Restore at creation"); endpoint and backup NULL: no
     * restore. Borrowed; region defaults to RDC_SPEC_DEFAULT_RESTORE_REGION. With backup
     * (the RedisBackup form) the object's fields stay NULL until workerd's plan resolves the
     * RedisBackup into them (plan_restore.h, rdc_spec_parse_restore_source). */
    struct {
        const char *backup;                         /* spec.restore.from.backup, NULL: none */
        const char *endpoint, *bucket, *key, *region;
        const char *credentials_secret;             /* keys access-key-id, secret-access-key */
        const char *ca_secret;                      /* ca.crt; NULL: the system's CAs */
        const char *sha256;                         /* --expect-sha256; NULL: the object's metadata */
        /* CLUSTER (a record of a Cluster-mode RedisBackup, rdc_spec_parse_restore_source):
         * shard k's pods restore shard[k]'s object instead of key; nshards 0: none */
        int nshards;
        struct {
            const char *key, *sha256;
        } shard[RDC_SPEC_CLUSTER_SHARDS_MAX];
    } restore;
    /* spec.backup (docs/backup.md "What the operator does"); schedule NULL: none. Borrowed;
     * region defaults to RDC_SPEC_DEFAULT_RESTORE_REGION, keep to RDC_SPEC_DEFAULT_BACKUP_KEEP. */
    struct {
        const char *schedule;                       /* the cron expression, parsed into cron */
        cron_t cron;
        int keep;                                   /* take --keep and the RedisBackups kept */
        const char *endpoint, *bucket, *prefix, *region;
        const char *credentials_secret, *ca_secret;
    } backup;
    struct {
        int enabled;                                /* spec.networkPolicy.enabled */
        const json_object *allowed_peers;           /* [{namespaceSelector, podSelector}], NULL: none */
    } netpol;
} rdc_spec_t;

/* Parse rc (anything at all) against the rules above: every problem is recorded in errs
 * exactly as rdc_spec_validate records it (the same texts, in the same order; validation
 * and parsing are one pass), and, when there is none, *out holds every value of the spec
 * with the DEFAULTS applied. Returns the number of problems recorded; *out is complete
 * only when it is 0 (else it holds the defaults and the fields that passed their own
 * rules). rc must outlive *out. Pure: rc is only read. */
size_t rdc_spec_parse(const json_object *rc, rdc_spec_t *out, rdc_field_errors_t *errs);

/* A restore source src: an object of spec.restore.from's bucket/key form (endpoint,
 * bucket, key, region, credentialsSecret, caSecret, sha256; other members ignored), and
 * for a Cluster-mode backup shards, an array of 1..RDC_SPEC_CLUSTER_SHARDS_MAX objects
 * {key (the key's rule), sha256 (optional, its rule)}, shard k's at index k,
 * checked against that form's rules with every problem recorded in errs under path
 * ("status.restore.source": "status.restore.source.key: Required value"). When there is
 * none, out->restore takes its values (borrowed from src; region defaulted; backup kept
 * as it was); else out is unchanged. Returns the number of problems recorded. Pure. */
size_t rdc_spec_parse_restore_source(const json_object *src, const char *path, rdc_spec_t *out,
                                     rdc_field_errors_t *errs);

/* The spec of a spec that sets nothing: the DEFAULTS, size 0, no image. */
void rdc_spec_defaults(rdc_spec_t *out);

/* "aof", "rdb", "none": the value of spec.persistence p names. */
const char *rdc_spec_persistence_name(rdc_persistence_t p);

/* "ClusterIP", "NodePort" or "LoadBalancer". */
const char *rdc_spec_service_type_name(rdc_service_type_t t);

/* "Retain" or "Delete". */
const char *rdc_spec_retention_name(rdc_retention_t r);

/* ---- Defaults -------------------------------------------------------------------------- */

/* The defaults of rc's spec as JSON Patch (RFC 6902) "add" operations appended to ops (an
 * array): spec.version "7.2" unless spec.image already names a tag or digest,
 * spec.storage.size "1Gi", spec.config.maxmemoryPolicy "allkeys-lru", each only where the
 * value is absent, null or "" and its parent is an object or absent (a parent of the
 * wrong type is left for validation to report). Nothing when rc has no spec object.
 * Returns the number of operations appended, or -1 when out of memory (ops may then hold
 * some of them). */
int rdc_spec_default_ops(const json_object *rc, json_object *ops);

/* 1 when spec says mode Cluster; then *shards and *replicas (each may be NULL) get
 * spec.cluster's, with the defaults for what is absent (not range-checked: validate
 * first). 0 for the other modes (the pointers untouched). */
int rdc_spec_cluster_layout(const json_object *spec, int *shards, int *replicas);

/* A deep copy of rc's spec with the defaults applied; NULL when rc has no spec object or
 * out of memory. The caller puts it (json_object_put). */
json_object *rdc_spec_defaulted(const json_object *rc);

/* ---- Predicates (shared with workerd) ------------------------------------------------ */

/* [a-z]([-a-z0-9]*[a-z0-9])? of 1..max characters. */
int rdc_spec_is_dns1035_label(const char *s, size_t max);

/* Dot-separated labels of [a-z0-9-], alphanumeric at both ends, at most 253 characters. */
int rdc_spec_is_dns1123_subdomain(const char *s);

/* [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
int rdc_spec_is_image_tag(const char *s);

/* Printable ASCII without blanks, 1..RDC_SPEC_IMAGE_MAX bytes. */
int rdc_spec_is_image_ref(const char *s);

/* 1 when image names a digest ('@') or a tag (a ':' in its last path component, so the
 * port of "host:5000/redis" is not one). */
int rdc_spec_image_has_tag_or_digest(const char *image);

/* A duration as the CRD's spec.failover.downAfter pattern allows: one or more
 * <digits>[.<digits>]<unit>, unit ms, s, m or h ("3s", "1m30s", "1.5s"). Returns 0 with
 * *ns the nanoseconds (fractions below 1 ns dropped), or -1 when s is not one or is
 * longer than about 292 years. */
int rdc_spec_duration_ns(const char *s, int64_t *ns);

/* An ACL user's name: [A-Za-z0-9_.-]{1,RDC_SPEC_ACL_NAME_MAX}. */
int rdc_spec_acl_user_name_ok(const char *s);

/* One rule of an ACL user's rules: rules[start .. start+len). */
typedef struct {
    const char *s;
    size_t len;
} rdc_acl_token_t;

/* Split rules (Redis ACL rules: "~app:* +@read -@dangerous") at blanks into tok[0..max),
 * a selector "(~k* +get)" one token with its blanks, as ACL SETUSER takes them one
 * argument each: returns how many, or -1 with *why (a static string) when a byte is
 * not printable ASCII or a blank, a selector is not closed, there are more than max, or
 * a rule is the operator's: on, off, nopass, resetpass, reset (any case), or a password
 * (">", "<", "#", "!"): passwords come from passwordSecretRef. */
int rdc_spec_acl_rules_split(const char *rules, rdc_acl_token_t *tok, size_t max, const char **why);

/* Redis' memory size: 1..19 digits and an optional unit b, k, kb, m, mb, g, gb (any case). */
int rdc_spec_is_redis_memory(const char *s);

/* spec.storage.size in bytes. Returns RDC_STORAGE_OK with *bytes set, or why not. */
typedef enum {
    RDC_STORAGE_OK = 0,
    RDC_STORAGE_BAD_FORMAT, /* not ^[0-9]+(Gi|Mi|Ti)$ */
    RDC_STORAGE_TOO_LARGE,  /* more than 2^62 bytes */
    RDC_STORAGE_ZERO,
} rdc_storage_rc_t;
rdc_storage_rc_t rdc_spec_storage_bytes(const char *s, uint64_t *bytes);

#endif
