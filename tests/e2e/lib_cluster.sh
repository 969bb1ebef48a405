# Shared harness of the scripts that test the local control plane itself (test_cluster.sh,
# test_runtime.sh): counted checks that show the tail of a failing command's output, and
# waits bounded by $WAIT. Source it after `eval "$(tests/cluster/cluster.sh env)"`; it sets
# WAIT (RDC_E2E_TIMEOUT, default 90 s), PASS, FAIL and tmp (a directory the script removes).

WAIT="${RDC_E2E_TIMEOUT:-90}"        # seconds, per wait
PASS=0; FAIL=0
tmp=$(mktemp -d)

k() { kubectl --request-timeout=20s "$@"; }
ok() { echo "ok - $*"; PASS=$((PASS + 1)); }
notok() { echo "not ok - $*"; FAIL=$((FAIL + 1)); }
check() { local desc=$1; shift; if "$@" >"$tmp/out" 2>&1; then ok "$desc"; else notok "$desc"; sed 's/^/#   /' "$tmp/out" | tail -15; fi; }
# until CMD succeeds, at most $WAIT seconds
eventually() { local deadline=$(( $(date +%s) + WAIT )); until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.5; done; }

# The control plane answers, or one "not ok" line and exit 1.
require_cluster_up() {
  if ! kubectl --request-timeout=10s get --raw /readyz >/dev/null 2>&1; then
    echo "not ok - the cluster is not up (run tests/cluster/cluster.sh up; RDC_CLUSTER_DIR=${RDC_CLUSTER_DIR:-})"
    echo "0 passed, 1 failed"; exit 1
  fi
}

# The last line, "N passed, M failed"; its status is the script's (0: nothing failed).
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; }
