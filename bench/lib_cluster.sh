# bench/lib_cluster.sh: the start bench/cluster.sh and bench/reshard.sh share (bench/failover.sh
# uses bench_cluster_up, bench_crds and json_line). Sourced from the top of the checkout with `top` set;
# bench_cluster_start NAME DIR CIDR exports the
# control plane's settings (the caller's CB_CLUSTER_DIR, else RDC_CLUSTER_DIR, else DIR;
# RDC_POD_CIDR, else CIDR; three process nodes), sets cluster, BIN and CW, sources the e2e
# helpers, defines log (prefixed NAME-bench) and now_ms, and builds the daemons and
# bench/clusterwriter (exit 1 when that fails).
bench_cluster_start() {
    local name=$1
    export RDC_CLUSTER_DIR=${CB_CLUSTER_DIR:-${RDC_CLUSTER_DIR:-$2}}
    export RDC_CLUSTER_PROCESS_NODES=3
    export RDC_POD_CIDR=${RDC_POD_CIDR:-$3}
    export TOP=$top
    cluster=$top/tests/cluster/cluster.sh
    BIN=${RDC_BIN:-$top/build/bin}
    CW=${CLUSTERWRITER:-$top/${BUILD:-build}/bench/clusterwriter}
    # shellcheck source=../tests/e2e/lib.sh
    . tests/e2e/lib.sh
    # shellcheck source=../tests/e2e/lib_failover.sh
    . tests/e2e/lib_failover.sh
    eval "log() { echo \"$name-bench: \$*\" >&2; }"
    now_ms() { date +%s%3N; }
    make -s BUILD="${BUILD:-build}" all "${BUILD:-build}/bench/clusterwriter" >&2 || { log "build failed"; exit 1; }
}

# bench_cluster_up: the control plane up, called once the caller's EXIT trap (which takes it
# down when started is 1) is set: logs the load average at start (la1 la5 la15 are left
# set) and the work dir $work; sets started=1 when the control plane was not up; takes its
# environment (KUBECONFIG, PATH); exit 1, logged, when it does not come up or has fewer
# than three process nodes.
bench_cluster_up() {
    read -r la1 la5 la15 _ </proc/loadavg
    log "load average at start: $la1 $la5 $la15 ($(nproc) cores); work dir $work"
    "$cluster" status >/dev/null 2>&1 || started=1
    "$cluster" up >&2 || { log "the local control plane did not come up"; exit 1; }
    eval "$("$cluster" env)"
    [ "$(kubectl get nodes -l rdc.local/process-node=true -o name | wc -l)" -ge 3 ] ||
        { log "no process nodes in $RDC_CLUSTER_DIR (it was up without RDC_CLUSTER_PROCESS_NODES=3: take it down)"; exit 1; }
}

# bench_crds [PLURAL...]: this checkout's CRDs applied and those named (default
# redisclusters) Established; 1 when not within 60 s. (kubectl wait fails at once, "<nil>
# is of the type <nil>", while a CRD just created has no status.conditions yet: wait_until
# asks again.)
bench_crds() {
    local crds=() c
    for c in "${@:-redisclusters}"; do crds+=("crd/$c.cache.example.com"); done
    kubectl apply -f crds/ >/dev/null &&
        wait_until 60 kubectl wait --for=condition=Established --timeout=10s "${crds[@]}"
}

# json_line KEY=VALUE...: one JSON object on stdout, a member a pair (a value that is an
# integer stays a number).
json_line() {
    python3 - "$@" <<'PY'
import json, sys
d = {}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    try:
        d[k] = int(v)
    except ValueError:
        d[k] = v
print(json.dumps(d))
PY
}
