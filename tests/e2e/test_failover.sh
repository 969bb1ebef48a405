#!/usr/bin/env bash
# End to end: failover by the operator (issue 15, docs/failover.md) on the pod runtime
# (real redis-server processes). One RedisCluster "cache" (Replication, size 3, downAfter
# 3s), with bench/ackwriter writing SET k_i + WAIT 1 100 to the pod labelled primary (the
# label sampler's file, so clients follow the label as a Service would) and the label
# sampler looking every 100 ms. Scenarios, one after another, each on the primary of the
# moment:
#   1. SIGKILL of its redis-server (cluster.sh pod-kill);
#   2. SIGSTOP of it (pod-freeze), failover, then SIGCONT (pod-thaw): it must come back as
#      a replica of the new primary, never taking writes as a primary;
#   3. deletion of its pod (kubectl delete pod): a failover, or the successor keeps the
#      role when the replicas already resynchronised from it (same IP on the pod runtime);
#   4. loss of its node (cluster.sh node-lose: heartbeats stop, the node's processes are
#      SIGKILLed): its Redis unreachable, a failover, the node NotReady, only the new
#      primary labelled; then node-restore: the old primary back as a replica;
#   5. workerd stopped in the MIDDLE of a failover: a watch on status.primary SIGSTOPs
#      every workerd the moment the election is recorded (status.primary moved, with the
#      FailedOver Event) and checks that the elected pod is still a replica (the
#      promotion, the next reconcile, not done), then SIGKILLs them: the restarted
#      workerd promotes it, exactly once (one more "MASTER MODE enabled" in the elected
#      Redis's log, none in the other replica's). Up to 3 attempts, as the window is tens
#      of ms; a check says whether one landed;
#   6. observerd SIGKILLed 1.5 s after the primary: the new one gathers its own evidence
#      (or the dead one's last report, at most 1 s old, already holds downAfter);
#   7. every pod's redis-server killed at once.
# After each: exactly one pod labelled primary and it is status.primary, the old primary a
# linked replica of it, every acknowledged write readable on it (ackwriter verify), the
# time from the kill to the first write the new primary accepted. At the end: the label
# sampler never saw two pods labelled primary at the same moment.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_replset.sh"

rs_require_process_nodes || exit 0

ns=rdc-e2e-fo-$$
e2e_setup failover "$ns"
cleanup_more() {
    fo_writer_stop "$work/w" >/dev/null
    fo_label_sampler_stop "$work/w" >/dev/null
}
check "ackwriter built" fo_build
rs_start "  # one pod per process node, so losing the primary's node loses nothing else
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app.kubernetes.io/name: redis, app.kubernetes.io/instance: cache}}"

info() { redis-cli -h "$(rs_ip "$1")" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }
healthy() { kubectl -n "$ns" get rdc cache -o json | jq -e '.status.conditions[] | select(.type=="ReplicationHealthy" and .status=="True")' >/dev/null; }
# settled: status.primary is a master, the only pod labelled primary, the two others linked to it.
settled() { rs_linked info && healthy; }
export -f rs_ip info rs_primary rs_labelled rs_linked healthy settled
export ns

check "cache is Running" wait_until 300 sh -c "kubectl -n $ns get rdc cache -o jsonpath='{.status.phase}' | grep -qx Running"
check "settled: one primary, two linked replicas" wait_until 60 settled
check "redis.conf has min-replicas-to-write 1" sh -c "kubectl -n $ns get cm cache -o jsonpath='{.data.redis\.conf}' | grep -qx 'min-replicas-to-write 1'"
check "the primary runs with it" test "$(redis-cli -h "$(rs_ip "$(rs_primary)")" config get min-replicas-to-write | tail -1)" = 1
check "redis.conf has repl-diskless-sync-delay 0 (a replica's full sync at once)" sh -c "kubectl -n $ns get cm cache -o jsonpath='{.data.redis\.conf}' | grep -qx 'repl-diskless-sync-delay 0'"
check "the primary runs with it" test "$(redis-cli -h "$(rs_ip "$(rs_primary)")" config get repl-diskless-sync-delay | tail -1)" = 0

rs_writer_start fo_
node_of() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
nodes=$(for n in cache-0 cache-1 cache-2; do node_of $n; echo; done | grep .)
check "the three pods on three distinct nodes ($(echo $nodes))" test "$(echo "$nodes" | sort -u | wc -l)" = 3

# scenario NAME ACTION...: run ACTION on the current primary ($old, $old_ip set), then
# check the outcome. ACTION sees $old.
declare -a figures=()
scenario() {
    local name=$1; shift
    old=$(rs_primary); old_ip=$(rs_ip "$old")
    local before; before=$(fo_acked "$work/w")
    echo "# --- $name: primary $old ($old_ip), $before writes acknowledged so far"
    t_kill=$(date +%s%3N)
    "$@"
    check "$name: status.primary moves off $old" wait_until 30 sh -c "p=\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.primary}'); [ -n \"\$p\" ] && [ \"\$p\" != $old ]"
    local t_status; t_status=$(date +%s%3N)
    check "$name: a new primary takes acknowledged writes" wait_until 30 fo_events_after "$work/w" ack "$t_kill" "$old_ip:6379"
    local t_acc a_acc
    read -r t_acc a_acc <<<"$(fo_events_after "$work/w" accept "$t_kill" "$old_ip:6379")"
    [ -n "${t_acc:-}" ] && figures+=("$name: kill->first write accepted $((t_acc - t_kill)) ms by $a_acc; kill->status.primary seen <= $((t_status - t_kill)) ms")
    [ -n "${t_acc:-}" ] && echo "# $name: kill -> first write accepted by $a_acc: $((t_acc - t_kill)) ms"
}
# recovered NAME: the old primary back as a replica, everything settled, no acknowledged write lost.
recovered() {
    local name=$1 new; new=$(rs_primary)
    check "$name: settled again (old primary $old a linked replica of $new)" wait_until 90 settled
    check "$name: $old is a replica" test "$(info "$old" role)" = slave
    check "$name: the Event FailedOver names $old" sh -c "kubectl -n $ns get events --field-selector reason=FailedOver -o json | jq -r '.items[].message' | grep -q 'primary $old '"
    local out; out=$(fo_verify "$work/w" "$(rs_ip "$new"):6379")
    local rc=$?
    echo "# $name: verify on $new: $out"
    check "$name: every acknowledged write is on $new ($out)" test "$rc" = 0
}

kill_it() { "$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$old" >/dev/null; }
scenario "SIGKILL" kill_it
recovered "SIGKILL"

freeze_it() { "$TOP/tests/cluster/cluster.sh" pod-freeze "$ns/$old" >/dev/null; }
scenario "SIGSTOP" freeze_it
"$TOP/tests/cluster/cluster.sh" pod-thaw "$ns/$old" >/dev/null
recovered "SIGSTOP"
check "SIGSTOP: the thawed old primary accepted no acknowledged write after the failover" \
    sh -c "! jq -r 'select(.ev==\"ack\" and .t > $t_kill) | .addr' $work/w/events.jsonl 2>/dev/null | grep -qx '$old_ip:6379'"

# Pod deletion: the operator hands the role over with FAILOVER while the preStop hook
# holds the pod (docs/failover.md, "Planned switchover"; tests/e2e/test_switchover.sh
# measures it), and the writer may be back on the new primary well within a second.
# Without a handover the successor comes back at once (graceful stop, AOF saved, on the
# pod runtime at the same IP) and either fails over or keeps the role. Any way: writes
# acknowledged again (by another pod, or by the old one's successor after it restarted),
# one primary, settled, nothing lost.
old=$(rs_primary); old_ip=$(rs_ip "$old"); t_kill=$(date +%s%3N)
acked_again() {
    fo_events_after "$work/w" ack "$t_kill" "$old_ip:6379" >/dev/null ||
        fo_events_after "$work/w" ack "$((t_kill + 1000))" >/dev/null
}
echo "# --- pod deleted: primary $old ($old_ip)"
kubectl -n "$ns" delete pod "$old" --wait=false >/dev/null
check "pod deleted: writes acknowledged again after the deletion" wait_until 60 acked_again
check "pod deleted: settled again" wait_until 90 settled
new=$(rs_primary)
echo "# pod deleted: primary now $new ($([ "$new" = "$old" ] && echo kept || echo moved))"
out=$(fo_verify "$work/w" "$(rs_ip "$new"):6379")
check "pod deleted: every acknowledged write is on $new ($out)" test $? = 0

# Loss of the primary's node: the machine "dies" (its processes SIGKILLed, no heartbeat,
# no status). The operator sees the Redis unreachable and fails over long before the node
# lifecycle controller marks the node NotReady (~40-50 s); the pod object stays (not
# evicted within the test). Back: the old primary restarts and rejoins as a replica.
node_ready() { kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null; }
export -f node_ready
lost_node=
lose_node() { lost_node=$(node_of "$old"); "$TOP/tests/cluster/cluster.sh" node-lose "$lost_node" >/dev/null; }
unreachable() { ! redis-cli -h "$1" -t 1 ping 2>/dev/null | grep -q PONG; }
restore_lost_node() { [ -z "$lost_node" ] || "$TOP/tests/cluster/cluster.sh" node-restore "$lost_node" >/dev/null; }
cleanup_more() {
    restore_lost_node
    fo_writer_stop "$work/w" >/dev/null
    fo_label_sampler_stop "$work/w" >/dev/null
}
echo "# --- node lost: primary $(rs_primary) on $(node_of "$(rs_primary)")"
check "node lost: the primary's node is Ready before" test "$(node_ready "$(node_of "$(rs_primary)")")" = True
scenario "node lost" lose_node
check "node lost: $lost_node was the old primary's node" test -n "$lost_node"
check "node lost: the old primary's Redis ($old_ip) is unreachable" unreachable "$old_ip"
check "node lost: only the new primary is labelled while the node is gone" wait_until 10 bash -c "test \"\$(rs_labelled)\" = \"\$(rs_primary) \""
check "node lost: $lost_node goes NotReady" wait_until 120 bash -c "[ \"\$(node_ready $lost_node)\" != True ]"
echo "# node lost: $lost_node NotReady seen $(($(date +%s%3N) - t_kill)) ms after the loss"
check "node lost: the old primary's Redis still unreachable" unreachable "$old_ip"
check "node lost: still one primary, the new one, labelled" test "$(rs_labelled)" = "$(rs_primary) "
out=$(fo_verify "$work/w" "$(rs_ip "$(rs_primary)"):6379")
check "node lost: every acknowledged write is on $(rs_primary) while the node is gone ($out)" test $? = 0
restore_lost_node
check "node lost: $lost_node Ready again after node-restore" wait_until 90 bash -c "[ \"\$(node_ready $lost_node)\" = True ]"
lost_node=
recovered "node lost"

# workerd stopped in the middle of a failover. The watch (python, one kubectl -w stream)
# starts before the kill and logs its first line (the current status.primary); at the
# first other value it SIGSTOPs every workerd, then asks the elected pod's Redis ROLE.
workerd_pids() { ps -o pid=,args= --ppid "$sup_pid" | awk '$2 ~ /workerd$/ {print $1}'; }
promotions() { grep '"redis command done"' "$work/operator.log" | grep -c 'promoted to primary'; }
# master_modes POD: "<n> <restarts>": how many times its Redis (this container's run)
# became a master by a command (REPLICAOF NO ONE logs "MASTER MODE enabled"), and the
# container's restartCount (the count is per run).
master_modes() {
    echo "$(kubectl -n "$ns" logs "$1" 2>/dev/null | grep -c 'MASTER MODE enabled') $(kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
}
freeze_watch() { # OUT PID...: SIGSTOP the PIDs at the first status.primary other than $old
    python3 - "$ns" "$old" "$@" <<'PY'
import os, signal, subprocess, sys, time
ns, old, out, pids = sys.argv[1], sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4:]]
def now(): return int(time.time() * 1000)
w = subprocess.Popen(["kubectl", "-n", ns, "get", "rdc", "cache", "-w", "-o",
                      r'jsonpath={.status.primary}{"\n"}'], stdout=subprocess.PIPE, text=True, bufsize=1)
with open(out + ".watch", "w") as log:
    for line in w.stdout:
        v = line.strip()
        log.write("%d %s\n" % (now(), v))
        log.flush()
        if v and v != old:
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            t = now()
            ip = subprocess.run(["kubectl", "-n", ns, "get", "pod", v, "-o", "jsonpath={.status.podIP}"],
                                capture_output=True, text=True).stdout.strip()
            role = subprocess.run(["redis-cli", "-h", ip, "role"], capture_output=True, text=True).stdout.split()
            with open(out, "w") as f:
                f.write("%d %s %s\n" % (t, v, role[0] if role else "down"))
            break
w.terminate()
PY
}
mid_landed=0
kill_mid_workerd() {
    rm -f "$work/mid" "$work/mid.watch"
    freeze_watch "$work/mid" $wk_pids &
    local watcher=$!
    wait_until 10 test -s "$work/mid.watch"    # the watch delivered the current value
    t_kill=$(date +%s%3N)                        # scenario's figure counts from here
    kill_it
    wait_until 30 test -s "$work/mid"
    local t p role
    read -r t p role <"$work/mid" 2>/dev/null
    echo "# workerd ($wk_pids) stopped $((${t:-0} - t_kill)) ms after the kill, ${p:-?} elected, its Redis answered ROLE ${role:-?}"
    [ "${role:-}" = slave ] && mid_landed=1
    kill -KILL $wk_pids 2>/dev/null
    wait "$watcher" 2>/dev/null
}
for attempt in 1 2 3; do
    name="workerd killed mid-failover (attempt $attempt)"
    wk_pids=$(workerd_pids | tr '\n' ' ')
    check "$name: the workerd processes are there ($wk_pids)" test -n "$wk_pids"
    declare -A mm0=()
    for n in cache-0 cache-1 cache-2; do mm0[$n]=$(master_modes $n); done
    p0=$(promotions)
    scenario "$name" kill_mid_workerd
    check "$name: the watch saw the election ($(tr '\n' ';' <"$work/mid.watch" 2>/dev/null))" test -s "$work/mid"
    recovered "$name"
    p1=$(promotions)
    new=$(rs_primary)
    read -r m0 r0 <<<"${mm0[$new]}"
    read -r m1 r1 <<<"$(master_modes "$new")"
    check "$name: the elected $new's log is there (restarts $r0 -> $r1)" test -n "$m1" -a "$r0" = "$r1"
    check "$name: $new became a master exactly once (MASTER MODE enabled $m0 -> $m1; operator log: $p0 -> $p1 promotions)" \
        test "$((m1 - m0))" = 1
    for n in cache-0 cache-1 cache-2; do
        { [ "$n" = "$new" ] || [ "$n" = "$old" ]; } && continue
        read -r m0 r0 <<<"${mm0[$n]}"
        read -r m1 r1 <<<"$(master_modes "$n")"
        check "$name: the other replica $n was not promoted ($m0 -> $m1)" test "$r0" != "$r1" -o "$m0" = "$m1"
    done
    [ "$mid_landed" = 1 ] && break
done
check "workerd killed mid-failover: a kill landed between the record and the promotion (attempt $attempt)" test "$mid_landed" = 1

# observerd killed while the primary is down, before downAfter: the new observerd has no
# history, sees the primary down for downAfter itself, and the failover completes, once.
observerd_pids() { ps -o pid=,args= --ppid "$sup_pid" | awk '$2 ~ /observerd$/ {print $1}'; }
kill_then_observerd() {
    kill_it
    sleep 1.5
    local pids; pids=$(observerd_pids)
    echo "# killing observerd ($pids) 1.5 s after the kill"
    [ -n "$pids" ] && kill -KILL $pids
}
p0=$(promotions)
scenario "observerd killed mid-failover" kill_then_observerd
recovered "observerd killed mid-failover"
p1=$(promotions)
check "observerd killed mid-failover: the promotion done exactly once ($p0 -> $p1)" test $((p1 - p0)) = 1

all_killed() { for n in cache-0 cache-1 cache-2; do "$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$n" >/dev/null; done; }
old=$(rs_primary); old_ip=$(rs_ip "$old"); t_kill=$(date +%s%3N)
echo "# --- all killed: primary $old"
all_killed
check "all killed: settled again, one primary" wait_until 120 settled
check "all killed: writes acknowledged again" wait_until 30 fo_events_after "$work/w" ack "$t_kill"
# Not asserted: with every process killed, what survives is what each one's AOF (fsync
# every second) holds; docs/failover.md.
echo "# all killed: verify on $(rs_primary): $(fo_verify "$work/w" "$(rs_ip "$(rs_primary)"):6379")"

rs_writer_stop
check "the label sampler's file has samples" test -s "$work/w/labels.txt"
check "the acknowledgement log has writes ($(fo_acked "$work/w"))" test "$(fo_acked "$work/w")" -gt 0
check "the writer's event stream has acknowledgements" grep -q '"ev":"ack"' "$work/w/events.jsonl"
for f in "${figures[@]}"; do echo "# figure: $f"; done
summary
