#!/usr/bin/env bash
# End to end: the Redis observer on the local control plane. The operator (supervisor)
# makes a 3-pod RedisCluster; kwok runs its pods with IPs on loopback (127.10.0.0/16), and
# this script starts a real redis-server on each pod IP (on a free port: another cluster
# on this machine may hand out the same IPs) and links them as one primary and two
# replicas. (When the pod runtime of tests/cluster lands, the pods' own Redis replaces
# these.) observerd runs alone beside the operator on its runtime directory. Shown:
# informerd caches the pods in compact form (server-side label filter, Pod in the sync
# gate); observerd's rdc_redis_up / rdc_redis_role match `redis-cli info replication` on
# every pod; informerd stores its observations; a SIGSTOP of the primary shows
# rdc_redis_up 0 within 3 s and SIGCONT brings it back; and the reconciles the
# observations cause make zero write requests (invariant 6).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-obs-$$
work=$(mktemp -d /tmp/rdc-e2e-obs.XXXXXX)
sup_pid= obs_pid= sub_pid=
redis_pids=()
cleanup() {
    for p in "${redis_pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for p in $obs_pid $sub_pid; do kill -TERM "$p" 2>/dev/null; done
    sup_stop 3
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

kubectl apply -f "$TOP/crds/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com >/dev/null
kubectl create namespace "$ns" >/dev/null
printf 'apiVersion: cache.example.com/v1alpha1\nkind: RedisCluster\nmetadata: {name: cache, namespace: %s}\nspec: {size: 3, image: redis, version: "7.2"}\n' "$ns" |
    kubectl apply -f - >/dev/null
# A pod with the name label but without the operator's managed-by label: never cached.
kubectl -n "$ns" run stray --image=redis --labels=app.kubernetes.io/name=redis,app.kubernetes.io/instance=cache >/dev/null

sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 1 --namespace "$ns"
check "the cluster is Running" wait_until 90 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
pod_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
check "3 pods with IPs" wait_until 60 sh -c "test \$(kubectl -n $ns get pods -l app.kubernetes.io/managed-by=rediscluster-operator -o jsonpath='{range .items[*]}{.status.podIP}{\"\\n\"}{end}' | grep -c .) = 3"

# The cache: Pod deltas, compact, only the operator's pods.
"$BIN/informerd" --runtime-dir "$work/rt" --subscribe >"$work/sub.jsonl" 2>"$work/sub.log" &
sub_pid=$!
check "subscriber synced" wait_until 20 grep -q '"type":"SYNCED"' "$work/sub.jsonl"
pods_cached() { jq -r 'select(.kind=="Pod") | .key' "$work/sub.jsonl" | sort -u | tr '\n' ' '; }
check "informerd caches the 3 Redis pods ($(pods_cached))" test "$(pods_cached)" = "$ns/cache-0 $ns/cache-1 $ns/cache-2 "
check "a pod without the managed-by label is not cached" test "$(jq -r 'select(.kind=="Pod" and .key=="'"$ns"'/stray") | .key' "$work/sub.jsonl" | wc -l)" = 0
check "pods are cached compact (spec: nodeName only, no containers)" \
    test "$(jq -c 'select(.kind=="Pod") | .object.spec | keys' "$work/sub.jsonl" | sort -u)" = '["nodeName"]'
check "status keeps podIP and phase" \
    test "$(jq -r 'select(.kind=="Pod" and .key=="'"$ns"'/cache-0") | .object.status.podIP' "$work/sub.jsonl" | tail -1)" = "$(pod_ip cache-0)"
check "informer_cache_synced{kind=\"Pod\"} 1" grep -q '^informer_cache_synced{kind="Pod"} 1' "$work/rt/metrics/informerd.prom"

# Real Redis on each pod IP: cache-0 primary, the others its replicas.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
for i in 0 1 2; do
    ip[$i]=$(pod_ip cache-$i)
    redis-server --bind "${ip[$i]}" --port "$port" --save '' --appendonly no --repl-diskless-sync-delay 0 \
        --dir "$work" --logfile "$work/redis-$i.log" --daemonize no &
    redis_pids[$i]=$!
done
for i in 0 1 2; do wait_until 10 redis-cli -h "${ip[$i]}" -p "$port" ping; done
for i in 1 2; do redis-cli -h "${ip[$i]}" -p "$port" replicaof "${ip[0]}" "$port" >/dev/null; done
check "both replicas linked" wait_until 20 sh -c "redis-cli -h ${ip[0]} -p $port info replication | grep -q '^connected_slaves:2'"

"$BIN/observerd" --kubeconfig "$KUBECONFIG" --runtime-dir "$work/rt" --redis-port "$port" --log-format text \
    >"$work/observerd.log" 2>&1 &
obs_pid=$!
prom=$work/rt/metrics/observerd.prom
m() { # m METRIC POD: its value in observerd's metrics file, or "none"
    local v
    v=$(grep "^$1{namespace=\"$ns\",rediscluster=\"cache\",pod=\"$2\"} " "$prom" 2>/dev/null | awk '{print $NF}')
    echo "${v:-none}"
}
check "observerd reports all 3 pods up" wait_until 15 sh -c "for p in cache-0 cache-1 cache-2; do grep -q \"^rdc_redis_up{namespace=\\\"$ns\\\",rediscluster=\\\"cache\\\",pod=\\\"\$p\\\"} 1\" $prom || exit 1; done"
for i in 0 1 2; do
    role=$(redis-cli -h "${ip[$i]}" -p "$port" info replication | tr -d '\r' | sed -n 's/^role://p')
    want=$([ "$role" = master ] && echo 1 || echo 0)
    check "cache-$i: rdc_redis_role $(m rdc_redis_role cache-$i) matches redis-cli's role:$role" test "$(m rdc_redis_role cache-$i)" = "$want"
done
slaves_is() { test "$(m redis_connected_slaves cache-0)" = "$1"; }
check "redis_connected_slaves on the primary is 2" wait_until 10 slaves_is 2
check "informerd stored observerd's observation" wait_until 10 grep -q '^informer_observations_total{result="stored"} [1-9]' "$work/rt/metrics/informerd.prom"

"$BIN/observerd" --kubeconfig "$KUBECONFIG" --once "$ns/cache" --redis-port "$port" >"$work/once.json" 2>"$work/once.log"
once=$(jq -r '[.nodes[] | "\(.pod)=\(.role):\(.linkUp):\(.reachable)"] | sort | join(" ")' "$work/once.json")
check "observerd --once: one primary, two linked replicas ($once)" \
    test "$once" = "cache-0=master:false:true cache-1=slave:true:true cache-2=slave:true:true"

# Observations make reconciles, never writes.
sleep 3
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
up_is() { test "$(m rdc_redis_up "$1")" = "$2"; }
kill -STOP "${redis_pids[0]}"
t0=$(date +%s%N)
for _ in $(seq 1 50); do up_is cache-0 0 && break; sleep 0.1; done
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
echo "# SIGSTOP of the primary: rdc_redis_up 0 after ${ms} ms"
check "a SIGSTOPped primary shows rdc_redis_up 0 within 3 s (${ms} ms)" test "$(m rdc_redis_up cache-0)" = 0 -a "$ms" -lt 3000
check "the replicas stay up" test "$(m rdc_redis_up cache-1)$(m rdc_redis_up cache-2)" = 11
check "observerd said so" grep -q 'reachable true->false' "$work/observerd.log"
sleep 2
kill -CONT "${redis_pids[0]}"
check "SIGCONT: up again" wait_until 5 up_is cache-0 1
sleep 3
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
check "the observations' reconciles wrote nothing ($w0 -> $w1)" test "$w1" = "$w0"
stored=$(sed -n 's/^informer_observations_total{result="stored"} //p' "$work/rt/metrics/informerd.prom")
check "observations stored: $stored (first, down, still down, back)" test "${stored:-0}" -ge 3

if [ "$failed" -gt 0 ]; then
    echo "--- operator log (last 30 lines)"; tail -30 "$work/operator.log"
    echo "--- observerd log (last 30 lines)"; tail -30 "$work/observerd.log"
    echo "--- observerd --once stderr"; cat "$work/once.log" "$work/once.json"
fi
summary
