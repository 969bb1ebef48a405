# tests/e2e/lib_clustermode.sh: the harness of the scripts that run the Cluster-mode
# RedisCluster "cache" on process nodes under a bench/clusterwriter SET + WAIT 1 writer
# (test_cluster_mode.sh, test_reshard.sh). Source it after lib.sh and lib_failover.sh.

# cm_setup NAME NAMESPACE: e2e_setup NAME NAMESPACE, then CW (bench/clusterwriter, built:
# one check), a cleanup_more that stops the writer, NAMESPACE pinned to the process nodes
# (one check) and its default ServiceAccount waited for.
cm_setup() {
    e2e_setup "$1" "$2"
    CW=${RDC_CLUSTERWRITER:-$TOP/${BUILD:-build}/bench/clusterwriter}
    cleanup_more() { _fo_stop "$work/cw.pid" 5; }
    check "clusterwriter built" make -s -C "$TOP" BUILD="${BUILD:-build}" "${BUILD:-build}/bench/clusterwriter"
    check "cluster.sh pin-namespace $2" "$TOP/tests/cluster/cluster.sh" pin-namespace "$2"
    wait_until 20 kubectl -n "$2" get serviceaccount default
}

# The RedisCluster "cache" in $ns: its pods' names, a pod's IP, its object, every pod as a
# seed list (ip:6379,...).
pods() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=cache -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null; }
ip_of() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
status() { kubectl -n "$ns" get rdc cache -o json 2>/dev/null; }
seeds() { local p s=""; for p in $(pods); do s="$s${s:+,}$(ip_of "$p"):6379"; done; echo "$s"; }
cluster_check() { # redis-cli --cluster check from pod $1: covered, nothing open, no warning
    local out
    out=$(redis-cli --cluster check "$(ip_of "$1"):6379" 2>&1)
    grep -q '\[OK\] All 16384 slots covered' <<<"$out" && ! grep -qE '\[WARNING\]|\[ERR\]' <<<"$out"
}

# writer_start PREFIX: the writer (200 SET + WAIT 1 a second, keys PREFIX...) started, and
# one check that its writes are acknowledged; writer_stop stops it and prints its summary.
writer_start() {
    _fo_start "$work/cw.pid" "$work/cw.out" "$work/cw.err" "$CW" write --seeds "$(seeds)" \
        --acks "$work/acks.txt" --events "$work/events.jsonl" --prefix "$1" --rate 200 --replicas 1 --wait-ms 200
    check "the writer's writes are acknowledged" wait_until 15 bash -c "test \"\$(wc -l <$work/acks.txt 2>/dev/null || echo 0)\" -ge 100"
}
writer_stop() { _fo_stop "$work/cw.pid" 5; cat "$work/cw.out"; }
# verify_acks LABEL: one check that every write the writer had acknowledged reads back.
verify_acks() {
    local out
    out=$("$CW" verify --seeds "$(seeds)" --acks "$work/acks.txt" 2>&1)
    echo "# $1: verify: $out"
    check "$1: every acknowledged write is there ($out)" bash -c "echo '$out' | grep -q 'missing=0 wrong=0'"
}
# the longest time between two writes Redis accepted (SET +OK, WAIT aside): the pause a
# client sees; the writer retries a failed key, so a stall on one shard shows here
accept_gap_ms() { jq -s '[.[] | select(.ev == "stop") | .longest_gap_ms] | max // -1' "$work/events.jsonl"; }
