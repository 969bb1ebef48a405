#!/usr/bin/env bash
# End to end: planned switchover (issue 15, docs/failover.md "Planned switchover") on the
# pod runtime (real redis-server processes). One RedisCluster "cache" (Replication, size
# 3, downAfter 3s), bench/ackwriter writing SET k_i + WAIT 1 100 to the pod labelled
# primary (the label sampler's file), the label sampler looking every 100 ms. Scenarios:
#   1. a rolling config change (spec.config.extra databases: a directive that rolls the
#      pods): the StatefulSet rolls OnDelete and the operator restarts the replicas one at
#      a time, hands the primary role over with FAILOVER (Event SwitchedOver), then
#      restarts the old primary; no failover (no new FailedOver Event);
#   2. kubectl delete pod <primary>: the preStop hook holds the primary while the operator
#      hands its role over (SwitchedOver naming it), no failover;
#   3. kubectl drain of the primary's node (when it holds the primary alone): the same.
# After each: 0 acknowledged writes lost (ackwriter verify on the new primary), one pod
# labelled primary, every pod on the StatefulSet's updateRevision; the write
# unavailability (longest time between two acknowledged writes across a failure) printed.
# At the end: the sampler never saw two pods labelled primary at once.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"

if [ "$(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null | wc -l)" -eq 0 ]; then
    echo "# SKIP: the cluster in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} has no process nodes;"
    echo "#       start it with RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up (run.sh does)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

ns=rdc-e2e-sw-$$
e2e_setup switchover "$ns"
cleanup_more() {
    fo_writer_stop "$work/w" >/dev/null
    fo_label_sampler_stop "$work/w" >/dev/null
    local n
    for n in $(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null); do
        kubectl uncordon "${n#node/}" >/dev/null 2>&1
    done
}
check "ackwriter built" fo_build
check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
kubectl apply -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: cache, namespace: $ns}
spec: {size: 3, image: redis, version: "7.2", mode: Replication, failover: {downAfter: 3s}}
YAML
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"

pod_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
info() { redis-cli -h "$(pod_ip "$1")" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }
primary() { kubectl -n "$ns" get rdc cache -o jsonpath='{.status.primary}'; }
labelled() { kubectl -n "$ns" get pods -l cache.example.com/role=primary -o name | sed 's|pod/||' | tr '\n' ' '; }
healthy() { kubectl -n "$ns" get rdc cache -o json | jq -e '.status.conditions[] | select(.type=="ReplicationHealthy" and .status=="True")' >/dev/null; }
settled() {
    local p ip n; p=$(primary); ip=$(pod_ip "$p")
    [ -n "$p" ] && [ "$(info "$p" role)" = master ] && [ "$(labelled)" = "$p " ] || return 1
    for n in cache-0 cache-1 cache-2; do
        [ "$n" = "$p" ] && continue
        [ "$(info "$n" role)" = slave ] && [ "$(info "$n" master_host)" = "$ip" ] &&
            [ "$(info "$n" master_link_status)" = up ] || return 1
    done
    healthy
}
# updated: every pod runs the StatefulSet's updateRevision.
updated() {
    local rev n
    rev=$(kubectl -n "$ns" get sts cache -o jsonpath='{.status.updateRevision}')
    [ -n "$rev" ] || return 1
    for n in cache-0 cache-1 cache-2; do
        [ "$(kubectl -n "$ns" get pod "$n" -o jsonpath='{.metadata.labels.controller-revision-hash}' 2>/dev/null)" = "$rev" ] || return 1
    done
}
# events REASON: how many times the Event REASON was recorded (counts summed).
events() { kubectl -n "$ns" get events --field-selector "reason=$1" -o json | jq '[.items[] | (.count // 1)] | add // 0'; }
event_names() { kubectl -n "$ns" get events --field-selector "reason=$1" -o json | jq -r '.items[].message' | grep -c -- "$2"; }
# unavailability T0: the longest time (ms) from the last acknowledged write before a
# failure to the next acknowledged write, over the writer's failures after T0.
unavailability() {
    python3 - "$work/w/events.jsonl" "$1" <<'PY'
import json, sys
path, t0 = sys.argv[1], int(sys.argv[2])
worst, last_fail = 0, None
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e["t"] < t0:
        continue
    if e.get("ev") == "fail" and last_fail is None:
        last_fail = e.get("last_ack") or e["t"]
    elif e.get("ev") == "ack" and last_fail is not None:
        worst = max(worst, e["t"] - last_fail)
        last_fail = None
print(worst)
PY
}
export -f pod_ip info primary labelled healthy settled updated
export ns

check "cache is Running" wait_until 300 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
check "settled: one primary, two linked replicas" wait_until 90 settled
check "the StatefulSet rolls OnDelete" test "$(kubectl -n "$ns" get sts cache -o jsonpath='{.spec.updateStrategy.type}')" = OnDelete
# announced: the primary lists every replica at its pod IP.
announced() {
    local p n; p=$(primary)
    for n in cache-0 cache-1 cache-2; do
        [ "$n" = "$p" ] && continue
        redis-cli -h "$(pod_ip "$p")" info replication | grep -q "^slave[0-9]*:ip=$(pod_ip "$n"),port=6379," || return 1
    done
}
check "replicas announce their pod IP (FAILOVER TO finds them)" announced

fo_label_sampler_start "$work/w" "$ns"
check "the label sampler names the primary" wait_until 10 test -s "$work/w/primary.addr"
fo_writer_start "$work/w" --resolve-file "$work/w/primary.addr" --prefix sw_
check "the writer's writes are acknowledged" wait_until 15 sh -c "test \"\$(wc -l <$work/w/acks.txt)\" -ge 100"

declare -a figures=()
# verified NAME: every acknowledged write so far is on the current primary.
verified() {
    local name=$1 p out rc; p=$(primary)
    out=$(fo_verify "$work/w" "$(pod_ip "$p"):6379"); rc=$?
    echo "# $name: verify on $p: $out"
    check "$name: every acknowledged write is on $p ($out)" test "$rc" = 0
}

# --- 1. a rolling config change -------------------------------------------------------
old=$(primary); t0=$(date +%s%3N); fo0=$(events FailedOver); sw0=$(events SwitchedOver)
rev0=$(kubectl -n "$ns" get sts cache -o jsonpath='{.status.updateRevision}')
echo "# --- rolling config change: primary $old, revision $rev0, $(fo_acked "$work/w") writes acknowledged so far"
kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"config":{"extra":{"databases":"32"}}}}' >/dev/null
check "rollout: a new revision" wait_until 30 sh -c "r=\$(kubectl -n $ns get sts cache -o jsonpath='{.status.updateRevision}'); [ -n \"\$r\" ] && [ \"\$r\" != $rev0 ]"
check "rollout: every pod on the new revision" wait_until 300 updated
check "rollout: settled" wait_until 90 settled
t1=$(date +%s%3N)
new=$(primary)
check "rollout: the primary role moved off $old (to $new)" test "$new" != "$old"
check "rollout: every pod runs databases 32" sh -c "for n in cache-0 cache-1 cache-2; do [ \"\$(redis-cli -h \$(kubectl -n $ns get pod \$n -o jsonpath='{.status.podIP}') config get databases | tail -1)\" = 32 ] || exit 1; done"
check "rollout: Event SwitchedOver ($sw0 -> $(events SwitchedOver))" test "$(events SwitchedOver)" -gt "$sw0"
check "rollout: the handover was by FAILOVER, from $old" test "$(event_names SwitchedOver "^switchover: $old hands")" -ge 1
check "rollout: no failover ($fo0 -> $(events FailedOver) FailedOver)" test "$(events FailedOver)" = "$fo0"
check "rollout: three pods restarted (Event RolledPod)" test "$(events RolledPod)" -ge 3
check "rollout: status.switchoverFrom cleared" test -z "$(kubectl -n "$ns" get rdc cache -o jsonpath='{.status.switchoverFrom}')"
check "rollout: writes acknowledged after it" wait_until 15 sh -c "test \"\$(wc -l <$work/w/acks.txt)\" -gt $(fo_acked "$work/w")"
verified "rollout"
u=$(unavailability "$t0")
figures+=("rolling config change: $(( (t1 - t0) / 1000 )) s, longest write unavailability ${u} ms, $(fo_acked "$work/w") acknowledged so far")
echo "# rollout: longest write unavailability $u ms"

# --- 2. kubectl delete pod <primary> --------------------------------------------------
old=$(primary); t0=$(date +%s%3N); fo0=$(events FailedOver); sw0=$(event_names SwitchedOver "^switchover: $old hands")
echo "# --- pod deleted: primary $old"
kubectl -n "$ns" delete pod "$old" --wait=false >/dev/null
check "pod deleted: status.primary moves off $old" wait_until 30 sh -c "p=\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.primary}'); [ -n \"\$p\" ] && [ \"\$p\" != $old ]"
check "pod deleted: writes acknowledged again" wait_until 60 fo_events_after "$work/w" ack "$t0"
check "pod deleted: settled again" wait_until 120 settled
check "pod deleted: handed over by FAILOVER from $old" test "$(event_names SwitchedOver "^switchover: $old hands")" -gt "$sw0"
check "pod deleted: no failover ($fo0 -> $(events FailedOver) FailedOver)" test "$(events FailedOver)" = "$fo0"
verified "pod deleted"
u=$(unavailability "$t0")
figures+=("kubectl delete pod of the primary: longest write unavailability ${u} ms")
echo "# pod deleted: longest write unavailability $u ms"

# --- 3. kubectl drain of the primary's node --------------------------------------------
old=$(primary); node=$(kubectl -n "$ns" get pod "$old" -o jsonpath='{.spec.nodeName}')
others=$(kubectl -n "$ns" get pods -o json | jq --arg n "$node" --arg p "$old" '[.items[] | select(.spec.nodeName == $n and .metadata.name != $p)] | length')
if [ "$others" != 0 ]; then
    echo "# drain: skipped ($node also runs $others other pod(s) of the set; the PodDisruptionBudget would hold the drain)"
else
    t0=$(date +%s%3N); fo0=$(events FailedOver); sw0=$(event_names SwitchedOver "^switchover: $old hands")
    echo "# --- drain of $node: primary $old"
    check "drain: kubectl drain $node" kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout=120s
    check "drain: status.primary moves off $old" wait_until 30 sh -c "p=\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.primary}'); [ -n \"\$p\" ] && [ \"\$p\" != $old ]"
    kubectl uncordon "$node" >/dev/null
    check "drain: settled again" wait_until 180 settled
    check "drain: handed over by FAILOVER from $old" test "$(event_names SwitchedOver "^switchover: $old hands")" -gt "$sw0"
    check "drain: no failover" test "$(events FailedOver)" = "$fo0"
    verified "drain"
    u=$(unavailability "$t0")
    figures+=("kubectl drain of the primary's node: longest write unavailability ${u} ms")
fi

stopline=$(fo_writer_stop "$work/w")
echo "# writer: $stopline"
labels=$(fo_label_sampler_stop "$work/w")
echo "# label sampler: $labels"
check "the label sampler ran ($labels)" sh -c "echo '$labels' | grep -q '^samples=[1-9]'"
check "never two pods labelled primary at once" sh -c "echo '$labels' | grep -q ' max=1 .*two_events=0'"
for f in "${figures[@]}"; do echo "# figure: $f"; done
summary
