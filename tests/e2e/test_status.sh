#!/usr/bin/env bash
# End to end: drift that heals and a status that tells the truth (issue 19, items 1-4).
#
#  1. kubectl patch of the Service's port to 7000 under the name "redis" (every forced
#     apply then fails with 422 Duplicate value): the operator takes the Service back
#     within one resync, says so in an Event, and stops writing once it is healed.
#  2. A ResourceQuota of 0 pods: Degraded=True FailedCreate quoting the quota.
#  3. A StorageClass that does not exist: the StatefulSet is created all the same (static
#     volumes of that class name may bind), Degraded=True StorageClassNotFound names it;
#     once the class exists (with no provisioner behind it) the claims stay unbound and
#     the condition says FailedScheduling with the scheduler's words. (test_supervisor
#     runs on static volumes of a class that has no object: those clusters reach Running.)
#  4. A namespace enforcing Pod Security "restricted": the pods are created (Running);
#     with the template made non-compliant on purpose (annotation
#     cache.example.com/test-fault: pod-security, honoured only by `make fault` builds,
#     which is why this script runs the operator from build-fault/) the reason shows in a
#     condition.
#  5. A scale-up reports Scaling until Running, never Pending between two pods.
#  6. A 409 Conflict on the finalizer PATCH, provoked by a real concurrent update (the
#     fault build's test-fault: finalizer-conflict), requeued and retried.
#  Not here: an image that cannot be pulled, or a crash loop. kwok makes every pod Ready
#  (no kubelet pulls or runs anything), so neither can be observed on this cluster; the
#  unit tables of test_plan.c cover them.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

FBIN=${RDC_FAULT_BIN:-$TOP/build-fault/bin}
ns=rdc-e2e-st-$$
qns=rdc-e2e-stq-$$
pns=rdc-e2e-stp-$$
sc=rdc-e2e-missing-$$
cleanup_more() { kubectl delete storageclass "$sc" --wait=false >/dev/null 2>&1; }

check "the fault build exists ($FBIN/workerd)" test -x "$FBIN/workerd"
e2e_setup st "$ns" "$qns" "$pns"
kubectl label namespace "$pns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
kubectl -n "$qns" create quota no-pods --hard=pods=0 >/dev/null
wait_until 20 sh -c "kubectl -n $qns get quota no-pods -o jsonpath='{.status.hard}' | grep -q pods"

sync=20
sup_start "$FBIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --sync-period ${sync}s
check "operator ready (/readyz)" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"

# Standalone: these pods are kwok's, with no Redis behind them; in Replication the
# observer would find the primary unreachable and the status would say NoFailoverCandidate
# (docs/failover.md), which is not what these checks are about.
rdc() { # namespace name size [storageClass] [annotation value]
    {
        printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata:\n  name: %s\n  namespace: %s\n' "$2" "$1"
        [ -n "${5:-}" ] && printf '  annotations: {cache.example.com/test-fault: %s}\n' "$5"
        printf 'spec:\n  size: %s\n  image: redis\n  version: "7.2"\n  mode: Standalone\n' "$3"
        [ -n "${4:-}" ] && printf '  storage: {storageClass: %s}\n' "$4"
    } | kubectl apply -f - >/dev/null
}
phase() { kubectl -n "$1" get rdc "$2" -o jsonpath='{.status.phase}' 2>/dev/null; }
cond() { # namespace name type field
    kubectl -n "$1" get rdc "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].$4}" 2>/dev/null
}
degraded_is() { # namespace name reason message-part
    test "$(cond "$1" "$2" Degraded status)/$(cond "$1" "$2" Degraded reason)" = "True/$3" &&
        cond "$1" "$2" Degraded message | grep -qF -- "$4"
}

rdc "$ns" drift 1
rdc "$ns" scale 1
rdc "$qns" quota 1
rdc "$ns" nosc 1 "$sc"
rdc "$pns" pss 1
rdc "$pns" pssbad 1 "" pod-security

# ---- 4. Pod Security "restricted" --------------------------------------------------------
check "pss: the pod is created in a restricted namespace and the cluster is Running" \
    wait_until 90 sh -c "test \"\$(kubectl -n $pns get rdc pss -o jsonpath='{.status.phase}')\" = Running"
check "pss: its pod exists" kubectl -n "$pns" get pod pss-0
check "pssbad: Degraded=True FailedCreate quoting Pod Security" \
    wait_until 90 degraded_is "$pns" pssbad FailedCreate 'violates PodSecurity "restricted:latest"'
check "pssbad: Ready=False with the same reason" test "$(cond "$pns" pssbad Ready reason)" = FailedCreate
check "pssbad: no pod exists" sh -c "! kubectl -n $pns get pod pssbad-0 >/dev/null 2>&1"

# ---- 2. Quota ----------------------------------------------------------------------------
check "quota: Degraded=True FailedCreate naming the quota" \
    wait_until 90 degraded_is "$qns" quota FailedCreate 'exceeded quota: no-pods'
check "quota: phase Pending" test "$(phase "$qns" quota)" = Pending
kubectl -n "$qns" delete quota no-pods >/dev/null
check "quota gone: Running, Degraded=False" \
    wait_until 120 sh -c "test \"\$(kubectl -n $qns get rdc quota -o jsonpath='{.status.phase}/{.status.conditions[?(@.type==\"Degraded\")].status}')\" = Running/False"

# ---- 3. A missing StorageClass -----------------------------------------------------------
check "nosc: Degraded=True StorageClassNotFound naming the class" \
    wait_until 60 degraded_is "$ns" nosc StorageClassNotFound "StorageClass \"$sc\""
# Created all the same: a claim of a class with no StorageClass object still binds to a
# PersistentVolume made with that storageClassName (static provisioning).
check "nosc: the StatefulSet is created all the same" kubectl -n "$ns" get statefulset nosc
check "nosc: the message says how to get out" \
    sh -c "kubectl -n $ns get rdc nosc -o jsonpath='{.status.conditions[?(@.type==\"Degraded\")].message}' | grep -q 'bind only to PersistentVolumes'"
# The class appears, but nothing provisions it: the claim stays unbound, and says so.
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc}
provisioner: example.com/nothing-provisions-this
volumeBindingMode: Immediate
YAML
check "nosc: Degraded=True FailedScheduling quoting the scheduler on the unbound claim" \
    wait_until 90 degraded_is "$ns" nosc FailedScheduling "unbound"

# ---- 5. Scale-up: Scaling until Running ----------------------------------------------------
check "scale: Running at size 1" wait_until 90 sh -c "test \"\$(kubectl -n $ns get rdc scale -o jsonpath='{.status.phase}')\" = Running"
kubectl -n "$ns" get rdc scale -w -o jsonpath='{.status.phase}{"\n"}' >"$work/phases" 2>/dev/null &
watch_pid=$!
sleep 1
kubectl -n "$ns" patch rdc scale --type=merge -p '{"spec":{"size":3}}' >/dev/null
check "scale: Running at size 3" wait_until 120 sh -c "test \"\$(kubectl -n $ns get rdc scale -o jsonpath='{.status.phase}/{.status.readyReplicas}')\" = Running/3"
sleep 1
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null
# The phases after the first Scaling, with repeats folded: exactly "Scaling Running".
seen=$(awk 'NF' "$work/phases" | uniq | awk '/^Scaling$/ { s = 1 } s' | tr '\n' ' ')
check "scale: the watch saw Scaling then Running, nothing between ($seen)" test "$seen" = "Scaling Running "

# ---- 1. The Service port patch heals --------------------------------------------------------
check "drift: Running" wait_until 90 sh -c "test \"\$(kubectl -n $ns get rdc drift -o jsonpath='{.status.phase}')\" = Running"
ports() { kubectl -n "$ns" get svc drift -o jsonpath='{range .spec.ports[*]}{.name}:{.port}{" "}{end}'; }
check "drift: the Service has port 6379 only" test "$(ports)" = "redis:6379 "
# (What the patch answers is the object it made: the operator may heal it before any read.)
patched=$(kubectl -n "$ns" patch svc drift --type=merge -o jsonpath='{.spec.ports[*].port}' \
    -p '{"spec":{"ports":[{"name":"redis","port":7000,"targetPort":6379,"protocol":"TCP"}]}}')
check "drift: the patch took (port 7000, answer: $patched)" test "$patched" = 7000
t0=$SECONDS
check "drift: the Service is healed within one resync ($sync s)" wait_until $((sync + 5)) sh -c "test \"\$(kubectl -n $ns get svc drift -o jsonpath='{range .spec.ports[*]}{.name}:{.port}{\" \"}{end}')\" = 'redis:6379 '"
echo "# healed after $((SECONDS - t0)) s"
check "drift: an Event DriftRepaired or Recreated names the Service" \
    sh -c "kubectl -n $ns get events --field-selector involvedObject.name=drift -o json | jq -e '[.items[] | select(.reason==\"DriftRepaired\" or .reason==\"Recreated\") | select(.message | contains(\"Service $ns/drift\"))] | length >= 1' >/dev/null"
check "drift: still Running, Degraded=False" test "$(phase "$ns" drift)/$(cond "$ns" drift Degraded status)" = Running/False

# No endless retry: once healed, a resync writes nothing and no new Event appears.
sleep 3
events_total() { kubectl get events -A -o json | jq '[.items[] | select(.source.component=="rediscluster-operator") | (.count // 1)] | add // 0'; }
e0=$(events_total)
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
sleep $((sync + 8))
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
e1=$(events_total)
check "after healing, a resync of every cluster here makes zero write requests ($w0 -> $w1)" test "$w1" = "$w0"
check "and records no Event ($e0 -> $e1)" test "$e1" = "$e0"

# ---- 6. A conflict on the finalizer PATCH (issue 37) ---------------------------------------
# The fault build's cache.example.com/test-fault: finalizer-conflict makes a real concurrent
# update of the object (another write, an annotation) just before the worker's first
# finalizer PATCH of it: the PATCH carries the resourceVersion it read, the API server
# answers 409 Conflict, the reconcile requeues at once, and the retry adds the finalizer
# without undoing the other write.
kubectl apply -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata:
  name: conflict
  namespace: $ns
  annotations: {cache.example.com/test-fault: finalizer-conflict}
spec: {mode: Standalone, size: 1, image: redis, version: "7.2", storage: {size: 1Gi}}
YAML
conflict_seen() { grep '"name":"conflict"' "$work/operator.log" | grep '"action":"addFinalizer"' | grep -q '"result":"conflict"'; }
check "conflict: the concurrent update landed first (test-bumped annotation)" \
    wait_until 30 sh -c "kubectl -n $ns get rdc conflict -o jsonpath='{.metadata.annotations.cache\\.example\\.com/test-bumped}' | grep -qx 1"
check "conflict: the API server answered the finalizer PATCH 409 Conflict (operator log)" wait_until 30 conflict_seen
check "conflict: retried, the finalizer is on" \
    wait_until 30 sh -c "kubectl -n $ns get rdc conflict -o jsonpath='{.metadata.finalizers}' | grep -q cache.example.com/finalizer"
check "conflict: the other write was kept (the retry re-read, nothing overwritten)" \
    test "$(kubectl -n "$ns" get rdc conflict -o jsonpath='{.metadata.annotations.cache\.example\.com/test-bumped}')" = 1
check "conflict: the cluster goes on to Running" wait_until 90 sh -c "test \"\$(kubectl -n $ns get rdc conflict -o jsonpath='{.status.phase}')\" = Running"

if [ "$failed" -gt 0 ]; then echo "--- operator log (last 40 lines)"; tail -40 "$work/operator.log"; fi
summary
