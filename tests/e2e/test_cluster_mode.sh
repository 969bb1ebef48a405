#!/usr/bin/env bash
# End to end: sharded Redis Cluster mode (issue 29, docs/cluster-mode.md) on the pod runtime
# (real redis-server processes in cluster mode). One RedisCluster "cache" (mode Cluster,
# 3 shards x 1 replica, downAfter 2s = cluster-node-timeout), the operator with 2 workers.
#   1. the operator SIGKILLed mid-bootstrap (once the first slots are held) and started
#      again: one healthy cluster, no second set of slots;
#   2. Running: status.cluster ok, 16384 slots, each shard a primary and a linked replica,
#      role and shard labels; redis-cli --cluster check on any node: all slots covered, no
#      open slot, no warning; kubectl get rdc shows the shards and the state;
#   3. 10,000 keys written through redis-cli's cluster client's redirections
#      (bench/clusterwriter fill) and read back through another node;
#   4. kubectl scale refused with the way to scale; a change of mode refused;
#   5. SIGKILL of a shard primary's redis-server under a SET + WAIT 1 writer: Redis
#      Cluster fails over, the labels and status follow, the old primary rejoins as a
#      replica; every acknowledged write is there;
#   6. a shard primary's pod deleted with its volume's nodes.conf removed (its process
#      SIGKILLed first): Redis Cluster fails over, the pod comes back as a new node with
#      its AOF's keys, its old id is forgotten on every node, it rejoins its shard as a
#      replica without slots (FLUSHALL, CLUSTER REPLICATE);
#   7. a rollout (a config change that rolls the pods) under the writer: each primary
#      hands over with CLUSTER FAILOVER before its pod goes; 0 acknowledged writes lost;
#      the longest write gap printed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_clustermode.sh"

skip_without_process_nodes

ns=rdc-e2e-cm-$$
cm_setup clustermode "$ns"

shard_primary() { status | jq -r --argjson k "$1" '.status.cluster.shards[]? | select(.index == $k) | .primary // ""'; }
role_of() { redis-cli -h "$(ip_of "$1")" role 2>/dev/null | head -1; }
healthy() {
    status | jq -e '.status.phase == "Running" and .status.cluster.state == "ok" and .status.cluster.slotsAssigned == 16384
        and ([.status.cluster.shards[] | select(.primary != "" and ([.replicas[]? | select(.linkUp)] | length) == 1)] | length) == 3' >/dev/null
}
export -f pods ip_of status healthy cluster_check shard_primary
export ns

# ---- 1. bootstrap, the operator killed in the middle ----------------------------------------
rc_apply_cluster cache "$ns" 3 2s
check "the RedisCluster is taken (size 6 = 3 x (1 + 1))" kubectl -n "$ns" get rdc cache
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "six pods in three StatefulSets" wait_until 120 bash -c "test \$(kubectl -n $ns get sts -l app.kubernetes.io/instance=cache -o name | wc -l) = 3 && test \$(pods | wc -l) = 6"
# once some slots are held (an ADDSLOTSRANGE done), kill the whole operator at once
check "the operator assigns the first slots" wait_until 240 grep -q 'never assigned (bootstrap)' "$work/operator.log"
kill -KILL -- "-$sup_pid" 2>/dev/null || kill -KILL "$sup_pid"
sleep 1
echo "# operator SIGKILLed after $(grep -c 'redis command done' "$work/operator.log") Redis commands"
# what is left, as workerd alone would send it: Redis Cluster commands, nothing written
"$BIN/workerd" --kubeconfig "$KUBECONFIG" --once "$ns/cache" --dry-run --log-level error >"$work/dry.json" 2>&1
echo "# dry-run: $(jq -r '[.actions[] | select(.kind == "redis") | .argv[0:2] | join(" ")] | group_by(.) | map("\(length) x \(.[0])") | join(", ")' "$work/dry.json" 2>&1)"
check "workerd --once --dry-run shows the CLUSTER commands still to send" \
    jq -e '[.actions[] | select(.kind == "redis" and .argv[0] == "CLUSTER")] | length > 0' "$work/dry.json"
sup_start "$BIN" "$work/rt2" "$work/operator2.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "Running and healthy after the restart" wait_until 300 healthy

# ---- 2. what Redis and Kubernetes say --------------------------------------------------------
p0=$(pods | head -1)
check "redis-cli --cluster check: all 16384 slots covered, no open slot, no warning" cluster_check "$p0"
slots_total=0
for p in $(pods); do
    n=$(redis-cli -h "$(ip_of "$p")" cluster nodes | awk '/myself/ {for (i = 9; i <= NF; i++) {split($i, r, "-"); s += (r[2] == "" ? 1 : r[2] - r[1] + 1)}} END {print s + 0}')
    slots_total=$((slots_total + n))
done
check "every slot held once over all nodes ($slots_total)" test "$slots_total" = 16384
for k in 0 1 2; do
    pr=$(shard_primary $k)
    check "shard $k: status names its primary ($pr), a pod of StatefulSet cache-shard$k" bash -c "echo '$pr' | grep -q '^cache-shard$k-'"
    check "shard $k: $pr is labelled primary and shard $k" test "$(kubectl -n "$ns" get pod "$pr" -o jsonpath='{.metadata.labels.cache\.example\.com/role}/{.metadata.labels.cache\.example\.com/shard}')" = "primary/$k"
done
check "the ClusterHealthy condition is True" bash -c "status | jq -e '.status.conditions[] | select(.type == \"ClusterHealthy\") | .status == \"True\"' >/dev/null"
check "kubectl get rdc shows SHARDS 3 and STATE ok" bash -c "kubectl -n $ns get rdc cache | awk 'NR == 2' | grep -qE ' 3 +ok '"

# ---- 3. 10,000 keys through the cluster client ----------------------------------------------
out=$("$CW" fill --seeds "$(ip_of "$p0"):6379" --count 10000 --prefix key: 2>&1)
echo "# fill: $out"
check "10,000 keys written through any node (MOVED followed)" bash -c "echo '$out' | grep -q 'filled=10000'"
other=$(pods | tail -1)
out=$("$CW" verify --seeds "$(ip_of "$other"):6379" --count 10000 --prefix key: 2>&1)
check "read back through another node: $out" bash -c "echo '$out' | grep -q 'missing=0 wrong=0'"
check "redis-cli -c reads one of them" test "$(redis-cli -c -h "$(ip_of "$other")" get key:4242)" = 4242

# ---- 4. refusals -----------------------------------------------------------------------------
refuse=$(kubectl -n "$ns" scale rdc cache --replicas=8 2>&1)
check "kubectl scale refused, saying to scale with the shards" bash -c "printf '%s' \"\$1\" | grep -q 'spec.cluster.shards'" _ "$refuse"
refuse=$(kubectl -n "$ns" patch rdc cache --type=merge -p '{"spec":{"mode":"Replication"}}' 2>&1)
check "a change of mode refused" bash -c "printf '%s' \"\$1\" | grep -q 'cannot change to or from Cluster mode'" _ "$refuse"

# ---- the writer ------------------------------------------------------------------------------
# (writer_start, writer_stop, verify_acks, accept_gap_ms: lib_clustermode.sh)
gap_ms() { # the longest time from a failure's last acknowledged write to the next one
    jq -s '[.[] | select(.ev == "fail" or .ev == "ack")] as $e | reduce range(0; $e | length) as $i ({last: null, max: 0};
        if $e[$i].ev == "fail" then .last = $e[$i].last_ack elif .last != null then .max = ([.max, $e[$i].t - .last] | max) | .last = null else . end) | .max' "$work/events.jsonl"
}

# ---- 5. SIGKILL of a shard primary -----------------------------------------------------------
writer_start kill:
old=$(shard_primary 0)
echo "# killing $old's redis-server (shard 0's primary)"
"$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$old" redis >/dev/null
# the lag from Redis's change (the replica says master) to the label: polled every 100 ms
replica=$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=cache,cache.example.com/shard=0 -o name | sed 's#pod/##' | grep -vx "$old" | head -1)
rip=$(ip_of "$replica")
label_of() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.labels.cache\.example\.com/role}'; }
t_redis=0 t_label=0
for _ in $(seq 1 600); do
    now=$(date +%s%3N)
    [ "$t_redis" = 0 ] && redis-cli -h "$rip" role 2>/dev/null | head -1 | grep -qx master && t_redis=$now
    [ "$t_label" = 0 ] && [ "$(label_of "$replica")" = primary ] && t_label=$(date +%s%3N)
    [ "$t_redis" != 0 ] && [ "$t_label" != 0 ] && break
    sleep 0.1
done
echo "# failover: Redis promoted $replica at +0 ms, its label followed at +$((t_label - t_redis)) ms"
check "Redis Cluster promotes $replica" test "$t_redis" != 0
check "the role label follows Redis's change ($((t_label - t_redis)) ms)" test "$t_label" != 0
check "Redis Cluster fails over: shard 0's primary is the other pod" wait_until 60 bash -c "p=\$(shard_primary 0); test -n \"\$p\" && test \"\$p\" != $old"
new=$(shard_primary 0)
check "status names $replica shard 0's primary" test "$new" = "$replica"
check "the old primary $old rejoins as a replica" wait_until 90 bash -c "redis-cli -h \$(kubectl -n $ns get pod $old -o jsonpath='{.status.podIP}') role 2>/dev/null | head -1 | grep -qx slave"
check "healthy again" wait_until 120 healthy
sleep 2
echo "# writer: $(writer_stop)"
verify_acks "kill"
echo "# kill: longest gap between acknowledged writes (SET + WAIT 1) $(gap_ms) ms, between accepted SETs $(accept_gap_ms) ms"
check "redis-cli --cluster check after the failover" cluster_check "$old"

# ---- 6. a primary's pod deleted with its nodes.conf removed -----------------------------------
# Its redis-server is SIGKILLed first (a running node writes nodes.conf again at every
# change, and a SIGTERM makes it save it), the file removed from the volume while the
# container waits to restart, then the pod deleted: it comes back as a new node id with
# the data of its AOF, and no slot.
rm -f "$work/acks.txt" "$work/events.jsonl"
writer_start lost:
victim=$(shard_primary 1)
pv=$(kubectl -n "$ns" get pvc "data-$victim" -o jsonpath='{.spec.volumeName}')
nodes_conf="${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}/runtime/pv/$pv/nodes.conf"
old_id=$(redis-cli -h "$(ip_of "$victim")" cluster myid)
check "$victim's nodes.conf is on its volume ($nodes_conf)" test -f "$nodes_conf"
"$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$victim" redis >/dev/null
rm -f "$nodes_conf"
kubectl -n "$ns" delete pod "$victim" --wait=false >/dev/null
# Redis Cluster fails it over, unless the pod is back at its old IP first (this runtime
# reuses the address): then every node flags the old id noaddr, Redis never fails it, and
# the operator sends CLUSTER FAILOVER FORCE to its replica (docs/cluster-mode.md, 2b)
check "shard 1 fails over to its replica" wait_until 60 bash -c "p=\$(shard_primary 1); test -n \"\$p\" && test \"\$p\" != $victim"
check "$victim back" wait_until 120 bash -c "kubectl -n $ns get pod $victim -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
check "$victim is a new node" wait_until 30 bash -c "id=\$(redis-cli -h \$(kubectl -n $ns get pod $victim -o jsonpath='{.status.podIP}') cluster myid 2>/dev/null); test -n \"\$id\" && test \"\$id\" != $old_id"
check "healthy again, $victim a replica of shard 1" wait_until 180 bash -c "healthy && redis-cli -h \$(kubectl -n $ns get pod $victim -o jsonpath='{.status.podIP}') role | head -1 | grep -qx slave"
check "the old id $old_id is forgotten on every node" bash -c "for p in \$(pods); do redis-cli -h \$(kubectl -n $ns get pod \$p -o jsonpath='{.status.podIP}') cluster nodes | grep -q $old_id && exit 1; done; exit 0"
check "$victim holds no slot" bash -c "redis-cli -h \$(kubectl -n $ns get pod $victim -o jsonpath='{.status.podIP}') cluster nodes | awk '/myself/ {exit NF > 8}'"
echo "# lost nodes.conf: failed over by $(grep -q 'is gone (its address answers' "$work/operator2.log" && echo "the operator (FAILOVER FORCE: the pod came back at its old IP first)" || echo "Redis Cluster")"
echo "# writer: $(writer_stop)"
verify_acks "lost nodes.conf"
check "redis-cli --cluster check after the rejoin" cluster_check "$victim"

# ---- 7. a rollout under the writer ------------------------------------------------------------
rm -f "$work/acks.txt" "$work/events.jsonl"
writer_start roll:
fo0=$(grep -c 'CLUSTER.*FAILOVER\|"command":"CLUSTER".*failover' "$work/operator2.log")
kubectl -n "$ns" patch rdc cache --type=merge -p '{"spec":{"config":{"extra":{"databases":"1"}}}}' >/dev/null
t0=$(date +%s)
check "every pod rolled to the new revision" wait_until 600 bash -c '
    for s in 0 1 2; do
        rev=$(kubectl -n $ns get sts cache-shard$s -o jsonpath="{.status.updateRevision}")
        for p in $(kubectl -n $ns get pods -l cache.example.com/shard=$s -o name); do
            test "$(kubectl -n $ns get $p -o jsonpath="{.metadata.labels.controller-revision-hash}")" = "$rev" || exit 1
        done
    done'
echo "# rollout: $(( $(date +%s) - t0 )) s"
check "healthy after the rollout" wait_until 180 healthy
echo "# writer: $(writer_stop)"
verify_acks "rollout"
echo "# rollout: longest gap between acknowledged writes (SET + WAIT 1) $(gap_ms) ms, between accepted SETs $(accept_gap_ms) ms"
check "each primary was handed over with CLUSTER FAILOVER ($(( $(grep -c 'takes its role' "$work/operator2.log") )) handovers)" \
    test "$(grep -c 'takes its role' "$work/operator2.log")" -ge 3
check "redis-cli --cluster check after the rollout" cluster_check "$(pods | head -1)"
summary
