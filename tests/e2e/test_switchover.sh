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
#   3. kubectl drain of the primary's node (when it holds the primary alone): the same;
#   4. kubectl delete pod <primary> again, workerd SIGKILLed once status.switchoverFrom
#      shows the record: the restarted workerd finishes the handover.
# After each: 0 acknowledged writes lost (ackwriter verify on the new primary), one pod
# labelled primary, every pod on the StatefulSet's updateRevision; the write
# unavailability (longest time between two acknowledged writes across a failure) printed.
# At the end: the sampler never saw two pods labelled primary at once.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_replset.sh"

rs_require_process_nodes || exit 0

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
rs_start
export -f rs_ip rs_primary rs_labelled rs_settled rs_updated
export ns work

check "cache is Running" wait_until 300 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
check "settled: one primary, both replicas online at their pod IPs (FAILOVER TO finds them)" wait_until 90 rs_settled
check "the StatefulSet rolls OnDelete" test "$(kubectl -n "$ns" get sts cache -o jsonpath='{.spec.updateStrategy.type}')" = OnDelete

rs_writer_start sw_

declare -a figures=()
# verified NAME: every acknowledged write so far is on the current primary.
verified() {
    local name=$1 p out rc; p=$(rs_primary)
    out=$(fo_verify "$work/w" "$(rs_ip "$p"):6379"); rc=$?
    echo "# $name: verify on $p: $out"
    check "$name: every acknowledged write is on $p ($out)" test "$rc" = 0
}

# --- 1. a rolling config change -------------------------------------------------------
old=$(rs_primary); t0=$(date +%s%3N); fo0=$(rs_events FailedOver); sw0=$(rs_events SwitchedOver)
rev0=$(kubectl -n "$ns" get sts cache -o jsonpath='{.status.updateRevision}')
echo "# --- rolling config change: primary $old, revision $rev0, $(fo_acked "$work/w") writes acknowledged so far"
kubectl -n "$ns" patch rdc cache --type merge -p '{"spec":{"config":{"extra":{"databases":"32"}}}}' >/dev/null
check "rollout: a new revision" wait_until 30 sh -c "r=\$(kubectl -n $ns get sts cache -o jsonpath='{.status.updateRevision}'); [ -n \"\$r\" ] && [ \"\$r\" != $rev0 ]"
check "rollout: every pod on the new revision" wait_until 300 rs_updated
check "rollout: settled" wait_until 90 rs_settled
t1=$(date +%s%3N)
new=$(rs_primary)
check "rollout: the primary role moved off $old (to $new)" test "$new" != "$old"
check "rollout: every pod runs databases 32" sh -c "for n in cache-0 cache-1 cache-2; do [ \"\$(redis-cli -h \$(kubectl -n $ns get pod \$n -o jsonpath='{.status.podIP}') config get databases | tail -1)\" = 32 ] || exit 1; done"
check "rollout: Event SwitchedOver ($sw0 -> $(rs_events SwitchedOver))" test "$(rs_events SwitchedOver)" -gt "$sw0"
check "rollout: the handover was by FAILOVER, from $old" test "$(rs_event_count SwitchedOver "^switchover: $old hands")" -ge 1
check "rollout: no failover ($fo0 -> $(rs_events FailedOver) FailedOver)" test "$(rs_events FailedOver)" = "$fo0"
check "rollout: three pods restarted (Event RolledPod)" test "$(rs_events RolledPod)" -ge 3
check "rollout: status.switchoverFrom cleared" test -z "$(kubectl -n "$ns" get rdc cache -o jsonpath='{.status.switchoverFrom}')"
check "rollout: writes acknowledged after it" wait_until 15 sh -c "test \"\$(wc -l <$work/w/acks.txt)\" -gt $(fo_acked "$work/w")"
verified "rollout"
u=$(rs_unavailability "$work/w/events.jsonl" "$t0")
figures+=("rolling config change: $(( (t1 - t0) / 1000 )) s, longest write unavailability ${u} ms, $(fo_acked "$work/w") acknowledged so far")
echo "# rollout: longest write unavailability $u ms"

# handed_over NAME SETTLE_S: after $old's pod went away at $t0 ($fo0 FailedOver, $sw0
# SwitchedOver from $old before): status.primary moved, settled, handed over by FAILOVER,
# no failover, nothing lost; the unavailability goes to the figures.
handed_over() {
    local name=$1 u
    check "$name: status.primary moves off $old" wait_until 30 bash -c "p=\$(rs_primary); [ -n \"\$p\" ] && [ \"\$p\" != $old ]"
    check "$name: writes acknowledged again" wait_until 60 fo_events_after "$work/w" ack "$t0"
    check "$name: settled again" wait_until "$2" rs_settled
    check "$name: handed over by FAILOVER from $old (Events $sw0 -> $(rs_event_count SwitchedOver "^switchover: $old hands"), operator log $swlog0 -> $(op_failovers_from "$old"))" \
        sh -c "[ -s '$work/operator.log' ] && { [ $(rs_event_count SwitchedOver "^switchover: $old hands") -gt $sw0 ] || [ $(op_failovers_from "$old") -gt $swlog0 ]; }"
    check "$name: no failover ($fo0 -> $(rs_events FailedOver) FailedOver, $prom0 -> $(op_promotions) promotions)" \
        sh -c "[ -s '$work/operator.log' ] && [ -n '$fo0' ] && [ $(rs_events FailedOver) = $fo0 ] && [ $(op_promotions) = $prom0 ]"
    verified "$name"
    u=$(rs_unavailability "$work/w/events.jsonl" "$t0")
    figures+=("$name: longest write unavailability ${u} ms")
    echo "# $name: longest write unavailability $u ms"
}
# Events are sent asynchronously (client-go's recorder does the same): a workerd killed
# right after a command can take its Event with it. The operator's own log line of each
# Redis command is written before the next step, so it is read too.
op_failovers_from() { grep -F '"command":"FAILOVER"' "$work/operator.log" | grep -cF "switchover: $1 hands"; }
op_promotions() { grep -F '"redis command done"' "$work/operator.log" | grep -cF 'promoted to primary (REPLICAOF NO ONE)'; }
# before_loss: note the primary, the Event counts and the logged commands before its pod
# goes.
before_loss() {
    old=$(rs_primary); t0=$(date +%s%3N); fo0=$(rs_events FailedOver)
    sw0=$(rs_event_count SwitchedOver "^switchover: $old hands")
    swlog0=$(op_failovers_from "$old"); prom0=$(op_promotions)
}

# --- 2. kubectl delete pod <primary> --------------------------------------------------
before_loss
echo "# --- pod deleted: primary $old"
kubectl -n "$ns" delete pod "$old" --wait=false >/dev/null
handed_over "kubectl delete pod of the primary" 120

# --- 3. kubectl drain of the primary's node --------------------------------------------
before_loss
node=$(kubectl -n "$ns" get pod "$old" -o jsonpath='{.spec.nodeName}')
others=$(kubectl -n "$ns" get pods -o json | jq --arg n "$node" --arg p "$old" '[.items[] | select(.spec.nodeName == $n and .metadata.name != $p)] | length')
if [ "$others" != 0 ]; then
    echo "# drain: skipped ($node also runs $others other pod(s) of the set; the PodDisruptionBudget would hold the drain)"
else
    echo "# --- drain of $node: primary $old"
    check "drain: kubectl drain $node" kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout=120s
    kubectl uncordon "$node" >/dev/null
    handed_over "kubectl drain of the primary's node" 180
fi

# --- 4. workerd SIGKILLed once the handover is recorded --------------------------------
# The kill lands after the record (status.switchoverFrom set), before or after the
# FAILOVER: the restarted workerd carries on from what it observes, and the outcome is the
# same (one primary, handed over by FAILOVER, no failover, nothing lost).
before_loss
echo "# --- pod deleted, workerd killed after the record: primary $old"
kubectl -n "$ns" delete pod "$old" --wait=false >/dev/null
if wait_until 20 bash -c "[ -n \"\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.switchoverFrom}')\" ]"; then
    pids=$(pgrep -P "$sup_pid" -x workerd | tr '\n' ' ')
    echo "# the record is there: killing workerd ($pids)"
    [ -n "$pids" ] && kill -KILL $pids
else
    echo "# status.switchoverFrom never seen (the handover was quicker than the poll)"
fi
handed_over "workerd killed after the record" 120

rs_writer_stop
for f in "${figures[@]}"; do echo "# figure: $f"; done
summary
