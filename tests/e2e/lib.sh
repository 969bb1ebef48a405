# Shared helpers of the end-to-end scripts: counted checks, bounded waits, and
# processes started with PID files so that cleanup stops exactly what was started.
# Source it; it expects KUBECONFIG and PATH from `tests/cluster/cluster.sh env`.

TOP=${RDC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN=${RDC_BIN:-$TOP/build/bin}
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
check() { # check "description" command...
    local what=$1; shift
    if "$@" >/dev/null 2>&1; then ok "$what"; else not_ok "$what"; fi
}
# wait_until SECONDS command... : poll every 0.5 s until the command succeeds.
wait_until() {
    local limit=$1; shift
    local end=$((SECONDS + limit))
    while [ "$SECONDS" -lt "$end" ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    "$@" >/dev/null 2>&1
}
summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# Sum of rest_client_requests_total for the write methods in a metrics exposition,
# leaving out electord, whose Lease renewals are writes by design.
write_requests() {
    curl -s "$1" | awk '/^rest_client_requests_total\{/ && /method="(POST|PUT|PATCH|DELETE)"/ && !/child="electord"/ { s += $NF } END { printf "%d\n", s }'
}
