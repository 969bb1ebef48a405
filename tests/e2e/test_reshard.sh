#!/usr/bin/env bash
# End to end: resharding a Cluster-mode RedisCluster under load (issue 30,
# docs/cluster-mode.md "Resharding") on the pod runtime (real redis-server processes).
# One RedisCluster "cache" (3 shards x 1 replica, downAfter 2s), the operator with 2
# workers, 20,000 keys filled, and a writer (bench/clusterwriter: cluster-aware,
# SET + WAIT 1, following -MOVED and -ASK) running throughout:
#   1. shards 3 -> 5: the new shards' pods met, their replicas attached, slots moved
#      until each shard holds 3276 or 3277; the operator SIGKILLed in the middle of the
#      moves and started again: it finishes; redis-cli --cluster check clean (every slot
#      covered, none open) and every shard's share even; status.cluster.slotsMoved and
#      the ClusterReshard Events say what moved;
#   2. shards 5 -> 3: the leaving shards' slots moved back, their nodes forgotten on every
#      node, their StatefulSets deleted; redis-cli --cluster check clean again;
#   after each: every acknowledged write reads back with its value, and so do the 20,000
#   keys; the longest time the writer's SETs were refused is printed and bounded
#   (RESHARD_GAP_BOUND_MS, docs/cluster-mode.md).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_clustermode.sh"

skip_without_process_nodes

ns=rdc-e2e-rs-$$
cm_setup reshard "$ns"
RESHARD_GAP_BOUND_MS=${RESHARD_GAP_BOUND_MS:-10000}

# healthy N: Running, N shards each with its primary and one linked replica, nothing to move
healthy() {
    status | jq -e --argjson n "$1" '.status.phase == "Running" and .status.cluster.state == "ok"
        and .status.cluster.slotsAssigned == 16384 and (.status.cluster.slotsToMove // 0) == 0
        and (.status.cluster.shards | length) == $n
        and ([.status.cluster.shards[] | select(.primary != "" and ([.replicas[]? | select(.linkUp)] | length) == 1)] | length) == $n' >/dev/null
}
# shares N: every shard's slots, counted from status, within one of 16384 / N
shares() {
    status | jq -e --argjson n "$1" '[.status.cluster.shards[].slots | split(",") | map(split("-") | map(tonumber) | if length == 2 then .[1] - .[0] + 1 else 1 end) | add]
        | (min >= (16384 / $n | floor)) and (max <= (16384 / $n | floor) + 1) and (add == 16384)' >/dev/null
}
export -f pods ip_of status healthy shares cluster_check
export ns

# verify_all LABEL: the acknowledged writes (verify_acks), then the 20,000 keys filled
verify_all() {
    local out
    verify_acks "$1"
    out=$("$CW" verify --seeds "$(seeds)" --count 20000 --prefix fill: --value-bytes 64 2>&1)
    check "$1: the 20,000 keys filled before are there ($out)" bash -c "echo '$out' | grep -q 'missing=0 wrong=0'"
}
patch_shards() { kubectl -n "$ns" patch rdc cache --type=merge -p "{\"spec\":{\"size\":$(($1 * 2)),\"cluster\":{\"shards\":$1}}}"; }

# ---- the cluster ------------------------------------------------------------------------------
rc_apply_cluster cache "$ns" 3 2s
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "3 shards healthy" wait_until 300 healthy 3
out=$("$CW" fill --seeds "$(seeds)" --count 20000 --prefix fill: --value-bytes 64 2>&1)
echo "# fill: $out"
check "20,000 keys filled" bash -c "echo '$out' | grep -q 'filled=20000'"

# ---- 1. 3 -> 5, the operator killed in the middle ----------------------------------------------
writer_start out:
check "shards 3 -> 5 taken" patch_shards 5
check "the new shards' StatefulSets" wait_until 60 bash -c "kubectl -n $ns get sts cache-shard3 cache-shard4 >/dev/null 2>&1"
check "slots start moving" wait_until 300 grep -q '"msg":"slots moved"' "$work/operator.log"
kill -KILL -- "-$sup_pid" 2>/dev/null || kill -KILL "$sup_pid"
sleep 1
echo "# operator SIGKILLed after $(grep -c '"msg":"slots moved"' "$work/operator.log") slot moves; slotsToMove $(status | jq '.status.cluster.slotsToMove')"
sup_start "$BIN" "$work/rt2" "$work/operator2.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "5 shards healthy, nothing left to move" wait_until 600 healthy 5
check "each of the 5 shards holds 3276 or 3277 slots" shares 5
check "redis-cli --cluster check: all slots covered, none open" cluster_check "$(pods | head -1)"
moved=$(status | jq '.status.cluster.slotsMoved // 0')
check "status.cluster.slotsMoved says slots moved ($moved)" test "$moved" -gt 0
check "ClusterReshard Events" bash -c "kubectl -n $ns get events --field-selector reason=ClusterReshard -o name | grep -q ."
echo "# writer: $(writer_stop)"
verify_all "3 -> 5"
gap=$(accept_gap_ms)
echo "# 3 -> 5: longest time between accepted SETs $gap ms"
check "3 -> 5: the writer saw its pauses (longest_gap_ms)" test "$gap" -gt 0
check "3 -> 5: no write waited longer than ${RESHARD_GAP_BOUND_MS} ms ($gap ms)" test "$gap" -le "$RESHARD_GAP_BOUND_MS"

# ---- 2. 5 -> 3 ---------------------------------------------------------------------------------
rm -f "$work/acks.txt" "$work/events.jsonl"
writer_start in:
check "shards 5 -> 3 taken (spec.size may shrink in Cluster mode)" patch_shards 3
check "the leaving shards' StatefulSets are deleted" wait_until 600 bash -c "! kubectl -n $ns get sts cache-shard3 >/dev/null 2>&1 && ! kubectl -n $ns get sts cache-shard4 >/dev/null 2>&1"
check "3 shards healthy" wait_until 300 healthy 3
check "each of the 3 shards holds 5461 or 5462 slots" shares 3
check "6 pods left" wait_until 120 bash -c "test \$(pods | wc -l) = 6"
check "every node knows 6 nodes" wait_until 60 bash -c "for p in \$(pods); do test \$(redis-cli -h \$(ip_of \$p) cluster nodes | wc -l) = 6 || exit 1; done"
check "redis-cli --cluster check: all slots covered, none open" cluster_check "$(pods | head -1)"
echo "# writer: $(writer_stop)"
verify_all "5 -> 3"
gap=$(accept_gap_ms)
echo "# 5 -> 3: longest time between accepted SETs $gap ms"
check "5 -> 3: the writer saw its pauses (longest_gap_ms)" test "$gap" -gt 0
check "5 -> 3: no write waited longer than ${RESHARD_GAP_BOUND_MS} ms ($gap ms)" test "$gap" -le "$RESHARD_GAP_BOUND_MS"
echo "# slot moves logged: $(grep -h '"msg":"slots moved"' "$work"/operator*.log | wc -l)"
summary
