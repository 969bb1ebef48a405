#!/usr/bin/env bash
# End-to-end suite: bring the local control plane up (tests/cluster/cluster.sh), run every
# tests/e2e/test_*.sh against it, tear the cluster down on exit whatever happened, and
# close with "e2e: N passed, M failed" summed over the scripts' own summary lines.
#
# RDC_E2E_KEEP=1 leaves the cluster running afterwards (for debugging a failure).
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
cluster=tests/cluster/cluster.sh
export RDC_CLUSTER_DIR=${RDC_CLUSTER_DIR:-/tmp/rdc-cluster-e2e}
# Process nodes for test_runtime.sh (and what comes after it): tainted, so no other test's
# pods land there; RDC_CLUSTER_PROCESS_NODES=0 runs the suite without them (it then skips).
export RDC_CLUSTER_PROCESS_NODES=${RDC_CLUSTER_PROCESS_NODES:-3}

started=0
cleanup() {
    if [ "$started" = 1 ] && [ "${RDC_E2E_KEEP:-0}" != 1 ]; then
        "$cluster" down || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$cluster" status >/dev/null 2>&1; then
    started=1
fi
if ! "$cluster" up; then
    echo "e2e: the local control plane did not come up; see $RDC_CLUSTER_DIR/*.log"
    echo "e2e: 0 passed, 1 failed"
    exit 1
fi
eval "$("$cluster" env)"
export RDC_TOP="$top"

passed=0 failed=0
for t in tests/e2e/test_*.sh; do
    echo "== $t"
    out=$(mktemp)
    timeout 1200 bash "$t" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
    rm -f "$out"
    if [ -n "$line" ]; then
        p=${line%% passed*}
        f=${line#*passed, }
        f=${f%% failed*}
    else
        p=0 f=1
    fi
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p)) failed=$((failed + f))
done
# Tear down before the summary, so that the count is the last line printed.
cleanup
started=0
echo
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
