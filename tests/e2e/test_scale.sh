#!/usr/bin/env bash
# End to end: scale-in (issue 34; docs/replication.md "Scaling in", workerd/plan_scale.h)
# on the pod runtime (real redis-server processes). One RedisCluster "cache" (Replication,
# size 5, downAfter 3s, storage.retention.whenScaled Delete), bench/ackwriter writing SET
# k_i + WAIT 1 100 to the pod labelled primary, the label sampler looking every 100 ms.
#   1. the primary moved to cache-4: `FAILOVER TO <cache-4> 6379` sent to the primary by
#      hand (the handover Redis does itself, which the operator records: docs/failover.md);
#   2. spec.size 5 -> 3: the primary role moves to cache-0..2 first (Event SwitchingOver
#      "scaling in to 3 pods", SwitchedOver), the StatefulSet stays at 5 replicas while
#      status.primary or status.switchoverFrom names cache-3 or cache-4 (a sampler of
#      both every 200 ms), then goes to 3; cache-3 and cache-4 gone, their claims deleted
#      (whenScaled Delete), cache-0..2's kept; 0 acknowledged writes lost (ackwriter
#      verify on the new primary); Progressing said ScalingIn;
#   3. spec.scaleDownPolicy Forbid: 3 -> 2 refused by the API server with the CEL rule's
#      message, through kubectl patch and kubectl scale (the Scale webhook leaves the
#      decision to the CEL rule); then back to Allow;
#   4. minReplicasToWrite 2 with size 2: refused ("must be less than spec.size");
#   5. storage.size 1Gi -> 2Gi (docs/knobs.md "Growing the volumes"): the claims at 2Gi,
#      request and capacity (tests/cluster/provisioner.sh is the resizer), the StatefulSet
#      recreated (new uid) with its template at 2Gi and owning the same pods, no pod
#      restarted (UIDs and restart counts), a key and every acknowledged write intact;
#   6. storage.size 2Gi -> 1Gi refused (CEL); a cluster of the class "fixed" (no volume
#      expansion) grown: the claim's patch refused by the API server, Degraded says so,
#      the claim and the StatefulSet untouched.
# Needs a control plane started with this branch's tests/cluster (the class "fixed" and
# the provisioner's resizing).
# Needs the process nodes (tests/cluster, RDC_CLUSTER_PROCESS_NODES=3, run.sh's default):
# without them it skips as the other Redis scripts do; with them, anything missing fails.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_replset.sh"

rs_require_process_nodes || exit 0

ns=rdc-e2e-scale-$$
e2e_setup scale "$ns"
cleanup_more() {
    fo_writer_stop "$work/w" >/dev/null
    fo_label_sampler_stop "$work/w" >/dev/null
    [ -s "$work/sampler.pid" ] && kill "$(cat "$work/sampler.pid")" 2>/dev/null
}
check "ackwriter built" fo_build

RS_SIZE=5 rs_start "  storage:
    size: 1Gi
    retention: {whenScaled: Delete}"
settled() { rs_settled "$1"; }
export -f settled rs_ip rs_primary rs_labelled
export ns

check "cache is Running" wait_until 400 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
check "settled: one primary, four replicas online" wait_until 120 settled 5
check "five claims bound" wait_until 60 sh -c "[ \$(kubectl -n $ns get pvc -o json | jq '[.items[] | select(.status.phase == \"Bound\")] | length') = 5 ]"

rs_writer_start sc_

# --- 1. the primary to cache-4 -----------------------------------------------------------
# FAILOVER gives up (and the old primary stays) when cache-4 has not caught up within the
# timeout, which a loaded machine sees while the writer writes: the reply is printed and the
# handover asked again, at most three times, each waiting for status.primary to follow.
moved_to_4() {
    local i old reply
    for i in 1 2 3; do
        old=$(rs_primary)
        [ "$old" = cache-4 ] && return 0
        reply=$(redis-cli -h "$(rs_ip "$old")" failover to "$(rs_ip cache-4)" 6379 timeout 10000 2>&1)
        echo "# attempt $i: FAILOVER TO cache-4 on $old: $reply" >>"$work/failover.txt"
        wait_output 40 cache-4 rs_primary && return 0
    done
    return 1
}
check "status.primary is cache-4" moved_to_4
[ -s "$work/failover.txt" ] && cat "$work/failover.txt"
check "settled with the primary at cache-4" wait_until 60 settled 5
uids0=$(kubectl -n "$ns" get pods -o json | jq -r '[.items[] | select(.metadata.name | test("^cache-[0-2]$")) | .metadata.uid] | sort | join(" ")')

# --- 2. 5 -> 3 ---------------------------------------------------------------------------
# The sampler: "<status.primary> <status.switchoverFrom> <the StatefulSet's spec.replicas>"
# every 200 ms, so that the order (primary moved, then replicas lowered) is seen.
(
    while :; do
        p=$(kubectl -n "$ns" get rdc cache -o jsonpath='{.status.primary} {.status.switchoverFrom}' 2>/dev/null)
        r=$(kubectl -n "$ns" get sts cache -o jsonpath='{.spec.replicas}' 2>/dev/null)
        echo "$p|$r"
        sleep 0.2
    done >"$work/order.txt"
) &
echo $! >"$work/sampler.pid"
sw0=$(rs_event_count SwitchingOver "scaling in to 3 pods")
t0=$(date +%s%3N)
echo "# --- 5 -> 3 with the primary at cache-4, $(fo_acked "$work/w") writes acknowledged so far"
check "kubectl patch size 3" kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"size":3}}'
check "Progressing ScalingIn" wait_until 30 sh -c "kubectl -n $ns get rdc cache -o json | jq -e '[.status.conditions[] | select(.type == \"Progressing\")][0].reason == \"ScalingIn\"'"
check "the primary moves to cache-0..2" wait_until 60 bash -c "rs_primary | grep -qx 'cache-[0-2]'"
check "the StatefulSet goes to 3 replicas" wait_output 60 3 kubectl -n "$ns" get sts cache -o jsonpath='{.spec.replicas}'
check "cache-3 and cache-4 gone" wait_until 120 sh -c "! kubectl -n $ns get pod cache-3 cache-4 -o name 2>/dev/null | grep -q ."
check "settled at 3" wait_until 90 settled 3
check "Running again" wait_until 120 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
kill "$(cat "$work/sampler.pid")" 2>/dev/null
rm -f "$work/sampler.pid"
# Never fewer than 5 replicas while the record named cache-3 or cache-4.
bad=$(awk -F'|' '$1 ~ /cache-[34]/ && $2 != "" && $2 < 5' "$work/order.txt" | head -3)
check "the StatefulSet stayed at 5 while the primary (or the switchover's old one) was cache-3/4 ($(wc -l <"$work/order.txt") samples${bad:+: $bad})" test -z "$bad"
check "Event SwitchingOver names the scale-in" test "$(rs_event_count SwitchingOver "scaling in to 3 pods")" -gt "$sw0"
check "the handover was by FAILOVER from cache-4" test "$(rs_event_count SwitchedOver "^switchover: cache-4 hands")" -ge 1
check "Event Scaled 5 -> 3" test "$(rs_event_count Scaled "from 5 to 3 replicas")" -ge 1
check "claims of cache-3 and cache-4 deleted (whenScaled Delete)" wait_until 60 sh -c "! kubectl -n $ns get pvc data-cache-3 data-cache-4 -o name 2>/dev/null | grep -q ."
check "claims of cache-0..2 kept" kubectl -n "$ns" get pvc data-cache-0 data-cache-1 data-cache-2
uids1=$(kubectl -n "$ns" get pods -o json | jq -r '[.items[] | select(.metadata.name | test("^cache-[0-2]$")) | .metadata.uid] | sort | join(" ")')
check "cache-0..2 not restarted by the scale-in (same pod UIDs)" test "$uids0" = "$uids1"
# (the writer's "ack" event marks the first write after a failure only: count the acks)
acked_more() { [ "$(fo_acked "$work/w")" -gt "$1" ]; }
check "writes acknowledged after it" wait_until 15 acked_more "$(fo_acked "$work/w")"
p=$(rs_primary)
out=$(fo_verify "$work/w" "$(rs_ip "$p"):6379"); rc=$?
echo "# scale-in: verify on $p: $out; longest write unavailability $(rs_unavailability "$work/w/events.jsonl" "$t0") ms"
check "0 acknowledged writes lost ($out)" test "$rc" = 0
rs_writer_stop

# --- 3. spec.scaleDownPolicy Forbid --------------------------------------------------------
check "scaleDownPolicy Forbid accepted" kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"scaleDownPolicy":"Forbid"}}'
refused "Forbid: 3 -> 2 refused with the CEL rule's message" "may not decrease while spec.scaleDownPolicy is Forbid" \
    kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"size":2}}'
refused "Forbid: kubectl scale --replicas=2 refused" "may not decrease while spec.scaleDownPolicy is Forbid" \
    kubectl -n "$ns" scale rdc cache --replicas=2
check "Forbid: the size is still 3" test "$(kubectl -n "$ns" get rdc cache -o jsonpath='{.spec.size}')" = 3
check "scaleDownPolicy Allow" kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"scaleDownPolicy":"Allow"}}'

# --- 4. minReplicasToWrite against the new size -------------------------------------------
refused "minReplicasToWrite 2 with size 2 refused" "must be less than spec.size" \
    kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"size":2,"failover":{"minReplicasToWrite":2}}}'

# --- 5. storage.size 1Gi -> 2Gi -----------------------------------------------------------
# restarts: "<pod> <uid> <restartCount>" of cache-0..2, sorted
restarts() {
    kubectl -n "$ns" get pods -o json | jq -r '.items[] | select(.metadata.name | test("^cache-[0-2]$"))
        | "\(.metadata.name) \(.metadata.uid) \([.status.containerStatuses[]? | .restartCount] | add // 0)"' | sort
}
# claims_at SIZE: data-cache-0..2 ask SIZE and report it as their capacity
claims_at() {
    kubectl -n "$ns" get pvc data-cache-0 data-cache-1 data-cache-2 -o json | jq -e --arg s "$1" '
        .items | length == 3 and all(.spec.resources.requests.storage == $s and .status.capacity.storage == $s)'
}
export -f claims_at
p=$(rs_primary)
redis-cli -h "$(rs_ip "$p")" set volume-key kept >/dev/null
r0=$(restarts); sts0=$(kubectl -n "$ns" get sts cache -o jsonpath='{.metadata.uid}')
echo "# --- storage 1Gi -> 2Gi (pods: $(echo "$r0" | tr '\n' ';'))"
check "kubectl patch storage.size 2Gi" kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"storage":{"size":"2Gi"}}}'
check "the claims at 2Gi (request and capacity: the provisioner resizes them)" wait_until 120 claims_at 2Gi
check "the StatefulSet recreated (a new uid) with its claim template at 2Gi" wait_until 60 sh -c "
    u=\$(kubectl -n $ns get sts cache -o jsonpath='{.metadata.uid}'); [ -n \"\$u\" ] && [ \"\$u\" != $sts0 ] &&
    [ \"\$(kubectl -n $ns get sts cache -o jsonpath='{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}')\" = 2Gi ]"
check "Event ResizingVolumes" test "$(rs_events ResizingVolumes)" -ge 1
check "Running, Progressing no longer VolumeResizing" wait_until 120 sh -c "kubectl -n $ns get rdc cache -o json | jq -e '
    .status.phase == \"Running\" and ([.status.conditions[] | select(.type == \"Progressing\")][0].reason != \"VolumeResizing\")'"
r1=$(restarts)
check "no pod restarted or replaced (same UIDs and restart counts)" test "$r0" = "$r1"
check "the pods are the new StatefulSet's (adopted)" sh -c "[ \$(kubectl -n $ns get pods -o json | jq --arg u \"\$(kubectl -n $ns get sts cache -o jsonpath='{.metadata.uid}')\" '[.items[] | select(.metadata.name | test(\"^cache-[0-2]\$\")) | select(.metadata.ownerReferences[0].uid == \$u)] | length') = 3 ]"
p=$(rs_primary)
check "the key is intact" test "$(redis-cli -h "$(rs_ip "$p")" get volume-key)" = kept
out=$(fo_verify "$work/w" "$(rs_ip "$p"):6379"); rc=$?
check "every acknowledged write still there after the resize ($out)" test "$rc" = 0
check "settled at 3 after the resize" wait_until 60 settled 3

# --- 6. refusals ---------------------------------------------------------------------------
refused "storage.size may not shrink (2Gi -> 1Gi)" "may not shrink" \
    kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"storage":{"size":"1Gi"}}}'
# A class without volume expansion (tests/cluster: "fixed"): the webhook cannot read
# StorageClasses (webhookd has no API client: docs/knobs.md), so the API server refuses
# the operator's patch of the claim (PersistentVolumeClaimResize), which the status says;
# the StatefulSet is not touched.
kubectl apply -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: fixedc, namespace: $ns}
spec:
  size: 1
  image: redis
  version: "7.2"
  mode: Standalone
  storage: {size: 1Gi, storageClass: fixed}
YAML
check "fixedc (class fixed) is Running" wait_until 300 sh -c "kubectl -n $ns get rdc fixedc -o jsonpath='{.status.phase}' | grep -qx Running"
fsts=$(kubectl -n "$ns" get sts fixedc -o jsonpath='{.metadata.uid}')
check "fixedc: kubectl patch storage.size 2Gi (accepted by the API)" kubectl -n "$ns" patch rdc fixedc --type merge -p '{"spec":{"storage":{"size":"2Gi"}}}'
check "fixedc: refused, the status says why (Degraded, the API's message on the claim)" wait_until 60 sh -c "kubectl -n $ns get rdc fixedc -o json | jq -e '
    [.status.conditions[] | select(.type == \"Degraded\")][0] | .status == \"True\" and (.message | test(\"PersistentVolumeClaim.*data-fixedc-0\")) and (.message | test(\"resize\"))'"
check "fixedc: the claim still at 1Gi" test "$(kubectl -n "$ns" get pvc data-fixedc-0 -o jsonpath='{.spec.resources.requests.storage}')" = 1Gi
check "fixedc: the StatefulSet not deleted" test "$(kubectl -n "$ns" get sts fixedc -o jsonpath='{.metadata.uid}')" = "$fsts"
kubectl -n "$ns" delete rdc fixedc --wait=false >/dev/null 2>&1

summary
