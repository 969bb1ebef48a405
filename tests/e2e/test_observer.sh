#!/usr/bin/env bash
# End to end: the Redis observer on the local control plane with process nodes (the pod
# runtime: every pod of a pinned namespace is a real redis-server on its pod IP). The
# operator (supervisor) makes a 3-pod Standalone RedisCluster; this script links the pods
# as one primary and two replicas by hand (in Standalone mode the operator leaves
# replication alone; Replication mode is test_replication.sh's), and runs observerd alone beside the operator on its runtime directory. Shown:
# informerd caches the pods in compact form (server-side label filter, Pod in the sync
# gate); observerd's rdc_redis_up / rdc_redis_role match `redis-cli info replication` on
# every pod; `observerd --once` says the same; the observations about the new topology
# reach informerd and the reconciles they cause write nothing (invariant 6); a SIGSTOP of
# the primary's redis-server shows rdc_redis_up 0 within 3 s, and SIGCONT brings it back.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-obs-$$
work=$(mktemp -d /tmp/rdc-e2e-obs.XXXXXX)
sup_pid= obs_pid= sub_pid= stopped=
cleanup() {
    [ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
    for p in $obs_pid $sub_pid; do kill -TERM "$p" 2>/dev/null; done
    sup_stop 3
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

skip_without_process_nodes

kubectl apply -f "$TOP/crds/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com >/dev/null
kubectl create namespace "$ns" >/dev/null
check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
# Standalone: the operator leaves replication alone (in Replication mode it links the pods
# itself, test_replication.sh), so this script can link them by hand.
printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: cache, namespace: %s}\nspec: {size: 3, image: redis, version: "7.2", mode: Standalone}\n' "$ns" |
    kubectl apply -f - >/dev/null
# A Redis pod without the operator's managed-by label: never cached, never observed.
kubectl -n "$ns" run stray --image=redis:7.2 --labels=app.kubernetes.io/name=redis,app.kubernetes.io/instance=cache >/dev/null

sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 1 --namespace "$ns"
check "the cluster is Running" wait_until 240 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
pod_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
for i in 0 1 2; do
    wait_until 60 sh -c "redis-cli -h \"\$(kubectl -n $ns get pod cache-$i -o jsonpath='{.status.podIP}')\" ping | grep -q PONG"
    ip[$i]=$(pod_ip cache-$i)
done
check "3 pods on process nodes answer PING (${ip[*]})" sh -c "for h in ${ip[*]}; do redis-cli -h \$h ping | grep -q PONG || exit 1; done"

# The cache: Pod deltas, compact, only the operator's pods.
"$BIN/informerd" --runtime-dir "$work/rt" --subscribe >"$work/sub.jsonl" 2>"$work/sub.log" &
sub_pid=$!
check "subscriber synced" wait_until 20 grep -q '"type":"SYNCED"' "$work/sub.jsonl"
pods_cached() { jq -r 'select(.kind=="Pod") | .key' "$work/sub.jsonl" | sort -u | tr '\n' ' '; }
check "informerd caches the 3 Redis pods ($(pods_cached))" test "$(pods_cached)" = "$ns/cache-0 $ns/cache-1 $ns/cache-2 "
check "a pod without the managed-by label is not cached" test "$(jq -r 'select(.kind=="Pod" and .key=="'"$ns"'/stray") | .key' "$work/sub.jsonl" | wc -l)" = 0
check "pods are cached compact (spec: nodeName only, no containers)" \
    test "$(jq -c 'select(.kind=="Pod") | .object.spec | keys' "$work/sub.jsonl" | sort -u)" = '["nodeName"]'
check "status keeps podIP" \
    test "$(jq -r 'select(.kind=="Pod" and .key=="'"$ns"'/cache-0") | .object.status.podIP' "$work/sub.jsonl" | tail -1)" = "${ip[0]}"
check "informer_cache_synced{kind=\"Pod\"} 1" grep -q '^informer_cache_synced{kind="Pod"} 1' "$work/rt/metrics/informerd.prom"

"$BIN/observerd" --kubeconfig "$KUBECONFIG" --runtime-dir "$work/rt" --log-format text >"$work/observerd.log" 2>&1 &
obs_pid=$!
prom=$work/rt/metrics/observerd.prom
m() { # m METRIC POD: its value in observerd's metrics file, or "none"
    local v
    v=$(grep "^$1{namespace=\"$ns\",rediscluster=\"cache\",pod=\"$2\"} " "$prom" 2>/dev/null | awk '{print $NF}')
    echo "${v:-none}"
}
is() { test "$(m "$1" "$2")" = "$3"; }
check "observerd reports all 3 pods up" wait_until 15 sh -c "is() { test \"\$(grep \"^rdc_redis_up{namespace=\\\"$ns\\\",rediscluster=\\\"cache\\\",pod=\\\"\$1\\\"} \" $prom | awk '{print \$NF}')\" = 1; }; is cache-0 && is cache-1 && is cache-2"
check "three independent primaries at first (rdc_redis_role 1 each)" wait_until 5 sh -c "grep -c '^rdc_redis_role{namespace=\"$ns\",rediscluster=\"cache\",pod=\"cache-[012]\"} 1' $prom | grep -qx 3"
# A Standalone cluster's plan reads of an observation only which pods are unreachable
# (common/projection.h OBSERVATIONS): informerd keeps these, for the next reconcile, and
# queues nothing for them (result stored_not_read; "stored" is one that queued the key).
stored() { sed -n 's/^informer_observations_total{result="'"${1:-stored}"'"} //p' "$work/rt/metrics/informerd.prom"; }
check "informerd stored observerd's observations" wait_until 10 sh -c "grep -q '^informer_observations_total{result=\"stored\\(_not_read\\)\\?\"} [1-9]' $work/rt/metrics/informerd.prom"

# A topology by hand: cache-0 primary, the others its replicas. The observations (roles,
# links) reach informerd, which keeps them and queues no reconcile for them; nothing is
# written.
sleep 3
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
s0=$(stored stored_not_read)
q0=$(stored)
for i in 1 2; do redis-cli -h "${ip[$i]}" replicaof "${ip[0]}" 6379 >/dev/null; done
check "both replicas linked (master_link_status:up)" wait_until 30 sh -c "for h in ${ip[1]} ${ip[2]}; do redis-cli -h \$h info replication | grep -q '^master_link_status:up' || exit 1; done"
check "observerd sees them as replicas" wait_until 10 sh -c "grep -c '^rdc_redis_role{namespace=\"$ns\",rediscluster=\"cache\",pod=\"cache-[12]\"} 0' $prom | grep -qx 2"
for i in 0 1 2; do
    role=$(redis-cli -h "${ip[$i]}" info replication | tr -d '\r' | sed -n 's/^role://p')
    want=$([ "$role" = master ] && echo 1 || echo 0)
    check "cache-$i: rdc_redis_role $(m rdc_redis_role cache-$i) matches redis-cli's role:$role" is rdc_redis_role cache-$i "$want"
done
check "redis_connected_slaves on the primary is 2" wait_until 10 is redis_connected_slaves cache-0 2
check "replication lag is known for the replicas" sh -c "test \"$(m rdc_redis_replication_lag_bytes cache-1)\" != none"
sleep 3
s1=$(stored stored_not_read)
q1=$(stored)
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
check "the new topology reached informerd (observations kept $s0 -> $s1)" test "${s1:-0}" -gt "${s0:-0}"
check "and queued no reconcile: roles are not read in Standalone mode (queued ${q0:-none} -> ${q1:-none})" test -n "$q0" -a "$q1" = "$q0"
check "and the reconciles it caused wrote nothing ($w0 -> $w1)" test "$w1" = "$w0"
grep 'observation sent' "$work/observerd.log" | sed 's/^/# /' | tail -6

"$BIN/observerd" --kubeconfig "$KUBECONFIG" --once "$ns/cache" >"$work/once.json" 2>"$work/once.log"
once=$(jq -r '[.nodes[] | "\(.pod)=\(.role):\(.linkUp):\(.reachable)"] | sort | join(" ")' "$work/once.json")
check "observerd --once: one primary, two linked replicas ($once)" \
    test "$once" = "cache-0=master:false:true cache-1=slave:true:true cache-2=slave:true:true"

# The primary's redis-server hangs (its PID from INFO server).
pid=$(redis-cli -h "${ip[0]}" info server | tr -d '\r' | sed -n 's/^process_id://p')
check "the primary's redis-server PID is known ($pid)" test -n "$pid"
kill -STOP "$pid" && stopped=$pid
t0=$(date +%s%N)
for _ in $(seq 1 50); do is rdc_redis_up cache-0 0 && break; sleep 0.1; done
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# SIGSTOP of the primary: rdc_redis_up 0 after ${ms} ms"
check "a SIGSTOPped primary shows rdc_redis_up 0 within 3 s (${ms} ms)" test "$(m rdc_redis_up cache-0)" = 0 -a "$ms" -lt 3000
check "the replicas stay up" test "$(m rdc_redis_up cache-1)$(m rdc_redis_up cache-2)" = 11
# The observation is sent once every pod's probe of the round has ended (evaluate), the
# metric when its own probe does: wait for the log line rather than read it at once.
check "observerd said so" wait_until 5 grep -q 'cache-0: reachable true->false' "$work/observerd.log"
kill -CONT "$pid" && stopped=
check "SIGCONT: up again" wait_until 5 is rdc_redis_up cache-0 1

echo "# observerd: RSS $(awk '/^VmRSS/ {print $2 " kB"}' /proc/$obs_pid/status 2>/dev/null), CPU $(ps -o times= -p "$obs_pid" 2>/dev/null | tr -d ' ') s for 3 pods"
if [ "$failed" -gt 0 ]; then
    echo "--- operator log (last 20 lines)"; tail -20 "$work/operator.log"
    echo "--- observerd log (last 30 lines)"; tail -30 "$work/observerd.log"
    echo "--- observerd --once"; cat "$work/once.log" "$work/once.json"
fi
summary
