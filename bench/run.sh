#!/usr/bin/env bash
# bench/run.sh: the rdc-operator benchmark (`make bench`; see bench/README.md).
#
# Brings the local control plane up (tests/cluster/cluster.sh, its own state dir), builds
# the raw-limit client, runs bench/bench.py, prints a markdown table on stdout and writes
# bench/results/<YYYY-MM-DD>-<shortsha>.json. Takes the cluster down afterwards if it
# started it (BENCH_KEEP_CLUSTER=1 keeps it).
#
# Knobs (environment or make variables):
#   N=100            RedisClusters of the main run (size 3 each)
#   WORKERS=2        workerd processes of the main run
#   BENCH_FULL=1     also: the workers sweep (SWEEP_N=100 clusters, SWEEP_WORKERS="1 2 4 8")
#                    and one run with N_FULL=1000 (plus its raw client run; RAW_FULL=0 skips it)
#   SCENARIOS="provisioner converge versus failover raw"   pick scenarios (add "sweep", "full")
#   VS_TRIALS=2 VS_N=N VS_QPS="20 -1"   the side-by-side runs with the controller-runtime
#                    peer (bench/peer): trials per side (alternated), N, and the QPS settings
#                    to run them at (default: QPS)
#   SYNC_PERIOD=30s  --sync-period of the operator (the steady-state phase waits for a resync)
#   QPS= BURST=      --kube-api-qps / --kube-api-burst of the operator (default: its own 20/30)
#   STORAGE=static   volume claims bound to pre-created, pre-bound PVs (no provisioner in the
#                    path); "dynamic": by the cluster's fake provisioner (see README)
#   RAW_CONCURRENCY=100 RAW_HTTP=2   the raw client's requests in flight and protocol
#   BENCH_CLUSTER_DIR=/tmp/rdc-cluster-bench   state dir of the control plane
#   CP_QPS_LIMITS=0  1 keeps kube-controller-manager's and kube-scheduler's default client
#                    QPS limits (20/30, 50/100); 0 lifts them (5000/10000, as kwokctl does)
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
export RDC_CLUSTER_DIR=${BENCH_CLUSTER_DIR:-/tmp/rdc-cluster-bench}
# the controller manager's and scheduler's own client QPS limits are lifted (as kwokctl
# --disable-qps-limits does) unless CP_QPS_LIMITS=1; takes effect when the bench starts the
# control plane
export RDC_CLUSTER_QPS_LIMITS=${CP_QPS_LIMITS:-0}
cluster=tests/cluster/cluster.sh
read -r la1 la5 la15 _ </proc/loadavg
echo "bench: load average at start: $la1 $la5 $la15 ($(nproc) cores)" >&2

# Always: make is incremental, and a tree built before the last commit would be measured
# under that commit's name (the results name the commit, not the binaries).
make -j2 all >&2 || exit 1
make -s -C bench >&2 || { echo "bench: cannot build bench/.build/rawapply" >&2; exit 1; }
# the controller-runtime peer of the side-by-side runs (scenario "versus"), built with the
# machine's Go into ~/.cache/rdc-operator/bench-peer-<key>/ (not in the checkout)
case " ${SCENARIOS:-versus} " in
*" versus "*)
    if PEER_BIN=$(bench/peer/build.sh | tail -n 1) && [ -x "$PEER_BIN" ]; then
        export PEER_BIN
    else
        echo "bench: cannot build bench/peer (Go with the module proxy needed); no side-by-side runs" >&2
    fi ;;
esac

started=0
cleanup() {
    if [ "$started" = 1 ] && [ "${BENCH_KEEP_CLUSTER:-0}" != 1 ]; then
        "$cluster" down >&2 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$cluster" status >/dev/null 2>&1 || started=1
if ! "$cluster" up >&2; then
    echo "bench: the local control plane did not come up; see $RDC_CLUSTER_DIR/logs" >&2
    exit 1
fi
eval "$("$cluster" env)"
kubectl apply -f crds/ >/dev/null || exit 1
# (kubectl wait errors at once while the new CRD has no status.conditions yet: try again)
for _ in 1 2 3 4 5; do
    kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com >/dev/null 2>&1 && break
    sleep 1
done
kubectl wait --for=condition=Established --timeout=5s crd/redisclusters.cache.example.com >/dev/null || exit 1

sha=$(git rev-parse --short HEAD 2>/dev/null || echo nogit)
day=$(date +%F)
mkdir -p bench/results
out=bench/results/$day-$sha.json
i=2
while [ -e "$out" ] && [ "${BENCH_OVERWRITE:-0}" != 1 ]; do
    out=bench/results/$day-$sha-$i.json
    i=$((i + 1))
done
work=$(mktemp -d /tmp/rdc-bench.XXXXXX)
export BENCH_OUT=$top/$out BENCH_COMMIT=$sha BENCH_DATE=$day BENCH_WORK=$work RDC_BIN=${RDC_BIN:-$top/build/bin}
# bench.py stops what it started (operators, watch processes, namespaces) on TERM/INT:
# pass ours on to it and wait (bounded) until it is done.
python3 bench/bench.py run &
py=$!
trap 'kill -TERM "$py" 2>/dev/null' INT TERM
wait "$py"
rc=$?
for _ in $(seq 1 120); do
    kill -0 "$py" 2>/dev/null || break
    sleep 0.5
done
wait "$py" 2>/dev/null && rc=0 || { r=$?; [ "$r" != 127 ] && rc=$r; }
trap 'exit 130' INT TERM
if [ -e "$out" ]; then
    echo "bench: results in $out (operator logs and watch streams in $work)" >&2
else
    echo "bench: no results file written (operator logs and watch streams in $work)" >&2
fi
exit $rc
