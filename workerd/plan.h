/* plan: the pure core of a RedisCluster reconcile.
 *
 *   plan_compute(RedisCluster, observed ConfigMap, Service, StatefulSet, now)
 *       -> actions (writes), events, status, requeue
 *
 * No I/O and no clock reads: the same input gives the same plan. A thin executor performs
 * each action with exactly one request (or, for PLAN_CLEANUP, the cleanup hook), in order,
 * and stops at the first failure (the key is then retried with backoff). Events are
 * recorded after the action they report has succeeded.
 *
 * ACTIONS, in the order they appear (each kind at most once, except creates and applies,
 * which come in the order ConfigMap, Service, StatefulSet so pods never start without
 * their config, then the PodDisruptionBudget, planned only while the StatefulSet of that
 * name is ours or absent):
 *
 *   PLAN_ADD_FINALIZER     PATCH <RedisCluster>, application/merge-patch+json,
 *   PLAN_REMOVE_FINALIZER  body {"metadata":{"finalizers":[...],"resourceVersion":RV}}:
 *                          the whole new finalizer list, with the observed resourceVersion
 *                          as precondition (omitted when the object has none), so a
 *                          concurrent change to the list fails with 409 instead of being lost.
 *   PLAN_CLEANUP           run the cleanup hook (no request; body and path are NULL).
 *   PLAN_CREATE            POST <children collection>?fieldManager=rediscluster-operator,
 *                          application/json, body = the full desired object. Create-only:
 *                          when an object of that name appeared since it was observed
 *                          absent, the API answers 409 AlreadyExists, nothing is changed,
 *                          and the next reconcile observes it (see OWNERSHIP).
 *   PLAN_APPLY             PATCH <child>?fieldManager=rediscluster-operator&force=true,
 *                          application/apply-patch+yaml (JSON is YAML), body = the full
 *                          desired object (server-side apply). Only ever on a child whose
 *                          controller owner reference is ours (force takes fields from
 *                          other managers, so it never goes to an object we do not control).
 *   PLAN_REPLACE           PUT <child>?fieldManager=rediscluster-operator, application/json,
 *                          body = the observed object with the desired one merged over it
 *                          and the observed metadata.resourceVersion as precondition (only
 *                          from plan_take_back, see TAKING A CHILD BACK).
 *   PLAN_DELETE            DELETE <child>, application/json, body = DeleteOptions with
 *                          preconditions {uid, resourceVersion} of the observed object (only
 *                          from plan_take_back, only for a Service), followed by PLAN_CREATE;
 *                          or DELETE pods/<name> with preconditions {uid} (SWITCHOVER below:
 *                          the operator rolls its pods itself).
 *   PLAN_UPDATE_STATUS     PATCH <RedisCluster>/status?fieldManager=rediscluster-operator&force=true,
 *                          application/apply-patch+yaml, body
 *                          {"apiVersion","kind","metadata":{name,namespace},"status":{...}}
 *                          (server-side apply). No resourceVersion: the same plan's
 *                          finalizer patch changes it, and the status is recomputed from
 *                          scratch on every reconcile. Only the Ready, Progressing and
 *                          Degraded conditions: the list is a map keyed by type, so a
 *                          condition another field manager applies (informerd's
 *                          ReconcileCrashed) is neither carried from a stale snapshot nor
 *                          removed.
 *
 * Every action carries the request path ("/apis/apps/v1/namespaces/ns/statefulsets/x?...",
 * for PLAN_CREATE the collection "/apis/apps/v1/namespaces/ns/statefulsets?..."),
 * method and content type, so the executor needs no knowledge of the resources.
 *
 * DECISIONS, in order:
 *  1. The RedisCluster is not an object, or metadata.name / metadata.namespace is missing,
 *     empty or not a string: nothing can be addressed. No actions, no events, no status,
 *     no requeue; plan_error() says what is missing.
 *  2. metadata.deletionTimestamp is set: if our finalizer is present, PLAN_CLEANUP (Normal
 *     event CleanedUp) then PLAN_REMOVE_FINALIZER; otherwise nothing. No status, no requeue.
 *  3. Our finalizer is absent: PLAN_ADD_FINALIZER first, then go on in the same plan.
 *  4. metadata.uid missing (owner references impossible) or the spec invalid (spec not an
 *     object; size not an integer in 1..10; image empty, with blanks, or not a string;
 *     version not a tag; config.maxmemory not <digits>[b|k|kb|m|mb|g|gb]; maxmemoryPolicy
 *     not allkeys-lru|volatile-lru|noeviction; storage.size not ^[0-9]+(Gi|Mi|Ti)$ or zero;
 *     storage.storageClass not a DNS subdomain; metadata.name not a DNS-1035 label of at
 *     most 52 characters, which a Service and a StatefulSet's pod labels need): phase
 *     Failed, Ready=False reason InvalidSpec (InvalidObject for the uid) with a message
 *     naming every bad field and why; no child writes; a Warning event with the same
 *     reason, recorded only with a status write (so a resync of an unchanged, invalid
 *     object writes nothing); no requeue (a fix arrives as a watch event).
 *  5. Otherwise the desired children (ConfigMap, Service, StatefulSet, then the
 *     PodDisruptionBudget "policy/v1 poddisruptionbudgets" of the pods, render_pdb) are
 *     built (render.h) from the spec parsed by rdc_spec_parse, with the defaults rdc_spec.h
 *     states for what it leaves unset (version "7.2" as the tag of an image without one,
 *     maxmemoryPolicy allkeys-lru, storage.size 1Gi, ...: those of the webhook), so a
 *     cluster runs the same whether or not the webhook is installed, and compared with the
 *     observed ones: a missing child gets PLAN_CREATE (Normal event Created); an observed
 *     child that is not ours is left alone (OWNERSHIP); a drifted child of ours gets
 *     PLAN_APPLY with the full desired object and a Normal event (Updated, or Scaled when
 *     the StatefulSet's replicas change).
 *  6. The status is computed; PLAN_UPDATE_STATUS only when it differs from the observed one.
 *  7. Requeue after 10 s unless the phase is Running or Failed; also, whatever the phase,
 *     while an OwnerConflict stands: the object in the way carries none of our labels, so
 *     no watch event says when it goes, and only looking again finds out.
 *
 * MANAGED-FIELD COMPARISON (drift), plan_json_subset(desired, observed):
 *   An observed child matches when desired is a subset of it:
 *   - object: every key of desired is present in observed with a matching value; keys only
 *     in observed (defaults the API server adds: terminationMessagePath, imagePullPolicy,
 *     dnsPolicy, clusterIPs, uid, managedFields, ...; labels and annotations of others)
 *     are ignored;
 *   - array of objects whose desired elements carry a "uid" (ownerReferences) or else a
 *     "name" (containers, ports, volumes, volumeMounts): each desired element must match
 *     the observed element with the same key, wherever it is; extra observed elements
 *     (another owner, a sidecar added by someone else) are ignored; in an owner
 *     reference, apiVersion matches any version of the same group (the references the
 *     operator of cache.example.com/v1alpha1 wrote are still ours after the upgrade and
 *     are not rewritten);
 *   - any other array (command, accessModes, volumeClaimTemplates): same length, matched
 *     by position;
 *   - string: equal; under a "requests" or "limits" key they are compared as quantities
 *     ("1Gi" = "1024Mi", "500m" = "0.5");
 *   - number: equal by value; boolean: equal; null in desired: observed absent or null.
 *   Fields the operator stops setting are not found by this comparison; the spec hash
 *   finds them (REMOVED KNOBS below).
 *
 * REMOVED KNOBS (spec hash): the StatefulSet and the headless Service carry the annotation
 * cache.example.com/spec-hash = sha256 of what the operator rendered for them (the
 * StatefulSet's spec.template; the Service's metadata.labels, metadata.annotations and
 * spec, each as plain JSON in render order), written with every create, apply and replace.
 *   - observed hash = desired hash: the comparison above decides (drift gets PLAN_APPLY);
 *     a resync of an unchanged cluster writes nothing;
 *   - observed hash present and different (the spec changed since the last write):
 *     PLAN_REPLACE, whatever the comparison says, with body = the desired object merged
 *     over the observed one (as TAKING A CHILD BACK: others' labels, annotations and
 *     defaults kept; managedFields and status dropped; the observed resourceVersion as
 *     precondition), then for a StatefulSet spec.template replaced wholesale by the
 *     desired one (a sidecar or template label someone else added is dropped; the API
 *     server fills its defaults in again; an observed kubectl.kubernetes.io/restartedAt
 *     template annotation is kept) and spec.volumeClaimTemplates as observed; for a
 *     Service spec.selector and spec.ports as desired, and each metadata label or
 *     annotation the desired Service no longer sets dropped when the observed annotation
 *     cache.example.com/rendered-metadata ("labels:<key>,...,annotations:<key>,...", what
 *     the operator set, written with the hash; the informer cache drops managedFields)
 *     lists it, so others' labels stay. Normal event Updated. A changed
 *     template rolls the pods as any template change does (phase Scaling);
 *   - no observed hash (a child written by an operator before this rule): the comparison
 *     decides as before; the hash is recorded by the child's next write. So after the
 *     upgrade nothing is written for an unchanged cluster, and a knob removed before the
 *     child's first write under this version is not seen until then (any change that
 *     is drift, e.g. of the image or a knob's value, records the hash).
 *   The ConfigMap (its data is wholly the operator's) and the PodDisruptionBudget carry no
 *   hash; the role Services of spec.mode Replication neither (they take no knobs).
 *
 * OWNERSHIP (controller-runtime's rule: the operator never takes over what it did not
 * create): an observed child is ours when its first controller owner reference
 * (controller: true) carries this RedisCluster's uid. A child that is not ours (no
 * controller reference at all, as with a user's own ConfigMap, or another object's,
 * including an earlier RedisCluster of the same name the garbage collector has not yet
 * cleaned up) is left untouched: no write of any kind, Degraded=True reason OwnerConflict
 * with a message naming the kind, namespace/name and why (no controller reference, or the
 * other controller's kind and name), and the Warning event OwnerConflict with the status
 * write that first reports it. When the ConfigMap is not ours the StatefulSet is neither
 * created nor updated either (its pods would mount the other object's redis.conf), which
 * the Degraded message says. A StatefulSet that is not ours contributes nothing to the
 * status (it is treated as absent there: phase Pending, Ready=False Creating).
 * An unlabelled object of a child's name is not in the labelled cache and looks absent
 * to the plan; PLAN_CREATE then fails safe with 409 AlreadyExists, and the caller hands
 * it in from then on (workerd reads it by name: reconcile.h, existsmemo.h), so that it
 * is reported and left alone as above.
 *
 * A FAILED WRITE (plan_write_failed): when the API refuses one of the plan's writes (422,
 * 403, 400, a webhook's denial, ...), the status still tells: the plan's computed status
 * with Degraded=True, reason the API's Status reason when it is a valid condition reason
 * (Invalid, Forbidden, ...) else WriteFailed, message "cannot <create|apply|...> <Kind>
 * <ns>/<name>: <HTTP code> <reason>: <the API's message>" (then any other Degraded
 * message), written only when it differs from the observed status, with a Warning event
 * of that reason only when the Degraded condition says something new. So the same
 * failure, retried with backoff, writes nothing and records nothing again once its status
 * is observed.
 *
 * TAKING A CHILD BACK (plan_take_back): a forced server-side apply of a child we control
 * can still be refused: another manager's list entry may collide with ours (kubectl patch
 * of a Service port to 7000 under the name "redis": the list key is port+protocol, so the
 * apply makes two ports named "redis", 422 Duplicate value). Applying again would fail
 * the same way forever. The operator's desired state wins, as with controller-runtime's
 * CreateOrUpdate: the child is replaced (PLAN_REPLACE) by the observed object with the
 * desired one merged over it (objects merged key by key, lists of objects keyed as in the
 * comparison below with desired elements merged over the observed element of the same
 * key and other observed elements kept, other lists and values taken from desired;
 * managedFields and status dropped), with a Normal event DriftRepaired naming the refusal.
 * When even that is refused (422) and the child is the Service, which holds no data and
 * whose pods are selected again at once, it is deleted (preconditions uid and
 * resourceVersion) and created afresh, with a Warning event Recreated. Never the
 * StatefulSet (its claims) nor the ConfigMap that way. A take-back that fails is reported
 * as a failed write (below).
 *
 * DIAGNOSIS (plan_compute_observed): when the cluster is not Running, the plan's
 * plan_wants_diagnosis() says so and the caller reads what explains it (only then: a
 * healthy resync reads nothing more): the pods of the StatefulSet's selector, the Events
 * of the StatefulSet, and the Events of the first pod that is not Ready
 * (plan_pod_to_explain); a caller that has the pods already reads only the Events
 * plan_diagnosis_reads names, and finds the same cause (test_plan's diagnosis table).
 * With them, while fewer replicas than spec.size are ready, the first cause found, in
 * this order, becomes Ready=False and Degraded=True with its reason
 * and a message quoting the API's words (at most 1024 bytes of them):
 *   FailedCreate      fewer pods exist than the StatefulSet wants, and of its Events
 *                     FailedCreate (a ResourceQuota, Pod Security, ...) is later than any
 *                     SuccessfulCreate (an older one is history);
 *   RestoreFailed     spec.restore is set and the restore init container (render.h RESTORE)
 *                     of the first pod not Ready ended with an exit code other than 0, now
 *                     or in its last run: its termination message (rdc-backup's line);
 *   ErrImagePull, ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError,
 *   InvalidImageName, RunContainerError, CreateContainerError
 *                     the waiting reason of a container of the first pod not Ready;
 *   FailedScheduling  that pod's PodScheduled condition is False (the scheduler's message,
 *                     e.g. unbound PersistentVolumeClaims or no node fits);
 *   <reason>          that pod's latest Warning Event (FailedMount, ...), when its reason
 *                     is a valid condition reason.
 *   The last two only once the pod is 30 s old (by creationTimestamp and now): until then
 *   they are the ordinary steps of a pod starting (the scheduler waits for a claim the
 *   provisioner is binding), not causes, and reporting them would flap the status.
 *   Nothing found: the status is what it would be without the reads.
 * STORAGE CLASS: when spec.storage.storageClass is set and the plan creates the
 * StatefulSet or the cluster is not Running, plan_storage_class_to_check() names the
 * class; the caller GETs it (a read only then: a healthy resync reads nothing more) and,
 * when it does not exist, plans again with storage_class_missing: Degraded=True
 * StorageClassNotFound names the class and the two ways out. The StatefulSet is created
 * all the same: claims of a class with no StorageClass object still bind to
 * PersistentVolumes made with that storageClassName (static provisioning), and the
 * cluster then runs; once Running, the class is not looked up and Degraded clears.
 *
 * REPLICATION (spec.mode Replication; docs/replication.md; the decisions are topology.h's):
 *   - the Services <name>-primary and <name>-replicas (render_role_service) are planned
 *     as the other children (create, apply on drift, OwnerConflict when not ours), after
 *     the headless Service;
 *   - PLAN_LABEL_POD for each pod whose cache.example.com/role label is not its role by
 *     designation (primary for the pod status.primary names, <name>-0 at first, once it
 *     is observed a master or promoted in this plan; replica for the others, and for
 *     every other pod whatever its label shows in a plan that gives primary), body
 *     {"metadata":{"labels":{"cache.example.com/role":ROLE}}};
 *   - PLAN_REDIS `REPLICAOF <primary ip> 6379` for each reachable node that is a second
 *     primary or follows another address, only while the primary is reachable and a
 *     master (Normal event Repointed);
 *   - FAILOVER (topology.h, docs/failover.md; spec.failover.downAfter, default
 *     PLAN_FAILOVER_DOWN_AFTER_MS): an election first writes only the status, with
 *     status.primary the winner and metadata.resourceVersion the observed one as a
 *     precondition (Warning event FailedOver); the next plan, from that record, has the
 *     labels that take role=primary, PLAN_REDIS `REPLICAOF NO ONE` on the new primary
 *     (Normal event Promoted; the executor guards it, redisexec_promote_guard), the
 *     REPLICAOFs of the other nodes to it, then the label that gives role=primary. No
 *     candidate: ReplicationHealthy False and Degraded True NoFailoverCandidate;
 *   - SWITCHOVER (topology.h, docs/failover.md "Planned switchover"): the StatefulSet
 *     rolls OnDelete (render.h); with the StatefulSet's status.updateRevision and the
 *     observed status.switchoverFrom, PLAN_DELETE of one outdated replica at a time
 *     (Normal event RolledPod), then the handover of the primary role: first only the
 *     status, status.primary := the replica and status.switchoverFrom := the old primary
 *     with the resourceVersion precondition (Normal event SwitchingOver), then from that
 *     record the old primary's label taken and PLAN_REDIS `FAILOVER TO <ip> 6379 TIMEOUT
 *     5000` on it (Normal event SwitchedOver; the executor guards it,
 *     redisexec_switchover), the new primary's label once it reports role master, and
 *     status.switchoverFrom dropped; then the old primary's pod is deleted like any
 *     outdated replica. A terminating primary (kubectl delete pod, a drain) is handed
 *     over the same way while its preStop hook waits. No candidate for a rollout:
 *     Degraded True NoSwitchoverCandidate. While any of it is under way, requeue after
 *     PLAN_REQUEUE_SWITCHOVER_NS;
 *   - labels taking role=primary always come before the Redis commands, the label
 *     giving it after them (never two pods labelled primary at once);
 *   - COMMAND RECORD (docs/failover.md, "Decisions after the operator's own commands"):
 *     a plan with the topology's Redis commands writes the status twice: first, before
 *     its labels and commands, with the resourceVersion precondition (the commands go
 *     only from a plan decided on the object as it is) and status.lastRedisCommandTime
 *     = now + PLAN_COMMAND_WINDOW_NS, each of its PLAN_REDIS carrying that moment as
 *     not_after_wall_ns (the executor sends none after it); and last, as every plan,
 *     with status.lastRedisCommandTime PLAN_NOW_TOKEN, which the executor replaces by
 *     the time it sends the write (after every command before it). A plan that sends
 *     none keeps the recorded time. So the status always says a moment after which no
 *     command of the operator's went out, whatever crash came in between;
 *   - FRESHNESS: an observation in which some pod (present or terminating, with an IP)
 *     was not probed after status.lastRedisCommandTime (its node at the pod's IP,
 *     observedAt - probedAgoMs later than it; topo_observation_current) is none to
 *     decide from: no election, switchover, Redis command, deletion or primary label,
 *     the status keeps what it says of Redis, and the plan looks again within
 *     PLAN_REQUEUE_OBSERVE_NS (observerd probes every pod when the record reaches it
 *     and sends the first observation probed wholly after it);
 *   - status.primary, status.nodes[] {pod, ip, role, linkUp, offset, lagBytes} and the
 *     condition ReplicationHealthy (after Degraded). The status write is planned when
 *     primary, ReplicationHealthy, or a node's pod, ip, role or linkUp differ: offsets and
 *     lagBytes alone never cause a write (they move all the time); they are a snapshot of
 *     the moment the status was written for another reason (live figures: the metric
 *     rdc_redis_replication_lag_bytes). Without an observation (more->redis NULL) the
 *     observed nodes and ReplicationHealthy are kept as they are (NotObserved when there
 *     is none yet) and no Redis action is planned.
 *   - SCALE-IN (plan_scale.h, topology.h SCALE-IN; docs/replication.md "Scaling in"):
 *     spec.size below the StatefulSet's replicas while status.primary or
 *     status.switchoverFrom names a pod at an ordinal >= spec.size: the StatefulSet keeps
 *     its replicas (rendered with them) and the primary role is handed to a pod that stays
 *     as SWITCHOVER does (the record, then FAILOVER TO); once neither names such a pod,
 *     the replicas are lowered (Normal event Scaled) and the StatefulSet removes the pods
 *     of the highest ordinals, their claims as its persistentVolumeClaimRetentionPolicy
 *     whenScaled says (spec.storage.retention). Progressing=True reason ScalingIn
 *     ("scaling in from 5 to 3 replicas[: the handover's words]") while the StatefulSet
 *     wants more than spec.size, in every mode;
 *   Standalone (and a spec without mode, as v1alpha1 clusters are converted): none of
 *   this; independent servers, no role Services, labels or Redis actions (a scale-in
 *   lowers the replicas at once).
 *   CLUSTER (spec.mode Cluster, not yet a value of the spec; ARCHITECTURE.md "Standalone,
 *   Replication, Cluster"): its place is beside REPLICATION, after the children and AUTH
 *   and before the status, in plan_cluster.c.
 *   Order of the actions: children, [the COMMAND RECORD's first status write,] role
 *   labels taken, Redis commands, role label given, a pod deletion, then the status
 *   (then RUNTIME CONFIG's commands and annotations).
 *
 * AUTH (spec.auth.secretRef; docs/replication.md): the pods get the password from the
 * Secret by reference (render.h), and workerd keeps a record of the password Redis runs
 * with in the Secret <name>-redis-auth (owned, key password), which it reads with the
 * user's Secret on every reconcile of such a cluster (more->auth):
 *   PLAN_AUTH_UNRECORDED  PLAN_AUTH_RECORD (the pods started with the Secret's password);
 *   PLAN_AUTH_ROTATE      when every pod of 0..size-1 has an IP: on each, PLAN_REDIS
 *                         `ACL SETUSER default on >${password}` and `CONFIG SET masterauth
 *                         ${password}` (both passwords accepted from here), then on each
 *                         `ACL SETUSER default <${old-password}`, then PLAN_AUTH_RECORD
 *                         with the Normal event PasswordRotated; no topology command in
 *                         the same plan (the observer cannot authenticate meanwhile). A
 *                         pod without an IP yet: nothing now, requeue after 10 s.
 *   The executor authenticates with the new password, else the old one (the record's).
 *
 * TLS (spec.tls; docs/tls-and-acl.md; plan_tls.c): the pods serve TLS (render.h TLS) and
 * the executor speaks it; what more->tls says of the Secret becomes the condition
 * TLSReady (after the others):
 *   not read                 the observed TLSReady stays (none yet: nothing)
 *   absent, unreadable       False TLSSecretNotFound / TLSSecretUnreadable
 *   a check failed           False TLSCertificate<tlscert_status_name> (NoCertificate,
 *                            NoKey, KeyMismatch, NoCA, Untrusted, NotYetValid, Expired,
 *                            NameMismatch) with tlscert's detail
 *   expiring                 True TLSCertificateExpiring (Warning event of that reason
 *                            with the status write that first says it)
 *   pods serve another       True TLSCertificateRotating "k of n pods serve ..."
 *   else                     True TLSCertificateValid "serial S, valid until T"
 *   A False TLSReady is a Degraded finding of the same reason (its Warning event).
 *   ROTATION: a reachable pod whose observed "tlsCert" (the SHA-256 of the certificate it
 *   served, observer.h) is not the Secret's, while the Secret's passes the checks (valid
 *   or expiring): PLAN_REDIS `CONFIG SET tls-cert-file ${current} tls-key-file ${current}
 *   tls-ca-cert-file ${current}` (Redis reads its files again; the kubelet refreshes a
 *   mounted Secret within a minute or so, so this is repeated, requeued after
 *   PLAN_REQUEUE_NOT_READY_NS, until the pod serves the new one; Normal event
 *   TLSReloaded), no restart. A spec without tls: none of this, no TLSReady.
 *
 * ACL (spec.acl.users; docs/tls-and-acl.md; plan_acl.c), once more->acl says every
 * password is known (else Degraded ACLPasswordMissing with its missing line, nothing
 * written):
 *   - PLAN_ACL_FILE of the Secret <name>-redis-acl (render_acl_secret: the file of
 *     render_acl_file, the default user's rules spec.auth's) when its
 *     RENDER_ACL_DIGEST_ANNOTATION is not the file's digest (sha256 of its text and both
 *     fingerprints), before the children (the pods mount it);
 *   - per pod (as RUNTIME CONFIG picks them: Ready, with an IP, reachable) whose
 *     annotation cache.example.com/acl is not "<users digest>/<restarts>": PLAN_REDIS
 *     `ACL SETUSER <user> reset on #${acl-hash:<user>} <rules...>` for each user, `ACL
 *     DELUSER <users>` for those the pod's cache.example.com/acl-users annotation or the
 *     observed Secret's RENDER_ACL_USERS_ANNOTATION name and the spec no longer does,
 *     then PLAN_ANNOTATE_POD with both annotations; one Normal event ACLApplied. No
 *     restart; not while a password rotation is planned; what does not fit the plan is
 *     the next reconcile's (requeue).
 *
 * RUNTIME CONFIG (spec.config.extra directives Redis changes at run time; runtimecfg.h,
 * docs/knobs.md): they are not in the pod template's hash, so changing them rolls
 * nothing; instead, for each pod runtimecfg_compute names (Ready, with an IP, reachable,
 * whose annotation cache.example.com/runtime-config is not "<hash>/<restarts>"), in
 * Standalone and Replication alike: PLAN_REDIS `CONFIG SET name value [name value ...]`
 * (every run-time directive, sorted by name), then PLAN_ANNOTATE_POD with body
 * {"metadata":{"annotations":{"cache.example.com/runtime-config":RECORD}}}; one Normal
 * event ConfigApplied with the last annotation. These come last, after the status write:
 * a value Redis refuses fails the reconcile (backoff, the error in the log) without
 * holding back the children or the status. Nothing while the spec is invalid or the
 * StatefulSet is not ours, and nothing at all when no run-time directive is set: a
 * healthy resync sends no command and writes nothing.
 *
 * RESTORE FROM A REDISBACKUP (spec.restore.from.backup; plan_restore.h, docs/backup.md
 * "Restore from a RedisBackup"): decided before the children. The restore's source is
 * status.restore.source once recorded (the pods are rendered from it as from the
 * bucket/key form, written with every status, nothing read); until then the StatefulSet
 * and its PodDisruptionBudget are held (neither created nor changed), the plan asks for
 * the RedisBackup (plan_restore_backup_to_read) and, from the answer, says why it waits:
 * Ready False RestorePending (not read, unreadable, Pending, Running) or RestoreFailed
 * (absent, Failed, no object to restore: also Degraded, with its Warning Event), the
 * message naming the RedisBackup and its phase; a Succeeded one's object is recorded by
 * this plan's status write (never held) and the next plan creates the StatefulSet from
 * the record. The requeue: 5 s while it runs, else a backoff of 5 s to 2 min.
 *
 * VOLUME EXPANSION (plan_volume.h; docs/knobs.md "Growing the volumes"): spec.storage.size
 * above the observed StatefulSet's claim template "data", its class unchanged (shrinking
 * is refused by the CRD and the webhook): the apply keeps the observed templates and no
 * ImmutableFieldChanged is reported; instead, once the claims are read (plan_wants_claims,
 * the caller lists them with plan_pod_selector), PLAN_RESIZE_CLAIM for each claim
 * data-<name>-<i> of 0..replicas-1 that asks less, then PLAN_DELETE of the StatefulSet
 * with DeleteOptions {propagationPolicy: Orphan, preconditions {uid, resourceVersion}}
 * (its pods keep running; Normal event ResizingVolumes); the next reconcile finds it
 * absent and creates it with the new template, and it adopts the pods (same selector,
 * same template: no pod restarts). A StatefulSet being deleted is waited for. Until
 * every claim of 0..replicas-1 reports status.capacity.storage >= spec.storage.size,
 * Progressing=True reason VolumeResizing ("k/n claims at 2Gi; waiting for ...") and a
 * requeue after 10 s (a claim's capacity is not watched). A class that does not allow
 * expansion: the API server refuses the claim's patch (403), which A FAILED WRITE
 * reports (Degraded, the API's message), and the StatefulSet is not deleted.
 *
 * IMMUTABLE STATEFULSET FIELDS: spec.selector and spec.serviceName never change for a
 * given name, but an observed StatefulSet created otherwise may differ: then no apply is
 * planned for it (the API server would refuse it every time) and Degraded=True reason
 * ImmutableFieldChanged says to delete the StatefulSet. spec.volumeClaimTemplates cannot
 * change either: when spec.storage no longer matches the observed template, the apply
 * carries the observed template unchanged (so other drift, such as replicas or the image,
 * is still fixed) and Degraded=True reason ImmutableFieldChanged names the storage change
 * (Warning event of the same reason when the condition appears). The message never
 * advises recreating the StatefulSet (its old claims would stay and new pods would get
 * the new class or size: a mixed set): it says to set spec.storage back, and how to move
 * to other storage (a new RedisCluster, then migrate the data).
 *
 * STATUS (phase, replicas, readyReplicas, ready = "readyReplicas/spec.size" for kubectl's
 * READY column, observedGeneration = metadata.generation, selector for /scale,
 * conditions Ready, Progressing, Degraded):
 *   Failed   invalid spec (above);
 *   Pending  no StatefulSet yet, or 0 ready replicas, or fewer ready than spec.size while
 *            nothing is changing (and the observed phase is not Scaling, below), or the
 *            first rollout of a new cluster (CREATING below);
 *   Scaling  the StatefulSet's replicas differ from spec.size, or it is rolling out
 *            (status.observedGeneration behind metadata.generation, updatedReplicas or
 *            status.replicas != spec.replicas, currentRevision != updateRevision), or this
 *            plan applies a new replica count or pod template; also while the observed
 *            phase is Scaling, some but fewer than spec.size replicas are ready and no
 *            diagnosis found a cause (a scale-up between two pods: no Pending flicker);
 *   Running  readyReplicas >= spec.size and none of the above.
 *   CREATING: while the observed Progressing condition is True with reason Creating (set
 *   when there was no StatefulSet yet), the StatefulSet is neither resized nor given a new
 *   template by this plan, and fewer than spec.size replicas are ready or it still rolls
 *   out, the cluster stays Pending with Ready=False Creating "k/n replicas ready" (unless
 *   a diagnosed cause) and Progressing=True Creating: a new cluster goes Pending, Running
 *   and its ready count is the progress, without a Scaling per pod in between.
 *   Conditions (type: status reason):
 *     Ready:       True AllReplicasReady | False Creating ("k/n replicas ready"), ReplicasNotReady, InvalidSpec,
 *                  InvalidObject, RestorePending, RestoreFailed (RESTORE FROM A REDISBACKUP), or a
 *                  diagnosed cause (message "2/3 replicas ready", then ": " and the cause; or the
 *                  spec problems)
 *     Progressing: True Creating, Scaling, ScalingIn, VolumeResizing, RollingUpdate, RestorePending |
 *                  False Stable, InvalidSpec, InvalidObject, RestoreFailed
 *     Degraded:    True ImmutableFieldChanged, OwnerConflict, InvalidSpec, InvalidObject,
 *                  StorageClassNotFound, RestoreFailed, a diagnosed cause, or a failed write's
 *                  reason (above) | False AsExpected
 *   The Warning event of a True Degraded condition (its reason and message) goes with the
 *   status write, and only when the condition's status, reason or message changes.
 *   lastTransitionTime of a condition is `now` when its status flips (or it is new), and
 *   the observed value otherwise; lastUpdateTime is `now` when its status, reason or
 *   message changes (or it is new), the observed value otherwise (none when the observed
 *   condition has none). The status write is planned only when phase, replicas,
 *   readyReplicas, ready, observedGeneration, selector, or a condition's status, reason, message
 *   or observedGeneration differ from the observed status, and then per the
 *   STATUS WRITE POLICY (status_policy.h; docs/status-and-drift.md): a difference that is
 *   only progress (replicas, readyReplicas, ready, status.nodes, the messages of Ready and
 *   Progressing) of a converging cluster (Pending or Scaling, Progressing True, before and
 *   after) is not written while the observed Ready condition's lastUpdateTime is less than
 *   STATUS_POLICY_COALESCE_NS ago (STATUS_POLICY_CREATING_NS in a first rollout, Pending
 *   and Creating before and after): no write, the requeue at most the rest of that window
 *   (plan_status_held_ns says how long). Everything else is written by the reconcile that
 *   computes it, an election's record included.
 *
 * WHERE IT IS (each piece owns what it decides, behind its own header; plan_internal.h is
 * the reconcile's context they all read):
 *   plan.c              plan_compute: decisions 1-4 and the order of the pieces below
 *   plan_build.[ch]     the plan object: actions and their request paths, events, the
 *                       status slot, the requeue; the accessors and plan_to_json
 *   plan_compare.[ch]   MANAGED-FIELD COMPARISON (plan_json_subset) and the merge of
 *                       TAKING A CHILD BACK
 *   plan_children.[ch]  decision 5: ConfigMap, Services, StatefulSet, PodDisruptionBudget,
 *                       OWNERSHIP, REMOVED KNOBS, IMMUTABLE STATEFULSET FIELDS
 *   plan_auth.[ch]      AUTH
 *   plan_tls.[ch]       TLS (the TLSReady condition, certificate rotation)
 *   plan_acl.[ch]       ACL
 *   plan_replication.[ch]  REPLICATION, FAILOVER, SWITCHOVER (the decisions: topology.h)
 *   plan_cluster.[ch]   CLUSTER (spec.mode Cluster), next: slots, meets and moves as the
 *                       mode's own step beside plan_replication, its decisions in a pure
 *                       core of their own as topology.h is Replication's
 *   plan_runtime.[ch]   RUNTIME CONFIG
 *   plan_restore.[ch]   RESTORE FROM A REDISBACKUP
 *   plan_diagnosis.[ch] DIAGNOSIS (plan_diagnosis_reads, plan_pod_to_explain)
 *   plan_status.[ch]    STATUS and the STATUS WRITE POLICY
 *   plan_observe.[ch]   readers of the observed objects (a StatefulSet's view, conditions)
 *   plan_failed.c       A FAILED WRITE (plan_write_failed), TAKING A CHILD BACK
 */
#ifndef RDC_PLAN_H
#define RDC_PLAN_H

#include "buf.h"
#include "rdc_spec.h"
#include "tlscert.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define PLAN_FINALIZER "cache.example.com/finalizer"
#define PLAN_SPEC_HASH_ANNOTATION "cache.example.com/spec-hash" /* REMOVED KNOBS */
#define PLAN_RENDERED_KEYS_ANNOTATION "cache.example.com/rendered-metadata" /* REMOVED KNOBS */
#define PLAN_REDIS_MAX_ARGS 136 /* CONFIG SET with every run-time directive pair (RUNTIME CONFIG) */
#define PLAN_REQUEUE_NOT_READY_NS (INT64_C(10) * 1000000000)
#define PLAN_FAILOVER_DOWN_AFTER_MS (RDC_SPEC_DEFAULT_DOWN_AFTER_NS / 1000000) /* spec.failover.downAfter's */
#define PLAN_REQUEUE_SWITCHOVER_NS (INT64_C(2) * 1000000000) /* SWITCHOVER: look again */
#define PLAN_COMMAND_WINDOW_NS (INT64_C(10) * 1000000000) /* COMMAND RECORD: a plan's commands go within */
#define PLAN_REQUEUE_OBSERVE_NS (INT64_C(1) * 1000000000)  /* FRESHNESS: look again */
#define PLAN_NOW_TOKEN "${now}" /* COMMAND RECORD: the executor writes the time it sends the status */
#define PLAN_REQUEUE_RESHARD_NS (INT64_C(100) * 1000000)      /* CLUSTER: a slot move goes on */

typedef enum {
    PLAN_ADD_FINALIZER,
    PLAN_REMOVE_FINALIZER,
    PLAN_CLEANUP,
    PLAN_CREATE,
    PLAN_APPLY,
    PLAN_REPLACE,
    PLAN_DELETE,
    PLAN_UPDATE_STATUS,
    PLAN_LABEL_POD,  /* PATCH pods/<name>, merge patch of the role label (REPLICATION) */
    PLAN_REDIS,      /* a Redis command on one pod (no request: pod, ip, argv) */
    PLAN_AUTH_RECORD, /* server-side apply of Secret <name>-redis-auth (AUTH below); the body's
                        stringData.password is the token "${password}", which the executor
                        replaces by the password itself */
    PLAN_ANNOTATE_POD, /* PATCH pods/<name>, merge patch of the runtime-config annotation
                          (RUNTIME CONFIG below; ACL below) */
    PLAN_SLOT_MOVE,    /* CLUSTER: hash slots moved between two masters (no request; name the
                          source pod, body the job: workerd/slotmove.h, slotmove_job_to_json) */
    PLAN_ACL_FILE,     /* server-side apply of Secret <name>-redis-acl (ACL below); its
                          stringData's ${acl-hash:<user>} tokens are replaced by the executor
                          with the users' password hashes */
    PLAN_RESIZE_CLAIM  /* PATCH persistentvolumeclaims/<name>, merge patch of
                          spec.resources.requests.storage (VOLUME EXPANSION below) */
} plan_action_kind_t;

/* What workerd read of the password (AUTH below). */
typedef enum {
    PLAN_AUTH_UNKNOWN = 0, /* no spec.auth, or the Secret could not be read: no auth action */
    PLAN_AUTH_CURRENT,     /* Redis runs with the Secret's password (the record says so) */
    PLAN_AUTH_UNRECORDED,  /* no record yet: Redis runs with what the pods started with */
    PLAN_AUTH_ROTATE       /* the Secret's password is not the recorded one: rotate */
} plan_auth_t;

/* What workerd read of spec.tls's Secret (TLS below). */
typedef struct {
    int read;             /* it was asked for: found, absent, or error says why not */
    int found;            /* it exists */
    char error[256];      /* it could not be read: why ("" otherwise) */
    tlscert_check_t check; /* tlscert_check of tls.crt, tls.key, ca.crt for the pods' names
                              <pod>.<name>.<namespace>.svc (found) */
} plan_tls_t;

/* What workerd read for spec.acl (ACL below). */
typedef struct {
    int known;                 /* every user's password was read (else no ACL write) */
    char missing[512];         /* why not: "user app: Secret ns/app-pw has no key \"password\"" */
    char users_fp[65];         /* a fingerprint of every user's password (not the default's): a
                                  password that changes changes it; never a password or hash */
    char default_fp[65];       /* the same of spec.auth's password (the file's default user) */
    const json_object *secret; /* the Secret <name>-redis-acl as read, or NULL when absent */
} plan_acl_t;

/* One write. Every string and the body belong to the plan and live until plan_destroy. */
typedef struct {
    plan_action_kind_t kind;
    const char *method;        /* "POST" for PLAN_CREATE, "PUT" for PLAN_REPLACE, "DELETE" for
                                  PLAN_DELETE, else "PATCH"; NULL for PLAN_CLEANUP */
    const char *content_type;  /* "application/apply-patch+yaml", "application/merge-patch+json",
                                  or "application/json" (create, replace, delete) */
    const char *group_version; /* "v1", "apps/v1", "cache.example.com/v1" */
    const char *resource;      /* "configmaps", "services", "statefulsets", "redisclusters" */
    const char *ns;            /* namespace */
    const char *subresource;   /* "status" for PLAN_UPDATE_STATUS, else NULL */
    const char *field_manager; /* "rediscluster-operator" for every write but the finalizer
                                  patches and PLAN_DELETE */
    const char *name;          /* the object's name (for PLAN_CREATE it is in the body, not the path) */
    const char *path;          /* request path and query; NULL for PLAN_CLEANUP */
    json_object *body;         /* request body (serialise it; do not change or free it) */
    const char *why;           /* one line for logs: what differs, or why the write is needed */
    /* PLAN_REDIS only (name is the pod): */
    const char *ip;            /* the pod's IP; the command goes to ip:6379 */
    int argc;
    const char *const *argv;   /* e.g. {"REPLICAOF", "127.10.0.5", "6379"}; never a password;
                                  argc <= PLAN_REDIS_MAX_ARGS */
    int64_t not_after_wall_ns; /* > 0: not sent once the wall clock passed it (the topology's
                                  commands, COMMAND RECORD under REPLICATION); 0: no limit */
} plan_action_t;

/* An Event to record on the RedisCluster (or, BACKUP, on a RedisBackup). */
typedef struct {
    const char *type;    /* "Normal" or "Warning" */
    const char *reason;  /* "Created", "Updated", "Scaled", "CleanedUp", "InvalidSpec", ... */
    const char *message; /* names the object and what happened */
    int action;          /* index of the action it reports: record it once that succeeded */
    const json_object *involved; /* the object it is about when not the RedisCluster: a
                                    RedisBackup {apiVersion, kind, metadata {name, namespace,
                                    uid}}; NULL: the RedisCluster */
} plan_event_t;

typedef struct plan plan_t;

/* Plan one reconcile. rediscluster is the RedisCluster as read from the API (anything at
 * all is accepted: wrong types and missing parts are reported, never trusted); configmap,
 * service and statefulset are the observed children named like it, NULL when absent (a
 * non-object counts as absent). now_wall_ns is the wall-clock time for new
 * lastTransitionTimes. The inputs are only read. Returns a plan the caller destroys with
 * plan_destroy, or NULL only when out of memory. */
plan_t *plan_compute(const json_object *rediscluster, const json_object *configmap,
                     const json_object *service, const json_object *statefulset, int64_t now_wall_ns);

/* What the caller read because the plan asked (DIAGNOSIS, STORAGE CLASS above). Arrays
 * are the items of a list answer; any member may be NULL (not read). */
typedef struct {
    const json_object *pods;       /* pods of the StatefulSet's selector */
    const json_object *sts_events; /* Events whose involvedObject is the StatefulSet */
    const json_object *pod_events; /* Events of the pod plan_pod_to_explain named */
    int storage_class_missing;     /* GET storageclasses/<plan_storage_class_to_check> was 404 */
    /* What the work item carries besides the three children (REPLICATION): */
    const json_object *members;    /* the cluster's pods (children.Pods), an array */
    const json_object *redis;      /* observerd's observation (children.Redis), or NULL */
    const json_object *primary_service;  /* Service <name>-primary, or NULL when absent */
    const json_object *replicas_service; /* Service <name>-replicas, or NULL when absent */
    const json_object *network_policy;   /* DAY-2: NetworkPolicy <name>, or NULL when absent */
    const char *operator_namespace;      /* DAY-2: the operator's pods' namespace, NULL: unknown */
    const char *operator_image;          /* RESTORE (render.h): the restore init container's image,
                                            NULL: RENDER_OPERATOR_IMAGE_DEFAULT */
    /* BACKUP (plan_backup.h): what the work item carries of the cluster's backups, arrays
     * (children.RedisBackups, Jobs, BackupPods), each NULL when there is none: */
    const json_object *backups;          /* the RedisBackups whose spec.source.cluster is it */
    const json_object *jobs;             /* the Jobs labelled with its instance (backup Jobs) */
    const json_object *backup_pods;      /* the pods of those Jobs */
    /* RESTORE FROM A REDISBACKUP (below): the RedisBackup plan_restore_backup_to_read named,
     * as the caller read it on the plan's request: */
    int restore_backup_read;             /* 1: read; the members below say what came of it */
    const json_object *restore_backup;   /* the RedisBackup, NULL when absent (404) */
    const char *restore_backup_error;    /* the read failed: why (restore_backup NULL); else NULL */
    /* What the work item carries of a Cluster-mode cluster (CLUSTER below): */
    const json_object *shard_statefulsets; /* StatefulSets <name>-shard<k> (children.ShardStatefulSets) */
    const json_object *shard_budgets;      /* their PodDisruptionBudgets (children.ShardBudgets) */
    plan_auth_t auth;              /* AUTH below */
    int budget_short;              /* CRITICAL PATH below: the client-side budget is short */
    const plan_tls_t *tls;         /* TLS below: spec.tls's Secret, NULL when not read */
    const plan_acl_t *acl;         /* ACL below: the users' passwords, NULL when not read */
    const json_object *claims;     /* VOLUME EXPANSION below: the PersistentVolumeClaims of the
                                      pods' selector (a list answer or its items), NULL when
                                      not read */
} plan_observed_t;

/* VOLUME EXPANSION: 1 when the plan needs the claims (plan_observed_t.claims, listed with
 * plan_pod_selector) and was not given them. */
int plan_wants_claims(const plan_t *plan);

/* CRITICAL PATH: when the caller says its client-side QPS budget is short (budget_short:
 * a request now would wait for a token, kube_client_budget_short), a plan that creates a
 * new cluster's StatefulSet leaves out the PodDisruptionBudget and the first status
 * (unless that status tells a problem: Degraded, Failed, an election), which the next
 * reconcile makes (the StatefulSet's watch event brings it; a cluster not Running is
 * requeued anyway). Under a budget shared by many new clusters every StatefulSet, which
 * the pods wait for, then goes out before the objects nothing waits for: 4 writes of a
 * new cluster (finalizer, ConfigMap, Service, StatefulSet) stand before its pods
 * instead of 6. A status not written yet counts as Creating (CREATING). With budget to
 * spare nothing changes: one reconcile makes them all. */

/* plan_compute with what the caller read on the plan's request; more may be NULL (then
 * it is plan_compute). Inputs are only read; NULL only when out of memory. */
plan_t *plan_compute_observed(const json_object *rediscluster, const json_object *configmap,
                              const json_object *service, const json_object *statefulset,
                              const plan_observed_t *more, int64_t now_wall_ns);

/* The observed children by kind, each NULL when absent (a non-object counts as absent). */
typedef struct {
    const json_object *configmap;
    const json_object *service;
    const json_object *statefulset;
    const json_object *pdb; /* the PodDisruptionBudget (policy/v1) */
} plan_children_t;

/* plan_compute_observed with every child, the PodDisruptionBudget included (plan_compute
 * and plan_compute_observed pass it as absent). Inputs are only read; NULL only when out
 * of memory. */
plan_t *plan_compute_children(const json_object *rediscluster, const plan_children_t *kids,
                              const plan_observed_t *more, int64_t now_wall_ns);

/* 1 when the computed phase is neither Running nor Failed and the StatefulSet is ours:
 * reading pods and Events may explain why (DIAGNOSIS). */
int plan_wants_diagnosis(const plan_t *plan);

/* RESTORE FROM A REDISBACKUP: the RedisBackup (in the RedisCluster's namespace) the plan
 * needs read and was not given (plan_observed_t.restore_backup_read 0), or NULL. Owned by
 * the plan. */
const char *plan_restore_backup_to_read(const plan_t *plan);

/* The StatefulSet's pod selector as a label selector string, or NULL as plan_status. */
const char *plan_pod_selector(const plan_t *plan);

/* The class whose existence decides whether the StatefulSet may be created (STORAGE
 * CLASS), or NULL when there is nothing to check. Owned by the plan. */
const char *plan_storage_class_to_check(const plan_t *plan);

/* The name of the first pod (in list order) whose Ready condition is not True, or NULL.
 * Points into pods. */
const char *plan_pod_to_explain(const json_object *pods);

/* What a DIAGNOSIS still needs read when the pods are known already (a worker has them
 * from informerd's cache, in their compact form: informerd/podview.h), so that a cluster
 * that converges as it should costs no read at all:
 *   sts_events  1 when the StatefulSet's Events may say FailedCreate: walking its ordinals
 *               as its controller does (OrderedReady), a pod is missing (or being
 *               deleted) before any is found not Ready (the controller waits at a pod not
 *               Ready and creates nothing after it, so it cannot fail to), and, when it
 *               is missing, the controller could have made it 10 s ago by now_wall_ns
 *               (the StatefulSet's creation for the first ordinal, the Ready condition's
 *               lastTransitionTime of the pod before it for the others; a time not known
 *               counts as long ago), so a step of an ordinary rollout reads nothing; else 0;
 *   pod         the pod whose Events may name the cause (plan_pod_to_explain), only when
 *               it is 30 s old by now_wall_ns (DIAGNOSIS) and its own status explains
 *               nothing (no container waiting for a cause, not unschedulable); else NULL
 *               (points into pods).
 * pods is an array (or a list answer); inputs are only read. */
typedef struct {
    int sts_events;
    const char *pod;
} plan_diag_reads_t;
void plan_diagnosis_reads(const json_object *statefulset, const json_object *pods, int64_t now_wall_ns,
                          plan_diag_reads_t *out);

/* The plan that takes a refused child back (TAKING A CHILD BACK): action is the index in
 * failed of a PLAN_APPLY the API refused with http_status, api_reason and api_message;
 * observed is that child as observed (NULL: nothing to take back). recreate 0 gives a
 * PLAN_REPLACE and its DriftRepaired event; recreate 1 (a Service only) a PLAN_DELETE, a
 * PLAN_CREATE and the Recreated event. Returns an empty plan when the action is not such
 * an apply or recreate is asked for another kind; NULL only when out of memory. */
plan_t *plan_take_back(const plan_t *failed, size_t action, const json_object *observed, int recreate,
                       int http_status, const char *api_reason, const char *api_message);

/* The plan that reports a failed write (A FAILED WRITE above): action is the index in
 * failed of the write the API refused with http_status, api_reason (its Status reason;
 * NULL or "" when none) and api_message (NULL or "" when none); rediscluster is the
 * object as it is now (read afresh by the caller; failed may have been computed from an
 * older copy: every condition's lastTransitionTime is taken again from rediscluster where
 * it shows the same status). The result holds at most a PLAN_UPDATE_STATUS and its
 * Warning event, nothing when the failed write was the status itself (it cannot report
 * itself) or the observed status already says it; no requeue (the caller backs off).
 * Inputs are only read. Returns a plan the caller destroys, or NULL when out of memory. */
plan_t *plan_write_failed(const json_object *rediscluster, const plan_t *failed, size_t action, int http_status,
                          const char *api_reason, const char *api_message, int64_t now_wall_ns);

/* Free the plan and everything it handed out, and set *plan_p to NULL. NULL is fine. */
void plan_destroy(plan_t **plan_p);

/* The actions, in the order to perform them. plan_action returns NULL past the end. */
size_t plan_action_count(const plan_t *plan);
const plan_action_t *plan_action(const plan_t *plan, size_t i);

/* The events. plan_event returns NULL past the end. */
size_t plan_event_count(const plan_t *plan);
const plan_event_t *plan_event(const plan_t *plan, size_t i);

/* Requeue after this many nanoseconds once the actions succeeded; 0 = done. */
int64_t plan_requeue_after_ns(const plan_t *plan);

/* > 0 when the computed status differs from the observed one but its write is held
 * (STATUS WRITE POLICY): for this many nanoseconds, which the requeue does not exceed. */
int64_t plan_status_held_ns(const plan_t *plan);

/* The computed status (whether or not it is written), owned by the plan; NULL when none
 * was computed (deletion, or an object that cannot be addressed). */
json_object *plan_status(const plan_t *plan);

/* The computed phase ("Pending", "Running", "Scaling", "Failed"), or NULL as plan_status. */
const char *plan_phase(const plan_t *plan);

/* Why nothing could be planned (decision 1), or NULL. */
const char *plan_error(const plan_t *plan);

/* The plan as JSON for `workerd --dry-run` and logs:
 *   {"actions":[{"kind","method","path","contentType","why","body"},...],
 *    (a PLAN_REDIS action has "pod","ip","argv" instead of a body)
 *    "events":[{"type","reason","message","action"},...],
 *    "status":{...}|null, "requeueAfterNs":N, "error":"..."|null}
 * A new object the caller puts, or NULL when out of memory. */
json_object *plan_to_json(const plan_t *plan);

/* The name of an action kind: "addFinalizer", "removeFinalizer", "cleanup", "create",
 * "apply", "replace", "delete", "updateStatus", "labelPod", "redis", "authRecord",
 * "annotatePod", "slotMove", "aclFile", "resizeClaim". */
const char *plan_action_kind_name(plan_action_kind_t kind);

/* BACKUP: "succeeded" or "failed" when a is a RedisBackup's status write that sets the
 * final phase Succeeded or Failed (plan_backup.h, FINISH), else NULL: what the executor
 * counts in rdc_backups_total once the API took the write (docs/backup.md "Metrics"). */
const char *plan_backup_result(const plan_action_t *a);

/* The managed-field comparison described above: 1 when desired is a subset of observed,
 * else 0. On 0, when where is not NULL, appends where they first differ
 * ("spec.template.spec.containers[redis].image: want \"redis:7.2\", have \"redis:7.0\"").
 * Either argument may be NULL (absent). */
int plan_json_subset(const json_object *desired, const json_object *observed, buf_t *where);

#endif
