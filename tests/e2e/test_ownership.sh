#!/usr/bin/env bash
# End to end: the operator never takes over an object it did not create (invariant 9),
# and a write the API refuses shows in the status once (issue 19's rule).
#
# A user's unlabelled ConfigMap (redis.conf and another key), a ConfigMap controlled by
# another object, a ClusterIP Service and a StatefulSet with another selector, each named
# like a new RedisCluster: the object is left exactly as it was (same resourceVersion, same
# data, no owner reference), before and after the RedisCluster is deleted; the RedisCluster
# says Degraded=True OwnerConflict naming it, with one Warning event; once the user deletes
# the object, the operator creates its own and converges to Running. Then a quota that
# refuses the StatefulSet: Degraded=True with the API's reason, written once (no further
# status write or Event while the write is retried), and Running once the quota goes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-own-$$
qns=rdc-e2e-ownq-$$
e2e_setup own "$ns" "$qns"

# ---- The user's objects, there before any RedisCluster ---------------------------------
# For each kind two of them: "keep-*" stays while its RedisCluster is deleted, "yield-*"
# is deleted by the user so the operator can make its own.
user_cm() { # name [ownerReferences JSON]
    local refs=${2:-}
    kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1
  ${refs:+ownerReferences: $refs}
data:
  redis.conf: |
    maxmemory 1mb
    # the user's own configuration
  app.properties: "feature.x=on"
YAML
}
user_svc() {
    kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: $1}
spec:
  type: ClusterIP
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
YAML
}
user_sts() { # replicas 0: a StatefulSet of the user's, with its own selector, and no pods
    kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $1}
spec:
  replicas: 0
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
YAML
}
user_cm keep-cm
user_cm yield-cm
user_svc keep-svc
user_svc yield-svc
user_sts keep-sts
user_sts yield-sts
# A ConfigMap controlled by another object (another ConfigMap of the user's, which stays).
kubectl -n "$ns" create configmap anchor --from-literal=k=v >/dev/null
anchor_uid=$(kubectl -n "$ns" get configmap anchor -o jsonpath='{.metadata.uid}')
user_cm ctl-cm "[{apiVersion: v1, kind: ConfigMap, name: anchor, uid: $anchor_uid, controller: true}]"

objects="configmap/keep-cm configmap/yield-cm configmap/ctl-cm service/keep-svc service/yield-svc statefulset/keep-sts statefulset/yield-sts"
# What must not change: resourceVersion (any write changes it), owner references, labels,
# data and spec, byte for byte.
snapshot() { kubectl -n "$ns" get "$1" -o json | jq -cS '{rv: .metadata.resourceVersion, uid: .metadata.uid, owners: .metadata.ownerReferences, labels: .metadata.labels, data: .data, spec: .spec}'; }
for o in $objects; do
    snapshot "$o" >"$work/${o/\//_}.before"
done
check "the user's objects exist before the RedisClusters" sh -c "test \$(cat $work/*.before | grep -c '\"rv\":\"[0-9]') = 7"
check "the user's ConfigMap has both keys" sh -c "jq -e '.data[\"redis.conf\"] and .data[\"app.properties\"]' $work/configmap_keep-cm.before"

sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --sync-period 15s
check "operator ready (/readyz)" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"

rdc() { # namespace name
    # Standalone: kwok's pods have no Redis behind them (test_status.sh says why).
    printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: %s, namespace: %s}\nspec: {size: 1, image: redis, version: "7.2", mode: Standalone}\n' "$2" "$1" |
        kubectl apply -f - >/dev/null
}
for n in keep-cm yield-cm ctl-cm keep-svc yield-svc keep-sts yield-sts; do rdc "$ns" "$n"; done

cond() { # name type field
    kubectl -n "$ns" get rdc "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null
}
degraded_is() { # name reason message-part
    test "$(cond "$1" Degraded status)/$(cond "$1" Degraded reason)" = "True/$2" &&
        cond "$1" Degraded message | grep -qF -- "$3"
}
events_of() { # namespace name reason: how many Events, and their summed count
    kubectl -n "$1" get events --field-selector "involvedObject.name=$2,reason=$3,type=Warning" -o json |
        jq -r '[.items | length, (map(.count // 1) | add // 0)] | join("/")'
}

# ---- OwnerConflict, reported -------------------------------------------------------------
for pair in keep-cm:ConfigMap yield-cm:ConfigMap keep-svc:Service yield-svc:Service keep-sts:StatefulSet yield-sts:StatefulSet; do
    n=${pair%%:*} kind=${pair#*:}
    check "$n: Degraded=True OwnerConflict naming $kind $ns/$n, no controller reference" \
        wait_until 60 degraded_is "$n" OwnerConflict "$kind $ns/$n exists and was not created by this RedisCluster (it has no controller owner reference)"
done
check "ctl-cm: Degraded=True OwnerConflict naming the controlling ConfigMap" \
    wait_until 60 degraded_is ctl-cm OwnerConflict "ConfigMap $ns/ctl-cm is controlled by another ConfigMap \"anchor\""
check "keep-cm: a Warning event OwnerConflict naming the ConfigMap" \
    sh -c "kubectl -n $ns get events --field-selector involvedObject.name=keep-cm,reason=OwnerConflict,type=Warning -o jsonpath='{.items[*].message}' | grep -qF 'ConfigMap $ns/keep-cm exists'"
check "keep-svc: a Warning event OwnerConflict" test "$(events_of "$ns" keep-svc OwnerConflict)" = 1/1
check "keep-sts: a Warning event OwnerConflict" test "$(events_of "$ns" keep-sts OwnerConflict)" = 1/1
# The operator's own children of those clusters are made; the StatefulSet waits for a
# ConfigMap of the operator's own (pods would mount the user's redis.conf).
check "keep-svc: the operator created its ConfigMap and StatefulSet" \
    wait_until 30 kubectl -n "$ns" get configmap/keep-svc statefulset/keep-svc
check "keep-cm: no StatefulSet while the ConfigMap is not the operator's" \
    sh -c "! kubectl -n $ns get statefulset/keep-cm >/dev/null 2>&1"
check "keep-cm: phase Pending" test "$(kubectl -n "$ns" get rdc keep-cm -o jsonpath='{.status.phase}')" = Pending
check "keep-sts: the user's StatefulSet does not count as ready replicas" \
    test "$(kubectl -n "$ns" get rdc keep-sts -o jsonpath='{.status.readyReplicas}')" = 0

# Reconciles keep coming (a requeue every 10 s while the conflict stands, and a resync):
# they must neither write to the user's objects nor record the Event again.
sleep 22
rv_keep_cm=$(kubectl -n "$ns" get rdc keep-cm -o jsonpath='{.metadata.resourceVersion}')
for o in $objects; do
    snapshot "$o" >"$work/${o/\//_}.during"
    check "$o untouched while its RedisCluster exists (resourceVersion, owners, labels, data, spec)" \
        cmp -s "$work/${o/\//_}.before" "$work/${o/\//_}.during"
done
# (Each jq reads a file kubectl wrote first: no object, no pass.)
check "no operator field manager on the user's ConfigMap" \
    sh -c "kubectl -n $ns get configmap keep-cm -o json --show-managed-fields >$work/mf.json && jq -e '[.metadata.managedFields[]? | select(.manager==\"rediscluster-operator\")] | length == 0' $work/mf.json >/dev/null"
check "keep-cm: still one OwnerConflict Event, count 1, after the requeues" test "$(events_of "$ns" keep-cm OwnerConflict)" = 1/1
check "ctl-cm: one OwnerConflict Event, count 1" test "$(events_of "$ns" ctl-cm OwnerConflict)" = 1/1
sleep 12
check "keep-cm: its status is not rewritten by the requeues" \
    test "$(kubectl -n "$ns" get rdc keep-cm -o jsonpath='{.metadata.resourceVersion}')" = "$rv_keep_cm"

# ---- The RedisClusters go; the user's objects stay -----------------------------------------
kubectl -n "$ns" delete rdc keep-cm ctl-cm keep-svc keep-sts --wait=true --timeout=60s >/dev/null 2>&1
check "keep-* RedisClusters deleted" sh -c "! kubectl -n $ns get rdc keep-cm ctl-cm keep-svc keep-sts -o name 2>/dev/null | grep -q ."
# The garbage collector removes what the operator did own: once that happened, it had
# its chance at the user's objects too.
check "the operator's own children of keep-svc are garbage-collected" \
    wait_until 60 sh -c "! kubectl -n $ns get configmap/keep-svc statefulset/keep-svc -o name 2>/dev/null | grep -q ."
sleep 3
for o in configmap/keep-cm configmap/ctl-cm service/keep-svc statefulset/keep-sts; do
    snapshot "$o" >"$work/${o/\//_}.after"
    check "$o intact after its RedisCluster is deleted" cmp -s "$work/${o/\//_}.before" "$work/${o/\//_}.after"
done
check "the user's ConfigMap keeps both keys" \
    sh -c "kubectl -n $ns get configmap keep-cm -o json >$work/cm.json && jq -e '.data[\"app.properties\"] == \"feature.x=on\" and (.data[\"redis.conf\"] | startswith(\"maxmemory 1mb\"))' $work/cm.json >/dev/null"

# ---- The user deletes the object: the operator makes its own and converges ----------------
kubectl -n "$ns" delete configmap/yield-cm service/yield-svc statefulset/yield-sts --wait=true --timeout=60s >/dev/null
# A user's object has no controller reference, so its deletion enqueues nothing: the
# operator sees it gone at the conflict's next requeue (within 10 s). yield-svc and
# yield-sts are Running already before (the conflict does not stop the StatefulSet of
# yield-svc), so "Running" alone passes at once: wait for the new object and the
# condition too.
for pair in yield-cm:configmap yield-svc:service yield-sts:statefulset; do
    n=${pair%%:*} res=${pair#*:}
    check "$n: the new $res is the operator's (controller reference)" \
        wait_output 90 RedisCluster/true kubectl -n "$ns" get "$res/$n" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].controller}'
    check "$n: Running after the user's $res is gone" \
        wait_until 90 sh -c "test \"\$(kubectl -n $ns get rdc $n -o jsonpath='{.status.phase}')\" = Running"
    # The operator does not watch the user's (unlabelled) object: it learns of the deletion
    # at the next requeue while the conflict stood (every 10 s); the wait above covers it.
    check "$n: Degraded=False" wait_output 30 False cond "$n" Degraded status
done
check "yield-svc: the operator's Service is headless" \
    test "$(kubectl -n "$ns" get service yield-svc -o jsonpath='{.spec.clusterIP}')" = None

# ---- A write the API refuses: in the status, once -----------------------------------------
kubectl -n "$qns" create quota no-statefulsets --hard=count/statefulsets.apps=0 >/dev/null
# Once the quota controller has counted, the API's message stays the same on every retry.
wait_until 20 sh -c "kubectl -n $qns get quota no-statefulsets -o jsonpath='{.status.hard}' | grep -q statefulsets"
rdc "$qns" quota
qcond() { kubectl -n "$qns" get rdc quota -o jsonpath="{.status.conditions[?(@.type==\"Degraded\")].$1}" 2>/dev/null; }
check "quota: Degraded=True with the API's reason Forbidden" \
    wait_until 60 sh -c "test \"\$(kubectl -n $qns get rdc quota -o jsonpath='{.status.conditions[?(@.type==\"Degraded\")].status}/{.status.conditions[?(@.type==\"Degraded\")].reason}')\" = True/Forbidden"
check "quota: the message names the StatefulSet and carries the API's message" \
    sh -c "kubectl -n $qns get rdc quota -o jsonpath='{.status.conditions[?(@.type==\"Degraded\")].message}' | grep -q 'cannot create StatefulSet $qns/quota: 403 Forbidden: .*quota'"
check "quota: the ConfigMap and Service were made before the refused write" kubectl -n "$qns" get configmap/quota service/quota
sleep 3
rv_quota=$(kubectl -n "$qns" get rdc quota -o jsonpath='{.metadata.resourceVersion}')
ev_quota=$(events_of "$qns" quota Forbidden)
check "quota: one Warning event Forbidden" test "$ev_quota" = 1/1
# Retried with backoff all the while (5 ms doubling): no status write, no new Event.
sleep 15
check "quota: retries went on (reconcile errors counted)" \
    sh -c "curl -s http://127.0.0.1:$metrics/metrics | awk '/^controller_runtime_reconcile_errors_total\\{/ { s += \$NF } END { exit !(s >= 5) }'"
check "quota: the retries wrote no status (resourceVersion $rv_quota kept)" \
    test "$(kubectl -n "$qns" get rdc quota -o jsonpath='{.metadata.resourceVersion}')" = "$rv_quota"
check "quota: and recorded no new Event" test "$(events_of "$qns" quota Forbidden)" = "$ev_quota"
kubectl -n "$qns" delete quota no-statefulsets >/dev/null
check "quota gone: Running, Degraded=False" \
    wait_until 120 sh -c "test \"\$(kubectl -n $qns get rdc quota -o jsonpath='{.status.phase}/{.status.conditions[?(@.type==\"Degraded\")].status}')\" = Running/False"

if [ "$failed" -gt 0 ]; then echo "--- operator log (last 40 lines)"; tail -40 "$work/operator.log"; fi
summary
