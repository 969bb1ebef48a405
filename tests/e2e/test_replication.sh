#!/usr/bin/env bash
# End to end: the operator manages replication itself (issue 14, docs/replication.md), on
# the pod runtime (real redis-server processes). Three clusters at once in a pinned
# namespace: "cache" (Replication, size 3), "solo" (Standalone, size 2), "secure"
# (Replication, size 2, spec.auth from a Secret). Shown:
#   - cache: one primary (status.primary cache-0), two replicas linked to it (redis-cli),
#     role labels, the Services cache-primary / cache-replicas (selectors, owner, and the
#     pods they select: the pod runtime's loopback IPs never become endpoints, so the
#     selection is shown instead), status.nodes, ReplicationHealthy True;
#   - a key SET on the primary is readable on both replicas;
#   - a resync (sync period 20 s) with the observer polling every second: zero writes;
#   - a replica's redis-server killed (cluster.sh pod-kill) comes back as a primary of
#     nothing (no replicaof in its config) and is made a replica of the same primary;
#   - `redis-cli replicaof` by hand to another address is put back;
#   - scale 3 -> 5: two more linked replicas;
#   - solo stays two independent primaries: no role Services, labels or REPLICAOF;
#   - secure: a client without the password is refused, with it accepted; the replica
#     authenticates to its primary (masterauth); the password appears in no ConfigMap,
#     operator log line, Event, RedisCluster (status) or StatefulSet/pod spec; a change of
#     the Secret alone (no annotation: informerd watches Secrets, metadata only) rotates
#     it within seconds: both passwords accepted, then only the new one, replication
#     kept (masterauth), recorded in the owned Secret secure-redis-auth;
#   - with the operator stopped, `workerd --once --dry-run` shows the REPLICAOF a hand-made
#     change needs (no password in it) and `workerd --once` carries it out.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

skip_without_process_nodes

ns=rdc-e2e-repl-$$
PW="Zq7-repl-e2e-$$-pw"
e2e_setup repl "$ns"
check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
kubectl -n "$ns" create secret generic pw --from-literal=password="$PW" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: cache, namespace: $ns}
spec: {size: 3, image: redis, version: "7.2", mode: Replication}
---
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: solo, namespace: $ns}
spec: {size: 2, image: redis, version: "7.2", mode: Standalone}
---
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: secure, namespace: $ns}
spec: {size: 2, image: redis, version: "7.2", mode: Replication, auth: {secretRef: {name: pw}}}
YAML

sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns" \
    --sync-period 20s
phase() { kubectl -n "$ns" get rdc "$1" -o jsonpath='{.status.phase}'; }
for c in cache solo secure; do
    check "$c is Running" wait_until 300 sh -c "kubectl -n $ns get rdc $c -o jsonpath='{.status.phase}' | grep -qx Running"
done
pod_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
info() { # info POD FIELD [redis-cli args]: a field of INFO replication
    local pod=$1 f=$2; shift 2
    redis-cli -h "$(pod_ip "$pod")" "$@" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$f://p"
}
# linked POD PRIMARY_POD: a replica of that pod's IP on 6379 with the link up.
linked() {
    local p=$1 want; want=$(pod_ip "$2"); shift 2
    [ "$(info "$p" role "$@")" = slave ] && [ "$(info "$p" master_host "$@")" = "$want" ] &&
        [ "$(info "$p" master_port "$@")" = 6379 ] && [ "$(info "$p" master_link_status "$@")" = up ]
}
export -f info linked pod_ip
export ns

# ---- cache: topology, labels, Services, status ----------------------------------------
check "status.primary is cache-0" wait_output 30 cache-0 kubectl -n "$ns" get rdc cache -o jsonpath='{.status.primary}'
check "cache-0 is a master" wait_output 30 master info cache-0 role
for i in 1 2; do
    check "cache-$i is a linked replica of cache-0" wait_until 60 linked cache-$i cache-0
done
roles() { kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$1,cache.example.com/role=$2" -o name | sort | tr '\n' ' '; }
check "label role=primary on cache-0 only" wait_output 10 "pod/cache-0 " roles cache primary
check "label role=replica on cache-1, cache-2" wait_output 10 "pod/cache-1 pod/cache-2 " roles cache replica
sel() { kubectl -n "$ns" get svc "$1" -o jsonpath='{.spec.selector}' | jq -c 'to_entries | sort_by(.key) | from_entries'; }
check "Service cache-primary selects role=primary of this instance" \
    test "$(sel cache-primary)" = '{"app.kubernetes.io/instance":"cache","app.kubernetes.io/name":"redis","cache.example.com/role":"primary"}'
check "Service cache-replicas selects role=replica" \
    test "$(sel cache-replicas | jq -r '."cache.example.com/role"')" = replica
check "both are owned by the RedisCluster" test "$(kubectl -n "$ns" get svc cache-primary cache-replicas -o jsonpath='{.items[*].metadata.ownerReferences[0].kind}')" = "RedisCluster RedisCluster"
svcsel() { kubectl -n "$ns" get pods -l "$(kubectl -n "$ns" get svc "$1" -o jsonpath='{.spec.selector}' | jq -r 'to_entries | map("\(.key)=\(.value)") | join(",")')" -o name | sort | tr '\n' ' '; }
check "cache-primary's selector picks cache-0 ($(svcsel cache-primary))" test "$(svcsel cache-primary)" = "pod/cache-0 "
check "cache-replicas' selector picks cache-1 and cache-2" test "$(svcsel cache-replicas)" = "pod/cache-1 pod/cache-2 "
nodes() { kubectl -n "$ns" get rdc "$1" -o json | jq -r '[.status.nodes[] | "\(.pod)=\(.role):\(.linkUp):\(.ip)"] | join(" ")'; }
want_nodes="cache-0=primary:true:$(pod_ip cache-0) cache-1=replica:true:$(pod_ip cache-1) cache-2=replica:true:$(pod_ip cache-2)"
check "status.nodes: pod, role, linkUp, ip" wait_output 30 "$want_nodes" nodes cache
cond() { kubectl -n "$ns" get rdc "$1" -o json | jq -r ".status.conditions[] | select(.type==\"$2\") | .status + \" \" + .reason"; }
check "ReplicationHealthy True AllReplicasLinked" wait_output 30 "True AllReplicasLinked" cond cache ReplicationHealthy
check "status.nodes carry offsets and lag" test "$(kubectl -n "$ns" get rdc cache -o json | jq '[.status.nodes[] | select(.offset != null and .lagBytes != null)] | length')" = 3

# ---- data flows -----------------------------------------------------------------------
redis-cli -h "$(pod_ip cache-0)" set e2e-key "v-$$" >/dev/null
for i in 1 2; do
    check "the key SET on the primary reads back on cache-$i" wait_output 10 "v-$$" redis-cli -h "$(pod_ip cache-$i)" get e2e-key
done
check "a replica refuses writes" sh -c "redis-cli -h $(pod_ip cache-1) set x 1 | grep -q READONLY"

# ---- zero writes on a resync, with the observer polling --------------------------------
reconciles() { curl -s "http://127.0.0.1:$metrics/metrics" | awk '/^controller_runtime_reconcile_total\{/ { s += $NF } END { printf "%d\n", s }'; }
check "secure is replicating too" wait_until 30 sh -c "kubectl -n $ns get rdc secure -o json | jq -e '.status.conditions[] | select(.type==\"ReplicationHealthy\" and .status==\"True\")'"
sleep 4
w0=$(write_requests "http://127.0.0.1:$metrics/metrics"); r0=$(reconciles)
sleep 25
w1=$(write_requests "http://127.0.0.1:$metrics/metrics"); r1=$(reconciles)
check "a resync reconciled the 3 clusters ($r0 -> $r1)" test $((r1 - r0)) -ge 3
check "and wrote nothing, observer polling included ($w0 -> $w1)" test "$w1" = "$w0"
[ "$w1" = "$w0" ] || grep '"msg":"write done"\|redis command done' "$work/operator.log" | tail -5 | sed 's/^/# /'

# ---- a replica's process killed --------------------------------------------------------
restarts() { kubectl -n "$ns" get pod cache-2 -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
rc0=$(restarts)
repointed() { grep -c 'redis command done.*"pod":"cache-2"' "$work/operator.log"; }
n0=$(repointed)
"$TOP/tests/cluster/cluster.sh" pod-kill "$ns/cache-2" >/dev/null 2>&1
check "cache-2's redis-server restarted" wait_until 60 sh -c "test \"\$(kubectl -n $ns get pod cache-2 -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -gt $rc0"
echo "# restartCount $rc0 -> $(restarts)"
check "cache-2 is back as a linked replica of cache-0" wait_until 60 linked cache-2 cache-0
check "the operator sent it a REPLICAOF after the restart (log: $n0 -> $(repointed))" test "$(repointed)" -gt "$n0"
check "and it has the data again" wait_output 30 "v-$$" redis-cli -h "$(pod_ip cache-2)" get e2e-key
check "still one primary: status.primary cache-0" test "$(kubectl -n "$ns" get rdc cache -o jsonpath='{.status.primary}')" = cache-0

# ---- repointed by hand ----------------------------------------------------------------
kubectl -n "$ns" exec cache-1 -- redis-cli replicaof 127.0.0.1 6390 >/dev/null 2>&1 ||
    redis-cli -h "$(pod_ip cache-1)" replicaof 127.0.0.1 6390 >/dev/null
t0=$(date +%s%N)
check "cache-1 pointed by hand elsewhere is put back" wait_until 30 linked cache-1 cache-0
echo "# cache-1 linked to cache-0 again $((($(date +%s%N) - t0) / 1000000)) ms after replicaof by hand"
check "an Event Repointed says so" wait_until 10 sh -c "kubectl -n $ns get events --field-selector reason=Repointed -o jsonpath='{.items[*].message}' | grep -q 'cache-1 follows 127.0.0.1:6390'"

# ---- scale 3 -> 5 -----------------------------------------------------------------------
kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"size":5}}' >/dev/null
for i in 3 4; do
    check "cache-$i joins as a linked replica of cache-0" wait_until 300 linked cache-$i cache-0
done
check "labels: four replicas" wait_output 20 "pod/cache-1 pod/cache-2 pod/cache-3 pod/cache-4 " roles cache replica
check "status.nodes lists 5, ReplicationHealthy True" wait_until 30 sh -c "kubectl -n $ns get rdc cache -o json | jq -e '(.status.nodes | length) == 5 and ([.status.conditions[] | select(.type==\"ReplicationHealthy\")][0].status == \"True\")'"

# ---- Standalone ---------------------------------------------------------------------------
for i in 0 1; do
    check "solo-$i is an independent master" test "$(info solo-$i role)" = master -a "$(info solo-$i connected_slaves)" = 0
done
check "solo has no role Services" sh -c "! kubectl -n $ns get svc solo-primary solo-replicas >/dev/null 2>&1"
check "solo's pods carry no role label" test "$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=solo,cache.example.com/role -o name | wc -l)" = 0
check "solo's status has no ReplicationHealthy nor primary" test "$(kubectl -n "$ns" get rdc solo -o json | jq -r '[.status.primary // "", (.status.conditions[] | select(.type=="ReplicationHealthy") | .type)] | join("")')" = ""

# ---- auth -----------------------------------------------------------------------------------
check "secure: without the password a client is refused (NOAUTH)" sh -c "redis-cli -h $(pod_ip secure-0) ping 2>&1 | grep -q NOAUTH"
check "secure: a wrong password is refused" sh -c "REDISCLI_AUTH=nope redis-cli -h $(pod_ip secure-0) ping 2>&1 | grep -q WRONGPASS"
check "secure: with the password, accepted" wait_output 5 PONG env REDISCLI_AUTH="$PW" redis-cli -h "$(pod_ip secure-0)" ping
check "secure-1 authenticates to its primary (masterauth): linked" wait_until 60 env REDISCLI_AUTH="$PW" bash -c "linked secure-1 secure-0"
check "secure: the pods are Ready (probes authenticate)" test "$(kubectl -n "$ns" get rdc secure -o jsonpath='{.status.readyReplicas}')" = 2
for what in "configmaps" "events" "redisclusters" "statefulsets" "services"; do
    kubectl -n "$ns" get "$what" -o yaml >"$work/$what.yaml" 2>/dev/null
    check "the password is in no $what ($(wc -c <"$work/$what.yaml") bytes read)" sh -c "test -s $work/$what.yaml && ! grep -qF -- '$PW' $work/$what.yaml"
done
kubectl -n "$ns" get pods -o json | jq '[.items[] | {metadata, spec}]' >"$work/podspecs.json"
check "the password is in no pod spec" sh -c "test -s $work/podspecs.json && ! grep -qF -- '$PW' $work/podspecs.json"
check "the password is in no line of the operator's log ($(wc -l <"$work/operator.log") lines)" sh -c "test -s $work/operator.log && ! grep -qF -- '$PW' $work/operator.log"

# ---- rotation ---------------------------------------------------------------------------------
NEW="Nw8-repl-e2e-$$-rotated"
recorded() { kubectl -n "$ns" get secret secure-redis-auth -o jsonpath='{.data.password}' | base64 -d; }
check "the record secure-redis-auth holds the password Redis runs with, owned" \
    sh -c "test \"\$(kubectl -n $ns get secret secure-redis-auth -o jsonpath='{.metadata.ownerReferences[0].kind}')\" = RedisCluster"
check "  (its value is the Secret's)" test "$(recorded)" = "$PW"
accepts() { env REDISCLI_AUTH="$2" redis-cli -h "$(pod_ip "$1")" ping 2>/dev/null | grep -qx PONG; }
export -f accepts
check "before the rotation the new password is refused" bash -c "! accepts secure-0 '$NEW'"
# Nothing but the Secret changes (no annotation, no poke): informerd watches Secrets
# (metadata only) and enqueues the RedisClusters whose spec.auth names the one that changed.
t0=$(date +%s%N)
kubectl -n "$ns" create secret generic pw --from-literal=password="$NEW" --dry-run=client -o yaml | kubectl replace -f - >/dev/null
check "after the Secret alone changed, both pods accept the new password within 10 s" wait_until 10 bash -c "accepts secure-0 '$NEW' && accepts secure-1 '$NEW'"
check "and then refuse the old one" wait_until 30 bash -c "! accepts secure-0 '$PW' && ! accepts secure-1 '$PW'"
echo "# rotation done $((($(date +%s%N) - t0) / 1000000)) ms after the Secret changed (--sync-period 20s)"
check "informerd enqueued secure for the Secret's change (not a resync)" \
    grep -q "Secret changed: its RedisClusters enqueued.*$ns/pw" "$work/operator.log"
check "informerd caches Secrets (synced)" wait_until 10 grep -q '^informer_cache_synced{kind="Secret"} 1' "$work/rt/metrics/informerd.prom"
check "an Event PasswordRotated" wait_until 10 sh -c "kubectl -n $ns get events --field-selector reason=PasswordRotated -o name | grep -q ."
check "the record now holds the new password" wait_output 10 "$NEW" recorded
check "secure-1 is still a linked replica (masterauth rotated)" wait_until 30 env REDISCLI_AUTH="$NEW" bash -c "linked secure-1 secure-0"
check "the observer authenticates again: ReplicationHealthy True" wait_output 60 "True AllReplicasLinked" cond secure ReplicationHealthy
for what in configmaps events redisclusters statefulsets; do
    kubectl -n "$ns" get "$what" -o yaml >"$work/$what.2.yaml" 2>/dev/null
    check "neither password is in $what after the rotation" sh -c "test -s $work/$what.2.yaml && ! grep -qF -e '$PW' -e '$NEW' $work/$what.2.yaml"
done
check "neither is in the operator's log" sh -c "! grep -qF -e '$PW' -e '$NEW' $work/operator.log"

# ---- workerd --once with the operator stopped ----------------------------------------------
sup_stop 5
redis-cli -h "$(pod_ip cache-3)" replicaof 127.0.0.1 6391 >/dev/null
"$BIN/workerd" --kubeconfig "$KUBECONFIG" --once "$ns/cache" --dry-run >"$work/dry.json" 2>"$work/dry.log"
dry=$(jq -r '[.actions[] | select(.kind=="redis") | "\(.pod) \(.argv | join(" "))"] | join(";")' "$work/dry.json")
check "--dry-run shows the REPLICAOF ($dry)" test "$dry" = "cache-3 REPLICAOF $(pod_ip cache-0) 6379"
check "--dry-run changed nothing" test "$(info cache-3 master_port)" = 6391
"$BIN/workerd" --kubeconfig "$KUBECONFIG" --once "$ns/secure" --dry-run >"$work/dry2.json" 2>>"$work/dry.log"
check "--dry-run of secure holds no password" sh -c "test -s $work/dry2.json && ! grep -qF -e '$PW' -e '$NEW' $work/dry2.json $work/dry.log"
"$BIN/workerd" --kubeconfig "$KUBECONFIG" --once "$ns/cache" >"$work/once.out" 2>>"$work/dry.log"
check "workerd --once repoints cache-3" wait_until 20 linked cache-3 cache-0

if [ "$failed" -gt 0 ]; then
    echo "--- operator log (last 40 lines)"; tail -40 "$work/operator.log"
    echo "--- dry-run"; cat "$work/dry.log"; head -c 3000 "$work/dry.json"
    kubectl -n "$ns" get rdc -o yaml | grep -A40 '^  status:' | head -80
fi
summary
