# tests/e2e/lib_replset.sh: a Replication RedisCluster "cache" of 3 pods on the process
# nodes and what a test reads of it (source after lib.sh; uses $ns, $work, $BIN, $TOP).
#
#   rs_require_process_nodes 0 when the cluster has process nodes; else prints the SKIP
#                            lines of a test that needs them and returns 1
#   rs_start [SPEC]          pin $ns to the process nodes, create cache (size
#                            ${RS_SIZE:-3}, Replication, downAfter 3s, and the lines SPEC
#                            adds to its spec, indented two spaces), start the operator
#                            for $ns
#   rs_writer_start PREFIX   the label sampler (lib_failover.sh) on $ns into $work/w, and
#                            ackwriter writing PREFIX<i> to the pod it names; checks that
#                            100 writes are acknowledged
#   rs_writer_stop           stop both, print their summaries, check that the sampler
#                            ran and never saw two pods labelled primary at once
#   rs_ip POD                the pod's IP
#   rs_primary               status.primary
#   rs_labelled              the pods labelled role=primary, "a b "
#   rs_settled [N]           status.primary answers role master, lists each other pod of
#                            cache-0..N-1 (N default 3) as an online replica at its pod
#                            IP, is the only pod labelled primary, and ReplicationHealthy
#                            is True
#   rs_linked FIELD          status.primary says role master, is the only pod labelled
#                            primary, and each other pod of cache-0..2 says role slave,
#                            master_host its IP and master_link_status up, as read by
#                            the caller's FIELD POD NAME (a field of INFO replication)
#   rs_updated               every pod runs the StatefulSet's status.updateRevision
#   rs_events REASON         how many times the Event REASON was recorded (counts summed)
#   rs_event_count REASON RE how many Events REASON have a message matching RE
#   rs_unavailability FILE T0  the longest time (ms) from the last acknowledged write
#                            before a failure to the next acknowledged one, over the
#                            writer's events (FILE, ackwriter --events) from T0 on
rs_require_process_nodes() {
    [ "$(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null | wc -l)" -gt 0 ] && return 0
    echo "# SKIP: the cluster in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} has no process nodes;"
    echo "#       start it with RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up (run.sh does)"
    echo "0 passed, 0 failed, 1 skipped"
    return 1
}
rs_start() {
    check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
    wait_until 20 kubectl -n "$ns" get serviceaccount default
    rc_apply_replication cache "$ns" 3s "${1:-}"
    sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
}
rs_writer_start() {
    fo_label_sampler_start "$work/w" "$ns"
    check "the label sampler names the primary" wait_until 10 test -s "$work/w/primary.addr"
    fo_writer_start "$work/w" --resolve-file "$work/w/primary.addr" --prefix "$1"
    check "the writer's writes are acknowledged" wait_until 15 sh -c "test \"\$(wc -l <$work/w/acks.txt)\" -ge 100"
}
rs_writer_stop() {
    local stopline labels
    stopline=$(fo_writer_stop "$work/w")
    echo "# writer: $stopline"
    labels=$(fo_label_sampler_stop "$work/w")
    echo "# label sampler: $labels"
    check "the label sampler ran ($labels)" sh -c "echo '$labels' | grep -q '^samples=[1-9]'"
    check "never two pods labelled primary at once" sh -c "echo '$labels' | grep -q ' max=1 .*two_events=0'"
}
rs_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
rs_primary() { kubectl -n "$ns" get rdc cache -o jsonpath='{.status.primary}' 2>/dev/null; }
rs_labelled() { kubectl -n "$ns" get pods -l cache.example.com/role=primary -o name | sed 's|pod/||' | tr '\n' ' '; }
rs_linked() {
    local f=$1 p ip n; p=$(rs_primary); ip=$(rs_ip "$p")
    [ -n "$p" ] && [ "$("$f" "$p" role)" = master ] && [ "$(rs_labelled)" = "$p " ] || return 1
    for n in cache-0 cache-1 cache-2; do
        [ "$n" = "$p" ] && continue
        [ "$("$f" "$n" role)" = slave ] && [ "$("$f" "$n" master_host)" = "$ip" ] &&
            [ "$("$f" "$n" master_link_status)" = up ] || return 1
    done
}
rs_settled() {
    local p text n
    p=$(rs_primary)
    [ -n "$p" ] && [ "$(rs_labelled)" = "$p " ] || return 1
    text=$(redis-cli -h "$(rs_ip "$p")" info replication 2>/dev/null | tr -d '\r')
    grep -qx 'role:master' <<<"$text" || return 1
    for n in $(seq -f 'cache-%g' 0 $((${1:-3} - 1))); do
        [ "$n" = "$p" ] || grep -q "^slave[0-9]*:ip=$(rs_ip "$n"),port=6379,state=online," <<<"$text" || return 1
    done
    kubectl -n "$ns" get rdc cache -o json |
        jq -e '[.status.conditions[] | select(.type == "ReplicationHealthy")][0].status == "True"' >/dev/null
}
rs_updated() {
    kubectl -n "$ns" get sts cache -o json >"$work/sts.json" 2>/dev/null || return 1
    kubectl -n "$ns" get pods -o json | jq -e --slurpfile s "$work/sts.json" '
        ($s[0].status.updateRevision // "") as $rev | $rev != "" and
        ([.items[] | select(.metadata.name | test("^cache-[0-2]$"))] | length == 3 and
         all(.metadata.labels["controller-revision-hash"] == $rev))' >/dev/null
}
rs_events() {
    kubectl -n "$ns" get events --field-selector "reason=$1" -o json | jq '[.items[] | (.count // 1)] | add // 0'
}
rs_event_count() {
    kubectl -n "$ns" get events --field-selector "reason=$1" -o json | jq -r '.items[].message' | grep -c -- "$2"
}
rs_unavailability() {
    python3 - "$1" "$2" <<'PY'
import json, sys
path, t0 = sys.argv[1], int(sys.argv[2])
worst, since = 0, None
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e["t"] < t0:
        continue
    if e.get("ev") == "fail" and since is None:
        since = e.get("last_ack") or e["t"]
    elif e.get("ev") == "ack" and since is not None:
        worst = max(worst, e["t"] - since)
        since = None
print(worst)
PY
}
