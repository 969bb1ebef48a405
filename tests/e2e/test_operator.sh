#!/usr/bin/env bash
# End to end: the whole operator (supervisor, electord, informerd, workerd) against the
# local control plane. Create, converge, drift, scale, config change, resync without
# writes, deletion through the finalizer, and an orderly SIGTERM that releases the Lease.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# A namespace of its own per run: an earlier run's may still be terminating.
ns=rdc-e2e-op-$$
# test_rbac.sh runs this script with the operator on a ServiceAccount's token and its
# Lease in the deploy/ namespace, where the Role for leases lives.
op_kubeconfig=${OPERATOR_KUBECONFIG:-$KUBECONFIG}
lease_ns=${LEASE_NS:-$ns}
lease=rdc-e2e-$$
e2e_setup op "$ns"

# Every Event created from here on, in any namespace: a watch from a list's resourceVersion
# misses none, also of a namespace deleted meanwhile. The operator serves every namespace,
# so its Event POSTs include those about RedisClusters of other namespaces (an earlier
# script's, left on the same control plane): they are counted against these, not against
# one namespace's Events.
ev_rv=$(kubectl get --raw '/api/v1/events?limit=1' | jq -r .metadata.resourceVersion)
kubectl get --raw "/api/v1/events?watch=1&resourceVersion=$ev_rv" >"$work/events.watch" 2>"$work/events.watch.err" &
ev_watch_pid=$!
cleanup_more() { kill "$ev_watch_pid" 2>/dev/null; }
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$op_kubeconfig" --workers 2 --leader-elect \
    --leader-election-namespace "$lease_ns" --leader-election-id "$lease" --sync-period 15s
check "operator ready (/readyz)" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
check "/healthz ok" curl -sf "http://127.0.0.1:$health/healthz"
check "one Lease holder" wait_until 30 sh -c "kubectl -n $lease_ns get lease $lease -o jsonpath='{.spec.holderIdentity}' | grep -q ."

rc_apply_cache "$ns"

get() { kubectl -n "$ns" get "$@" 2>/dev/null; }
check "finalizer added" wait_until 30 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.metadata.finalizers}' | grep -q cache.example.com/finalizer"
check "ConfigMap, Service, StatefulSet created" wait_until 30 get configmap/cache service/cache statefulset/cache
owner() { kubectl -n "$ns" get "$1" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].controller}'; }
check "ConfigMap owned by the RedisCluster" test "$(owner configmap/cache)" = "RedisCluster/true"
check "StatefulSet owned by the RedisCluster" test "$(owner statefulset/cache)" = "RedisCluster/true"
check "Service is headless" test "$(get service cache -o jsonpath='{.spec.clusterIP}')" = None
check "image tag from version" test "$(get statefulset cache -o jsonpath='{.spec.template.spec.containers[0].image}')" = redis:7.2
check "redis.conf carries maxmemory" sh -c "kubectl -n $ns get configmap cache -o jsonpath='{.data.redis\.conf}' | grep -q 'maxmemory 256mb'"
phase() { get rdc cache -o jsonpath='{.status.phase}/{.status.readyReplicas}'; }
check "Running with 3/3 ready" wait_until 120 sh -c "test \"\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}/{.status.readyReplicas}')\" = Running/3"
# A key is not handed out again before informerd's cache holds what its reconcile wrote
# to the RedisCluster (informerd/ownwrite.h): the worker said which version its writes
# left (awaited, or already cached when DONE came) and no wait ran out. (An empty scrape
# proves nothing: the family must be there. informerd publishes its metrics every 2 s, so
# the family may come a little after Running.)
own_waits() { curl -s "http://127.0.0.1:$metrics/metrics" | awk -v r="$1" '$0 ~ "^informer_own_write_waits_total\\{.*result=\"" r "\"" { s += $NF } /^informer_own_write_waits_total/ { n++ } END { if (n) printf "%d\n", s; else print "missing" }'; }
own_told() { local a c; a=$(own_waits awaited); c=$(own_waits cached); [ "$a" != missing ] && [ $((a + c)) -gt 0 ]; }
wait_until 15 own_told
check "own writes told: $(own_waits awaited) awaited, $(own_waits cached) cached when told, $(own_waits seen) seen, $(own_waits expired) expired" \
    sh -c "test \"\$1\" != missing && test \$((\$1 + \$2)) -gt 0 && test \"\$3\" = 0" _ "$(own_waits awaited)" "$(own_waits cached)" "$(own_waits expired)"
# Events have a budget of their own (docs/kube-api-budget.md): the supervisor made both
# buckets, and the workers count their Event requests apart from the other writes, one
# POST per Event the workers created (the family must be there; informerd's own Events,
# actions Quarantine and Cache, are not the recorder's). The watch must have run: its
# Events of ours in this namespace are there.
check "two QPS buckets in the runtime directory (requests, Events)" \
    test -s "$work/rt/kube-api-bucket" -a -s "$work/rt/kube-api-events-bucket"
# POSTs sent minus those the API refused (result="post_failed": a namespace being deleted
# refuses new Events, and another script's leftovers may be finalized meanwhile).
ev_posted() {
    curl -s "http://127.0.0.1:$metrics/metrics" | awk '
        /^event_recorder_total\{.*result="posted"/ { s += $NF; n++ }
        /^event_recorder_total\{.*result="post_failed"/ { s -= $NF }
        END { if (n) printf "%d\n", s; else print "missing" }'
}
ev_added() { # [namespace]: Events of the workers created since the operator started (whole lines only)
    jq -nR --arg ns "${1:-}" '[inputs | fromjson? | select(.type == "ADDED") | .object
        | select(.source.component == "rediscluster-operator" and .action != "Quarantine" and .action != "Cache")
        | select($ns == "" or .metadata.namespace == $ns)] | length' "$work/events.watch"
}
ev_match() { local p; p=$(ev_posted); [ "$p" != missing ] && [ "$(ev_added "$ns")" -gt 0 ] && [ "$p" = "$(ev_added)" ]; }
wait_until 15 ev_match
check "Event POSTs counted apart: $(ev_posted) posted, $(ev_added) Events of ours created ($(ev_added "$ns") in $ns)" ev_match
check "Ready condition True" test "$(get rdc cache -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True
check "observedGeneration current" test "$(get rdc cache -o jsonpath='{.status.observedGeneration}')" = "$(get rdc cache -o jsonpath='{.metadata.generation}')"
# The status is server-side applied: the operator owns its three conditions, and a
# condition another field manager applies (a backup tool, say) stays theirs.
check "status server-side applied by rediscluster-operator" sh -c "kubectl -n $ns get rdc cache -o json --show-managed-fields | jq -e '[.metadata.managedFields[] | select(.manager==\"rediscluster-operator\" and .operation==\"Apply\" and .subresource==\"status\")] | length == 1' >/dev/null"
printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: cache, namespace: %s}\nstatus:\n  conditions:\n  - {type: BackupReady, status: "True", reason: Done, message: nightly, lastTransitionTime: "2026-01-01T00:00:00Z"}\n' "$ns" |
    kubectl apply --server-side --field-manager=backup-tool --subresource=status -f - >/dev/null
check "another manager's condition applied" test "$(get rdc cache -o jsonpath='{.status.conditions[?(@.type=="BackupReady")].reason}')" = Done

# Without the defaulting webhook, a bare spec gets the same defaults from the reconcile.
kubectl -n "$ns" create -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: bare, namespace: $ns}
spec: {size: 1, image: redis}
YAML
check "bare spec: StatefulSet created" wait_until 30 get statefulset/bare
check "bare spec: image tagged with the default version 7.2" \
    test "$(get statefulset bare -o jsonpath='{.spec.template.spec.containers[0].image}')" = redis:7.2
check "bare spec: redis.conf has the default maxmemory-policy allkeys-lru" \
    sh -c "kubectl -n $ns get configmap bare -o jsonpath='{.data.redis\.conf}' | grep -qx 'maxmemory-policy allkeys-lru'"
kubectl -n "$ns" delete rdc bare --wait=true --timeout=60s >/dev/null 2>&1

# Drift: a deleted StatefulSet comes back; an edited ConfigMap is put back.
kubectl -n "$ns" delete statefulset cache --wait=true >/dev/null
check "deleted StatefulSet recreated" wait_until 30 get statefulset/cache
kubectl -n "$ns" patch configmap cache --type merge -p '{"data":{"redis.conf":"tampered"}}' >/dev/null
check "edited ConfigMap restored" wait_until 30 sh -c "kubectl -n $ns get configmap cache -o jsonpath='{.data.redis\.conf}' | grep -q maxmemory"

# Scale through the /scale subresource, and a config change that rolls the pods.
hash_before=$(get statefulset cache -o jsonpath='{.spec.template.metadata.annotations.cache\.example\.com/config-hash}')
kubectl -n "$ns" scale rdc/cache --replicas=4 >/dev/null
check "kubectl scale reaches the StatefulSet" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset cache -o jsonpath='{.spec.replicas}')\" = 4"
kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"config":{"maxmemory":"512mb"}}}' >/dev/null
check "config change reaches redis.conf" wait_until 30 sh -c "kubectl -n $ns get configmap cache -o jsonpath='{.data.redis\.conf}' | grep -q 'maxmemory 512mb'"
check "config change rolls the pod template" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset cache -o jsonpath='{.spec.template.metadata.annotations.cache\.example\.com/config-hash}')\" != '$hash_before'"
kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"image":"redis","version":"7.4"}}' >/dev/null
check "image change reaches the StatefulSet" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset cache -o jsonpath='{.spec.template.spec.containers[0].image}')\" = redis:7.4"
check "Running again with 4/4 ready" wait_until 120 sh -c "test \"\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}/{.status.readyReplicas}')\" = Running/4"

# One connection per worker process (issue 17): a workerd's reads, writes and Events all
# go out on one curl multi, over TLS one HTTP/2 connection (streams multiplexed). After
# the burst above, each workerd holds at most one connection to the API server, and one
# that reconciled holds exactly one (a pool per purpose held 4).
api_port=$(kubectl --kubeconfig "$op_kubeconfig" config view --minify -o jsonpath='{.clusters[0].cluster.server}' | sed 's/.*://')
worker_conns="" conns_max=0 conns_sum=0 nworkers=0
for p in $(pgrep -P "$sup_pid" -x workerd); do
    n=$(ss -tnpH state established "dport = :$api_port" 2>/dev/null | grep -c "pid=$p,")
    worker_conns="$worker_conns $n" nworkers=$((nworkers + 1)) conns_sum=$((conns_sum + n))
    [ "$n" -gt "$conns_max" ] && conns_max=$n
done
check "two workerd processes found (children of the supervisor)" test "$nworkers" = 2
check "one connection to the API server per workerd (established:$worker_conns)" \
    test "$conns_max" -le 1 -a "$conns_sum" -ge 1
check "the other manager's condition survived the operator's status writes" \
    test "$(get rdc cache -o jsonpath='{.status.conditions[?(@.type=="BackupReady")].status}/{.status.conditions[?(@.type=="BackupReady")].message}')" = True/nightly
check "  ... and the operator's status entry does not own it" sh -c \
    "kubectl -n $ns get rdc cache -o json --show-managed-fields | jq -e '[.metadata.managedFields[] | select(.manager==\"rediscluster-operator\" and .subresource==\"status\") | .fieldsV1 | tostring | contains(\"BackupReady\")] | any | not' >/dev/null"

# workerd alone: --once --dry-run on a converged cluster plans no write.
"$BIN/workerd" --kubeconfig "$op_kubeconfig" --once "$ns/cache" --dry-run --log-level error >"$work/plan.json" 2>&1
check "workerd --once --dry-run plans no write for a converged cluster" \
    test "$(jq '.actions | length' "$work/plan.json" 2>/dev/null)" = 0

# Invariant 6: a resync of an unchanged cluster writes nothing (sync period 15 s). Each
# 20 s window holds a resync; a window with writes is shown (each write's reason from the
# log) and another is measured: a cluster that really changed (a pod's readiness flapping
# on a loaded machine) writes in one window, a resync that writes does so in every one.
sleep 3
resync_ok=0
for attempt in 1 2 3; do
    w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
    r0=$(curl -s "http://127.0.0.1:$metrics/metrics" | awk '/^controller_runtime_reconcile_total\{/ { s += $NF } END { printf "%d\n", s }')
    l0=$(wc -l <"$work/operator.log")
    sleep 20
    w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
    r1=$(curl -s "http://127.0.0.1:$metrics/metrics" | awk '/^controller_runtime_reconcile_total\{/ { s += $NF } END { printf "%d\n", s }')
    if [ "$r1" -gt "$r0" ] && [ "$w1" = "$w0" ]; then resync_ok=1; break; fi
    echo "# window $attempt: $r0 -> $r1 reconciles, $w0 -> $w1 writes; the writes:"
    tail -n +"$((l0 + 1))" "$work/operator.log" | grep '"write done"\|"observation sent"' | head -20 | sed 's/^/#   /'
done
check "a resync reconciled the cluster ($r0 -> $r1 reconciles)" test "$r1" -gt "$r0"
check "the resync made zero write requests ($w0 -> $w1, window $attempt of 3)" test "$resync_ok" = 1
check "metrics expose workqueue_depth" sh -c "curl -s http://127.0.0.1:$metrics/metrics | grep -q '^workqueue_depth'"
check "metrics expose leader_election_master_status 1" sh -c "curl -s http://127.0.0.1:$metrics/metrics | grep -q '^leader_election_master_status{.*} 1'"

# Deletion: cleanup, finalizer removed, children garbage-collected.
kubectl -n "$ns" delete rdc cache --wait=false >/dev/null
check "RedisCluster deleted through its finalizer" wait_until 60 sh -c "! kubectl -n $ns get rdc cache >/dev/null 2>&1"
check "children garbage-collected" wait_until 60 sh -c "! kubectl -n $ns get statefulset cache >/dev/null 2>&1 && ! kubectl -n $ns get configmap cache >/dev/null 2>&1"
check "CleanedUp event recorded" sh -c "kubectl -n $ns get events --field-selector reason=CleanedUp,involvedObject.name=cache -o name | grep -q ."

# SIGTERM drains, releases the Lease and exits 0.
kill -TERM "$sup_pid"
rc=124
for _ in $(seq 1 60); do
    if ! kill -0 "$sup_pid" 2>/dev/null; then wait "$sup_pid"; rc=$?; break; fi
    sleep 0.5
done
sup_pid=
check "SIGTERM: supervisor exits 0 (got $rc)" test "$rc" = 0
check "Lease released on shutdown" test -z "$(kubectl -n $lease_ns get lease $lease -o jsonpath='{.spec.holderIdentity}')"

# workerd --once alone (the operator is stopped): a new cluster's children are created and
# its Events recorded before it exits (its recorder is flushed, bounded); a second --once
# after the deletion removes the finalizer.
rc_yaml once "$ns" <<YAML | kubectl apply -f - >/dev/null
  mode: Standalone
  size: 1
  image: redis
YAML
"$BIN/workerd" --kubeconfig "$op_kubeconfig" --once "$ns/once" --log-level error >"$work/once.out" 2>&1
check "workerd --once: exit 0 ($(tr '\n' ' ' <"$work/once.out"))" grep -q "^$ns/once: " "$work/once.out"
check "workerd --once created the StatefulSet" get statefulset/once
check "workerd --once recorded its Events before it exited (no wait)" \
    sh -c "kubectl -n $ns get events --field-selector involvedObject.name=once,reason=Created -o name | grep -q ."
kubectl -n "$ns" delete rdc once --wait=false >/dev/null
"$BIN/workerd" --kubeconfig "$op_kubeconfig" --once "$ns/once" --log-level error >>"$work/once.out" 2>&1
check "workerd --once released the deleted cluster (finalizer removed)" \
    wait_until 10 sh -c "! kubectl -n $ns get rdc once >/dev/null 2>&1"
if [ "$failed" -gt 0 ]; then
    echo "--- operator log (last 60 lines)"; tail -60 "$work/operator.log"
fi
summary
