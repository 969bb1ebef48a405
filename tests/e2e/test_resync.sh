#!/usr/bin/env bash
# End to end: 20 RedisClusters converge; a resync of the unchanged clusters then
# reconciles every one of them and makes zero write requests (invariant 6).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-rs-$$
n=20
e2e_setup rs "$ns"
for i in $(seq 1 $n); do
    printf -- '---\napiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: r%02d, namespace: %s}\nspec: {size: 1, image: redis, version: "7.2"}\n' "$i" "$ns"
done >"$work/clusters.yaml"
kubectl apply -f "$work/clusters.yaml" >/dev/null

sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns" \
    --sync-period 30s
running() { kubectl -n "$ns" get rdc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$'; }
check "all $n clusters Running" wait_until 180 sh -c "test \$(kubectl -n $ns get rdc -o jsonpath='{range .items[*]}{.status.phase}{\"\\n\"}{end}' | grep -c '^Running\$') = $n"
reconciles() { curl -s "http://127.0.0.1:$metrics/metrics" | awk '/^controller_runtime_reconcile_total\{/ { s += $NF } END { printf "%d\n", s }'; }
# Running is not yet unchanged: in Replication mode on kwok's fake pods the primary never
# answers, and ReplicationHealthy says NoFailoverCandidate only once downAfter (3 s) has
# passed, with a status write and an Event; the metrics files lag up to 2 s. Wait until
# the write count holds still for 4 s, then measure.
settled() {
    local a b
    a=$(write_requests "http://127.0.0.1:$metrics/metrics")
    sleep 4
    b=$(write_requests "http://127.0.0.1:$metrics/metrics")
    test "$a" = "$b"
}
check "writes settle after convergence" wait_until 60 settled
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
r0=$(reconciles)
sleep 35
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
r1=$(reconciles)
check "the resync reconciled all $n clusters ($r0 -> $r1)" test $((r1 - r0)) -ge $n
check "and made zero write requests ($w0 -> $w1)" test "$w1" = "$w0"
if [ "$failed" -gt 0 ]; then echo "--- operator log (last 30 lines)"; tail -30 "$work/operator.log"; fi
summary
