# bench/lib_cluster.sh: the start bench/cluster.sh and bench/reshard.sh share. Sourced from
# the top of the checkout with `top` set; bench_cluster_start NAME DIR CIDR exports the
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
