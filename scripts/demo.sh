#!/usr/bin/env bash
# The main job, end to end: bring up the local control plane (unless KUBECONFIG points
# at a cluster already), install the CRD, run the operator, apply a sample RedisCluster
# and show it converge. The operator keeps running in the foreground until Ctrl-C; the
# local cluster stays up afterwards so that you can look around with kubectl
# (tests/cluster/cluster.sh down stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
export PATH="/usr/local/go/bin:$PATH"

make -s all
if [ -z "${KUBECONFIG:-}" ]; then
    tests/cluster/cluster.sh up
    eval "$(tests/cluster/cluster.sh env)"
    echo "demo: using the local control plane: export KUBECONFIG=$KUBECONFIG"
else
    echo "demo: using KUBECONFIG=$KUBECONFIG"
fi

kubectl apply -f crds/
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com

log=$(mktemp -t rdc-operator.XXXXXX.log)
"$top/build/bin/supervisor" --kubeconfig "$KUBECONFIG" --workers 2 --log-format text \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$log" 2>&1 &
op=$!
sleep 1
if ! kill -0 "$op" 2>/dev/null; then
    wait "$op" || rc=$?
    echo "demo: the operator exited (code ${rc:-0}); its log:" >&2
    cat "$log" >&2
    echo "demo: the operator did not start (its log above says why); the cluster is up and" >&2
    echo "demo: the CRD installed: fix that and run this again." >&2
    exit 1
fi
trap 'kill -TERM $op 2>/dev/null; wait $op 2>/dev/null; echo "demo: operator stopped; log: $log"' EXIT

kubectl apply -f deploy/samples/rediscluster.yaml
echo "demo: watching the RedisCluster converge (Ctrl-C to stop; operator log: $log)"
timeout 300 kubectl get rdc cache -n default -w &
watcher=$!
for _ in $(seq 1 150); do
    phase=$(kubectl get rdc cache -n default -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [ "$phase" = Running ] && break
    sleep 2
done
kill "$watcher" 2>/dev/null || true
kubectl get rdc cache -n default
kubectl get statefulset,service,configmap,pods,pvc -n default -l app.kubernetes.io/instance=cache
echo "demo: phase is ${phase:-unknown}; the operator keeps running until Ctrl-C"
wait "$op"
