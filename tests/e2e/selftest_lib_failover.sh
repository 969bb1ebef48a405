#!/usr/bin/env bash
# Self-test of tests/e2e/lib_failover.sh (not part of the suite: run.sh runs test_*.sh),
# against Redis Sentinel on the pod runtime: the pieces a future test_failover.sh will use
# (acknowledged-writes writer, verifier, label sampler, ROLE sampler, Sentinel) do what
# they say, and each can fail. Needs a cluster with process nodes:
#   RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up; eval "$(tests/cluster/cluster.sh env)"
#   bash tests/e2e/selftest_lib_failover.sh
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"

if [ "$(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null | wc -l)" -eq 0 ]; then
    echo "# SKIP: no process nodes (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
ns=rdc-e2e-folib-$$
e2e_setup folib "$ns"
cleanup_more() {
    fo_writer_stop "$work/w" >/dev/null
    fo_label_sampler_stop "$work/w" >/dev/null
    fo_role_sampler_stop "$work/w" >/dev/null
    fo_sentinels_stop "$work/s"
}
check "ackwriter built" fo_build
check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
check "3 redis pods answer PING" fo_redis_statefulset "$ns" r 3
read -r ip0 ip1 ip2 <<<"$(fo_pod_ips "$ns" r 3)"
check "r-0 primary, r-1 and r-2 linked replicas" fo_link_replicas "$ip0" "$ip1" "$ip2"

check "3 sentinels up" fo_sentinels_start "$work/s" fo "$ip0" 6379 3000 10000
check "sentinels name r-0 ($ip0) as the primary" test "$(fo_sentinel_master "$work/s" fo)" = "$ip0:6379"
check "sentinels found both replicas" wait_until 15 sh -c "redis-cli -p ${FO_SENTINELS##*:} sentinel replicas fo | grep -c '^name\$' | grep -qx 2"
check "sentinels see each other" wait_until 15 sh -c "redis-cli -p ${FO_SENTINELS##*:} sentinel sentinels fo | grep -c '^name\$' | grep -qx 2"

# The label sampler: two labelled pods at once must be seen, one must not be reported as two.
fo_label_sampler_start "$work/w" "$ns"
bad_roles() { ! fo_role_sampler_start "$work/bad" "$ip0:6379,:6379,:6379" 2>/dev/null; }
check "fo_role_sampler_start refuses a candidate without a host (a pod with no IP yet)" bad_roles
empty_roles() { ! fo_role_sampler_start "$work/bad" "" 2>/dev/null; }
check "fo_role_sampler_start refuses an empty list" empty_roles
check "fo_role_sampler_start samples r-0..2" fo_role_sampler_start "$work/w" "$ip0:6379,$ip1:6379,$ip2:6379"
check "fo_role_sampler_alive" fo_role_sampler_alive "$work/w"
sleep 1
kubectl -n "$ns" label pod r-0 cache.example.com/role=primary >/dev/null
sleep 0.5
kubectl -n "$ns" label pod r-1 cache.example.com/role=primary >/dev/null
sleep 0.5
kubectl -n "$ns" label pod r-0 cache.example.com/role- >/dev/null
sleep 0.5
check "fo_label_primary_addr: r-1 is the one labelled" test "$(fo_label_primary_addr "$ns")" = "$ip1:6379"
check "the label sampler's primary file names r-1 ($(cat "$work/w/primary.addr" 2>/dev/null))" test "$(cat "$work/w/primary.addr" 2>/dev/null)" = "$ip1:6379"
kubectl -n "$ns" label pod r-1 cache.example.com/role- >/dev/null
none_labelled() { ! fo_label_primary_addr "$ns"; }
check "fo_label_primary_addr fails when no pod is labelled" none_labelled
check "the primary file is empty when no pod is labelled" wait_until 3 test ! -s "$work/w/primary.addr"

fo_writer_start "$work/w" --sentinels "$FO_SENTINELS" --master fo --prefix selftest_
check "the writer acknowledges writes to r-0" wait_until 10 sh -c "test \"\$(wc -l <$work/w/acks.txt)\" -ge 200"
before=$(fo_acked "$work/w")
t_kill=$(date +%s%3N)
check "pod-kill the primary r-0" "$TOP/tests/cluster/cluster.sh" pod-kill "$ns/r-0"
switched() { local m; m=$(fo_sentinel_master "$work/s" fo) && [ "$m" != "$ip0:6379" ]; }
check "Sentinel names another primary within 20 s" wait_until 20 switched
new=$(fo_sentinel_master "$work/s" fo)
check "the writer acknowledges writes on the new primary $new" wait_until 20 fo_events_after "$work/w" ack "$t_kill" "$ip0:6379"
read -r t_ack a_ack <<<"$(fo_events_after "$work/w" ack "$t_kill" "$ip0:6379")"
read -r t_acc _ <<<"$(fo_events_after "$work/w" accept "$t_kill" "$ip0:6379")"
echo "# kill -> first write accepted by $a_ack: $((t_acc - t_kill)) ms, acknowledged: $((t_ack - t_kill)) ms"
check "the new primary is a former replica" test "$a_ack" = "$ip1:6379" -o "$a_ack" = "$ip2:6379"
sleep 1
stopline=$(fo_writer_stop "$work/w")
echo "# writer: $stopline"
check "the writer stopped and said so" grep -q '"ev":"stop"' "$work/w/events.jsonl"
check "writes were acknowledged after the kill ($before -> $(fo_acked "$work/w"))" test "$(fo_acked "$work/w")" -gt "$before"
out=$(fo_verify "$work/w" "$new")
rc=$?
echo "# verify on $new: $out"
check "verify: every acknowledged write is on the new primary" test "$rc" = 0
# The verifier must be able to fail: one acknowledged key deleted is reported missing.
redis-cli -h "${new%:*}" del selftest_7 >/dev/null
out=$(fo_verify "$work/w" "$new" --show 1)
rc=$?
check "verify fails (rc 1) when an acknowledged key is gone ($(echo "$out" | tail -1))" test "$rc" = 1 -a -n "$(echo "$out" | grep -x 'missing selftest_7')"
check "verify refuses an empty acknowledgement log" sh -c "! $FO_ACKWRITER verify --addr $new --acks /dev/null"

labels=$(fo_label_sampler_stop "$work/w")
roles=$(fo_role_sampler_stop "$work/w")
echo "# label sampler: $labels"
echo "# ROLE sampler: $roles"
check "label sampler saw two pods labelled at once (r-0 and r-1 for ~0.5 s)" sh -c "echo '$labels' | grep -q 'max=2 .*two_events=1'"
check "label sampler's file has the instant with both" grep -q ' 2 r-0 r-1$' "$work/w/labels.txt"
check "ROLE sampler saw r-0 down and a new master" sh -c "grep -q '$ip0:6379=down' $work/w/roles.txt && grep -Eq '($ip1|$ip2):6379=master' $work/w/roles.txt"
check "ROLE sampler summary is there" sh -c "echo '$roles' | grep -q '^samples=[1-9]'"
summary
