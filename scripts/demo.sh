#!/usr/bin/env bash
# The main job, end to end: bring up the local control plane (unless KUBECONFIG points
# at a cluster already), install the CRD, run the operator, apply a sample RedisCluster
# and show it converge. The operator keeps running in the foreground until Ctrl-C (or,
# with RDC_DEMO_EXIT=1, the demo stops it and exits 0 once the sample is Running); the
# local cluster stays up afterwards so that you can look around with kubectl
# (tests/cluster/cluster.sh down stops it).
#
# Every long wait says what it waits for every RDC_DEMO_PROGRESS seconds (10): another
# process's control-plane build, the control plane, the operator, the RedisCluster.
#
# Another operator of yours on this machine: the supervisor is started without
# --runtime-dir, so when another supervisor holds the default runtime directory it takes
# the first free one beside it and says which. RDC_RUNTIME_DIR=DIR uses DIR instead.
# The operator campaigns for the Lease "rdc-demo" in the default namespace, so two demos
# against one cluster take turns instead of writing at the same time.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
every=${RDC_DEMO_PROGRESS:-10}

say() { echo "demo: $*"; }

# Pid holding an flock on FILE (from /proc/locks, by inode), or nothing.
lock_holder() {
    local ino
    ino=$(stat -c %i "$1" 2>/dev/null) || return 0
    awk -v ino="$ino" '$2 != "->" { split($6, d, ":"); if (d[3] == ino) { print $5; exit } }' /proc/locks
}
# Is PID this shell or one of its descendants?
ours() {
    local p=$1
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        [ "$p" = $$ ] && return 0
        p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
    done
    return 1
}
cmd_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-80 || true; }

# What `cluster.sh up` is waiting for right now, in one line.
cluster_waits_for() {
    local bindir dest key lock pid
    bindir=$(tests/cluster/build.sh --bin-dir 2>/dev/null) || bindir=
    dest=${bindir%/bin}
    key=${dest##*/}
    lock="${dest%/*}/.lock-$key"
    if [ -n "$bindir" ] && [ ! -f "$dest/.complete" ]; then
        pid=$(lock_holder "$lock")
        if [ -n "$pid" ] && ! ours "$pid"; then
            local who="pid $pid, not visible from here"
            [ -r "/proc/$pid/cmdline" ] &&
                who="pid $pid: $(cmd_of "$pid"), running for $(( $(ps -o etimes= -p "$pid" 2>/dev/null || echo 0) / 60 )) min"
            echo "another process's control-plane build ($who; lock $lock); a cold build takes about 21 min on 2 cores"
        else
            echo "the control-plane build into $dest (about 21 min on 2 cores, once per machine)"
        fi
        return
    fi
    pid=$(lock_holder "${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}.lock")
    if [ -n "$pid" ] && ! ours "$pid"; then
        echo "another cluster.sh (pid $pid) working on ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}"
        return
    fi
    echo "the local control plane to come up (logs in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}/logs)"
}

# run_waiting DESCRIBE-FN CMD...: run CMD; while it runs, print what DESCRIBE-FN says it
# waits for every $every seconds. Returns CMD's status.
run_waiting() {
    local describe=$1 start=$SECONDS next pid rc=0
    shift
    "$@" &
    pid=$!
    next=$((SECONDS + every))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$next" ]; then
            say "waiting $((SECONDS - start)) s for $($describe)"
            next=$((SECONDS + every))
        fi
        sleep 1
    done
    wait "$pid" || rc=$?
    return "$rc"
}

make -s all
if [ -z "${KUBECONFIG:-}" ]; then
    say "bringing up the local control plane (${RDC_CLUSTER_DIR:-/tmp/rdc-cluster})"
    # Three process nodes: the sample's pods run real redis-server processes, so the
    # operator manages a real primary and its replicas (tests/cluster/README.md).
    export RDC_CLUSTER_PROCESS_NODES=${RDC_CLUSTER_PROCESS_NODES:-3}
    run_waiting cluster_waits_for tests/cluster/cluster.sh up
    eval "$(tests/cluster/cluster.sh env)"
    if ! tests/cluster/cluster.sh pin-namespace default 2>/dev/null; then
        say "this local control plane has no process nodes (it was up already): the sample's pods have no Redis behind them, so its status will say the primary cannot be reached"
    fi
    say "using the local control plane: export KUBECONFIG=$KUBECONFIG"
else
    say "using KUBECONFIG=$KUBECONFIG"
fi

kubectl apply -f crds/
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com

log=$(mktemp -t rdc-operator.XXXXXX.log)
rtflag=()
[ -n "${RDC_RUNTIME_DIR:-}" ] && rtflag=(--runtime-dir "$RDC_RUNTIME_DIR")
"$top/build/bin/supervisor" --kubeconfig "$KUBECONFIG" --workers 2 --log-format text \
    --leader-elect --leader-election-id rdc-demo --leader-election-namespace default \
    ${rtflag[@]+"${rtflag[@]}"} \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$log" 2>&1 &
op=$!
trap 'kill -TERM $op 2>/dev/null; wait $op 2>/dev/null; echo "demo: operator stopped; log: $log"' EXIT

# Started means: it logged its runtime directory (and is still alive).
rt=
for _ in $(seq 1 50); do
    rt=$(sed -n 's/.*"supervisor started".* runtime_dir=\([^ ]*\).*/\1/p' "$log" | head -1)
    [ -n "$rt" ] && break
    kill -0 "$op" 2>/dev/null || break
    sleep 0.2
done
if [ -z "$rt" ] || ! kill -0 "$op" 2>/dev/null; then
    trap - EXIT
    kill -TERM "$op" 2>/dev/null || true
    wait "$op" || rc=$?
    echo "demo: the operator exited (code ${rc:-0}); its log:" >&2
    cat "$log" >&2
    echo "demo: the operator did not start (its log above says why); the cluster is up and" >&2
    echo "demo: the CRD installed: fix that and run this again (RDC_RUNTIME_DIR=DIR picks" >&2
    echo "demo: the runtime directory)." >&2
    exit 1
fi
grep -q 'another supervisor holds the default runtime directory' "$log" &&
    say "another operator of yours holds the default runtime directory: this one uses $rt"
say "operator running (pid $op, log $log); $(grep -o '"serving [a-z ]*" addr=[^ ]*' "$log" | tr -d '"' | paste -sd ';' | sed 's/;/; /g')"
say "its processes: build/bin/supervisor ctl --runtime-dir $rt status"

kubectl apply -f deploy/samples/rediscluster.yaml
say "watching the RedisCluster converge (Ctrl-C to stop; operator log: $log)"
timeout 300 kubectl get rdc cache -n default -w &
watcher=$!
phase=
start=$SECONDS
next=$((SECONDS + every))
while [ $((SECONDS - start)) -lt 300 ]; do
    phase=$(kubectl get rdc cache -n default -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [ "$phase" = Running ] && break
    if [ "$SECONDS" -ge "$next" ]; then
        ready=$(kubectl get rdc cache -n default -o jsonpath='{.status.readyReplicas}/{.spec.size}' 2>/dev/null || true)
        what="RedisCluster default/cache to be Running (phase ${phase:-none yet}, ready ${ready:-?})"
        if ! grep -q '"became leader"' "$log"; then
            holder=$(kubectl get lease rdc-demo -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
            what="$what; this operator does not lead yet: the Lease default/rdc-demo is held by ${holder:-nobody} (another demo's operator reconciles meanwhile)"
        fi
        say "waiting $((SECONDS - start)) s for $what"
        next=$((SECONDS + every))
    fi
    sleep 2
done
kill "$watcher" 2>/dev/null || true
kubectl get rdc cache -n default
kubectl get statefulset,service,configmap,pods,pvc -n default -l app.kubernetes.io/instance=cache
if [ "${RDC_DEMO_EXIT:-0}" = 1 ]; then
    say "phase is ${phase:-unknown}; stopping the operator (RDC_DEMO_EXIT=1)"
    [ "$phase" = Running ]
    exit
fi
say "phase is ${phase:-unknown}; the operator keeps running until Ctrl-C"
wait "$op"
