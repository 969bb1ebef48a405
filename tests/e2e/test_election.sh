#!/usr/bin/env bash
# End to end: leader election between full operator instances (supervisor + electord +
# informerd + workerd) on one cluster, invariant 3 ("only the leader writes").
#
#   1. two instances start together: exactly one holds the Lease (master_status 1/0), and
#      while a RedisCluster converges only the leader makes write requests;
#   2. SIGKILL of the leader's whole process tree: the standby takes over once the Lease
#      expires, and applies the next spec change;
#   3. a fresh standby; SIGTERM of the leader: it drains and releases the Lease, the
#      standby takes it at its next retry;
#   4. a fresh standby; SIGSTOP of the leader's electord only (a partition: the Lease is
#      not renewed, its workers are alive and have work): the old leader's writes stop at
#      its fence, before the standby takes the Lease, so no old-leader write lands after
#      the new leader's first one; SIGCONT: the old leader sees it lost and writes nothing.
#
# Shorter timings than the defaults (15 s / 10 s / 2 s) keep the test fast:
#   lease duration 6 s, renew deadline 4 s, retry period 1 s.
# Bounds, with client-go's semantics (an attempt after a WAIT is due RetryPeriod x
# (1 + 1.2 rand) later, i.e. up to 2.2 retry periods; expiry is judged by the standby's
# own clock from the moment it OBSERVED the last renew, which is up to one such
# interval after the renew):
#   leader dies without releasing: <= lease + 2 x 2.2 x retry          (10.4 s here)
#   leader releases the Lease:     <= 2.2 x retry after the release   (2.2 s here)
#   old leader's last write:       <= its fence: last renew + min(renew deadline,
#                                     lease - lease/10)                  (4 s here)
# Each bound gets MARGIN seconds for request latency and the test's own polling.
#
# Write times come from the workers' log line "write done" (info) (logged after the API
# server answered, so a write landed no later than that), leadership times from
# electord's "became leader" line and the Lease's acquireTime (the new leader's clock when
# it decided to take the Lease, before its PUT): all on this host's wall clock. Write
# counts come from rest_client_requests_total (POST/PUT/PATCH/DELETE, electord's Lease
# writes left out) on each instance's /metrics, which the children refresh every 2 s.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

LEASE_S=6 RENEW_S=4 RETRY_S=1 MARGIN=1
timings="--leader-election-lease-duration ${LEASE_S}s --leader-election-renew-deadline ${RENEW_S}s --leader-election-retry-period ${RETRY_S}s"

ns=rdc-e2e-el-$$
lease=rdc-e2e-el
work=$(mktemp -d /tmp/rdc-e2e-el.XXXXXX)
declare -A sup=() met=()
started=()   # supervisor PIDs this script started
kids=()      # their children's PIDs as seen (checked against $work before any signal)
churn_pid=

# PIDs of the children of supervisor $1 (from its control socket and from /proc).
children_of() {
    local pid=$1 n=$2
    {
        "$BIN/supervisor" ctl --runtime-dir "$work/$n" status 2>/dev/null |
            awk 'NR > 1 && $2 ~ /^[0-9]+$/ && $2 > 0 { print $2 }'
        cat /proc/"$pid"/task/*/children 2>/dev/null | tr ' ' '\n'
    } | grep -E '^[0-9]+$' | sort -u
}
# Is $1 a live process of this run (its command line names our runtime directory)?
ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$work/"; }

cleanup() {
    [ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null
    local n pid k
    for n in "${!sup[@]}"; do
        pid=${sup[$n]}
        kill -0 "$pid" 2>/dev/null || continue
        for k in $(children_of "$pid" "$n"); do kids+=("$k"); done
    done
    for k in "${kids[@]}"; do ours "$k" && kill -CONT "$k" 2>/dev/null; done
    # A PID that was reaped may have been reused: signal only what still names $work.
    for pid in "${started[@]}"; do
        ours "$pid" && { kill -CONT "$pid"; kill -TERM "$pid"; }
    done
    for _ in $(seq 1 20); do
        local alive=0
        for pid in "${started[@]}"; do ours "$pid" && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.5
    done
    for pid in "${started[@]}"; do ours "$pid" && kill -KILL "$pid" 2>/dev/null; done
    for k in "${kids[@]}"; do ours "$k" && kill -KILL "$k" 2>/dev/null; done
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
# seconds a - b, 2 decimals
diff_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a - b }'; }
# a <= b ?
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
# log line field "ts" -> epoch seconds
ts_epoch() { [ -n "$1" ] && date -d "$1" +%s.%N; }
# ts of the first/last line of instance $1's log matching logger $2 and msg $3
log_ts() {
    local which=$1 n=$2 logger=$3 msg=$4
    grep -F "\"logger\":\"$logger\",\"msg\":\"$msg\"" "$work/$n.log" 2>/dev/null |
        sed -n 's/^{"ts":"\([^"]*\)".*/\1/p' | if [ "$which" = first ]; then head -1; else tail -1; fi
}
logged() { [ -n "$(log_ts last "$1" "$2" "$3")" ]; }
count_log() { grep -cF "\"logger\":\"$2\",\"msg\":\"$3\"" "$work/$1.log" 2>/dev/null; }

# start_instance NAME: one whole operator, debug logs (for "write done"), own runtime dir.
start_instance() {
    local n=$1
    # shellcheck disable=SC2086
    "$BIN/supervisor" --kubeconfig "$KUBECONFIG" --workers 2 --leader-elect \
        --leader-election-namespace "$ns" --leader-election-id "$lease" $timings \
        --namespace "$ns" --log-level debug --graceful-shutdown-timeout 10s \
        --runtime-dir "$work/$n" \
        --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
        >"$work/$n.log" 2>&1 &
    sup[$n]=$!
    started+=("$!")
}
# wait_instance NAME: endpoints written, ready, electord campaigning.
wait_instance() {
    local n=$1
    wait_until 10 test -s "$work/$n/endpoints" || return 1
    met[$n]=$(sed -n 's/^metrics=//p' "$work/$n/endpoints")
    local health
    health=$(sed -n 's/^health=//p' "$work/$n/endpoints")
    wait_until 30 curl -sf "http://127.0.0.1:$health/readyz" || return 1
    wait_until 10 has_identity "$n"
}
has_identity() { [ -n "$(identity "$1")" ]; }
identity() {
    grep -F '"logger":"electord","msg":"campaigning"' "$work/$1.log" 2>/dev/null |
        sed -n 's/.*"identity":"\([^"]*\)".*/\1/p' | tail -1
}
murl() { echo "http://127.0.0.1:${met[$1]}/metrics"; }
master() { curl -s "$(murl "$1")" | awk '/^leader_election_master_status\{/ { print $NF; f = 1 } END { if (!f) print "none" }'; }
mst() { test "$(master "$1")" = "$2"; }
writes() { write_requests "$(murl "$1")"; }
holder() { kubectl -n "$ns" get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
transitions() { kubectl -n "$ns" get lease "$lease" -o jsonpath='{.spec.leaseTransitions}' 2>/dev/null; }
electord_pid() {
    "$BIN/supervisor" ctl --runtime-dir "$work/$1" status 2>/dev/null | awk '$1 == "electord" { print $2 }'
}
# The instance the Lease names, or "".
leader_name() {
    local h n
    h=$(holder)
    [ -n "$h" ] || return 0
    for n in "${!sup[@]}"; do
        kill -0 "${sup[$n]}" 2>/dev/null && [ "$(identity "$n")" = "$h" ] && { echo "$n"; return; }
    done
}
# wait_leader NAME SECONDS: poll the Lease every 0.2 s until NAME holds it; prints the time.
wait_leader() {
    local n=$1 end
    end=$(awk -v t="$(now)" -v s="$2" 'BEGIN { printf "%.3f", t + s }')
    local id
    id=$(identity "$n")
    while lt "$(now)" "$end"; do
        [ "$(holder)" = "$id" ] && { now; return 0; }
        sleep 0.2
    done
    return 1
}
spec() { kubectl -n "$ns" patch rdc cache --type merge -p "{\"spec\":$1}" >/dev/null; }
cm_has() { kubectl -n "$ns" get configmap cache -o jsonpath='{.data.redis\.conf}' 2>/dev/null | grep -q "$1"; }
phase_is() { test "$(kubectl -n "$ns" get rdc cache -o jsonpath='{.status.phase}/{.status.readyReplicas}' 2>/dev/null)" = "$1"; }
# new_standby NAME: start one more instance, which must come up as a standby that has seen
# the leader; it becomes S, and tr0 the Lease's transitions before what comes next.
new_standby() {
    local n=$1
    start_instance "$n"
    check "instance $n ready" wait_instance "$n"
    S=$n
    check "$n is a standby (master_status 0)" wait_until 10 mst "$n" 0
    check "$n has observed the leader" wait_until 10 logged "$n" electord "new leader observed"
    tr0=$(transitions)
}
dump_logs() {
    local n
    for n in "$@"; do echo "--- $n log (last 25 lines)"; tail -25 "$work/$n.log"; done
}

kubectl apply -f "$TOP/crds/" >/dev/null
check "CRD established" kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com
kubectl create namespace "$ns" >/dev/null
echo "# timings: lease ${LEASE_S}s, renew deadline ${RENEW_S}s, retry ${RETRY_S}s; namespace $ns"

# ---- 1. two instances, one leader; only the leader writes ------------------------------
start_instance A
start_instance B
check "instance A ready" wait_instance A
check "instance B ready" wait_instance B
has_leader() { [ -n "$(leader_name)" ]; }
check "the Lease names one of the two instances" wait_until 20 has_leader
L=$(leader_name)
if [ -z "$L" ]; then
    not_ok "cannot tell the leader (holder '$(holder)')"
    dump_logs A B
    summary
    exit 1
fi
S=$([ "$L" = A ] && echo B || echo A)
echo "# leader $L ($(identity "$L")), standby $S ($(identity "$S"))"
check "master_status 1 on the leader $L" wait_until 10 mst "$L" 1
check "master_status 0 on the standby $S" wait_until 10 mst "$S" 0
check "leaseTransitions 0 after the first acquisition" test "$(transitions)" = 0

rc_apply_cache "$ns"
check "RedisCluster Running with 3/3 ready" wait_until 90 phase_is Running/3
check "children applied by the operator's field manager" sh -c "kubectl -n $ns get statefulset cache -o jsonpath='{.metadata.managedFields[*].manager}' | grep -qw rediscluster-operator"
sleep 2.5 # one metrics refresh of every child
wl=$(writes "$L") ws=$(writes "$S")
check "the leader $L made write requests ($wl)" test "$wl" -gt 0
check "the standby $S made no write request ($ws)" test "$ws" = 0
check "no 'write done' in the standby's log" test "$(count_log "$S" workerd "write done")" = 0

# ---- 2. SIGKILL the leader's whole tree ---------------------------------------------------
tr0=$(transitions)
tree=$(children_of "${sup[$L]}" "$L")
for k in $tree; do kids+=("$k"); done
check "found the leader's children ($(echo "$tree" | wc -w))" test "$(echo "$tree" | wc -w)" -ge 4
# Stop first, then kill: a supervisor that dies sends its children SIGTERM
# (PR_SET_PDEATHSIG), and electord would then release the Lease: not a crash any more.
# shellcheck disable=SC2086
kill -STOP "${sup[$L]}" $tree
t_kill=$(now)
# shellcheck disable=SC2086
kill -KILL "${sup[$L]}" $tree
wait "${sup[$L]}" 2>/dev/null
t_seen=$(wait_leader "$S" $((LEASE_S * 3)))
took_poll=$([ -n "$t_seen" ] && diff_s "$t_seen" "$t_kill" || echo never)
became=$(ts_epoch "$(log_ts last "$S" electord "became leader")")
took=$([ -n "$became" ] && diff_s "$became" "$t_kill" || echo never)
bound=$(awk -v l=$LEASE_S -v r=$RETRY_S -v m=$MARGIN 'BEGIN { print l + 2 * 2.2 * r + m }')
echo "# SIGKILL failover: $S became leader ${took} s after the kill (Lease seen ${took_poll} s; bound ${bound} s)"
check "after SIGKILL the standby $S leads within ${bound} s (took ${took} s)" le "${took/never/999}" "$bound"
# The dead leader renewed at most ~1 retry period before the kill and the standby judges
# expiry from when it saw that renew: nothing can take the Lease sooner than this.
check "... not before the dead leader's Lease expired (${took} s >= lease - retry - margin)" \
    le "$((LEASE_S - RETRY_S - MARGIN))" "${took/never/0}"
check "the killed leader did not release the Lease (no 'released the Lease' in its log)" \
    test "$(count_log "$L" electord "released the Lease")" = 0
check "leaseTransitions grew by one" test "$(transitions)" = $((tr0 + 1))
check "master_status 1 on the new leader $S" wait_until 10 mst "$S" 1
for k in $tree; do ours "$k" && { not_ok "child $k of the killed tree still alive"; }; done
w0=$(writes "$S")
spec '{"size":4}'
check "the new leader $S applies spec.size 4" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset cache -o jsonpath='{.spec.replicas}')\" = 4"
check "... and reports Running 4/4" wait_until 60 phase_is Running/4
sleep 2.5
check "the new leader's write counter grew ($w0 -> $(writes "$S"))" test "$(writes "$S")" -gt "$w0"
unset "sup[$L]"
old=$L L=$S

# ---- 3. a fresh standby; SIGTERM the leader (drain, release) --------------------------------
new_standby C
t_term=$(now)
kill -TERM "${sup[$L]}"
t_seen=$(wait_leader C 10)
took_poll=$([ -n "$t_seen" ] && diff_s "$t_seen" "$t_term" || echo never)
became=$(ts_epoch "$(log_ts last C electord "became leader")")
took=$([ -n "$became" ] && diff_s "$became" "$t_term" || echo never)
released=$(ts_epoch "$(log_ts last "$L" electord "released the Lease")")
after_rel=$([ -n "$released" ] && [ -n "$became" ] && diff_s "$became" "$released" || echo "?")
bound=$(awk -v r=$RETRY_S -v m=$MARGIN 'BEGIN { print 2.2 * r + m }')
bound_term=$(awk -v b="$bound" -v m=$MARGIN 'BEGIN { print b + m }') # + the drain
echo "# SIGTERM failover: C became leader ${took} s after SIGTERM, ${after_rel} s after the release (Lease seen ${took_poll} s; bounds ${bound_term} s / ${bound} s)"
check "the old leader released the Lease" test -n "$released"
check "after SIGTERM the standby C leads within ${bound_term} s (took ${took} s)" le "${took/never/999}" "$bound_term"
check "... within ${bound} s of the release (took ${after_rel} s)" le "${after_rel/\?/999}" "$bound"
rc=124
for _ in $(seq 1 30); do
    if ! kill -0 "${sup[$L]}" 2>/dev/null; then wait "${sup[$L]}"; rc=$?; break; fi
    sleep 0.5
done
check "the SIGTERMed supervisor exited 0 (got $rc)" test "$rc" = 0
check "leaseTransitions grew by one" test "$(transitions)" = $((tr0 + 1))
check "master_status 1 on C" wait_until 10 mst C 1
unset "sup[$L]"
L=C

# ---- 4. partition: SIGSTOP the leader's electord only -------------------------------------
new_standby D
el_pid=$(electord_pid "$L")
kids+=("$el_pid")
check "found the leader's electord ($el_pid)" ours "$el_pid"
d_before=$(writes D)
# Keep the leader busy: a spec change every 0.6 s (alternating maxmemory), each one
# a ConfigMap + StatefulSet apply and a status write.
(
    i=0
    while :; do
        i=$((i + 1))
        kubectl -n "$ns" patch rdc cache --type merge \
            -p "{\"spec\":{\"config\":{\"maxmemory\":\"$((300 + i % 2 * 100))mb\"}}}" >/dev/null 2>&1
        sleep 0.6
    done
) &
churn_pid=$!
sleep 2
t_stop=$(now)
kill -STOP "$el_pid"
# Sample both instances' write counters every 0.2 s until D has written for a while.
# The count to grow from: a number (a scrape right after the SIGSTOP may wait out the
# stopped child and fail; a failed first scrape left "no-scrape-..." here and failed the
# check "nor any since D's first write" in CI).
c_prev=$(writes "$L")
for _ in 1 2 3 4 5 6 7 8 9 10; do
    case "$c_prev" in *no-scrape*) sleep 0.3; c_prev=$(writes "$L") ;; *) break ;; esac
done
c_last_inc='' d_first_inc='' samples=0
end=$((SECONDS + LEASE_S * 3 + 5))
while [ "$SECONDS" -lt "$end" ]; do
    t=$(now)
    c=$(writes "$L" 2>/dev/null) d=$(writes D 2>/dev/null)
    # A scrape that failed (a stopped process's port, D still starting) is no sample.
    case "$c$d" in *no-scrape*) sleep 0.2; continue ;; esac
    samples=$((samples + 1))
    if [ "$c" -gt "$c_prev" ]; then c_last_inc=$t c_prev=$c; fi
    if [ -z "$d_first_inc" ] && [ "$d" -gt "$d_before" ]; then d_first_inc=$t; fi
    if [ -n "$d_first_inc" ] && lt 4 "$(diff_s "$t" "$d_first_inc")"; then break; fi
    sleep 0.2
done
kill "$churn_pid" 2>/dev/null
wait "$churn_pid" 2>/dev/null
churn_pid=
c_at_end=$c_prev
c_last_write=$(ts_epoch "$(log_ts last "$L" workerd "write done")")
d_became=$(ts_epoch "$(log_ts first D electord "became leader")")
# D decided to take the Lease at its acquireTime (D's wall clock, before its PUT was
# sent): a write that the old leader saw answered before then landed before D led.
d_acquired=$(ts_epoch "$(kubectl -n "$ns" get lease "$lease" -o jsonpath='{.spec.acquireTime}')")
d_first_write=$(ts_epoch "$(log_ts first D workerd "write done")")
fenced=$(grep -c '"msg":"Reconciler error".*fenced' "$work/$L.log")
rel() { [ -n "$1" ] && diff_s "$1" "$t_stop" || echo never; }
echo "# partition (times after SIGSTOP): old leader's last write $(rel "$c_last_write") s," \
    "D acquired the Lease $(rel "$d_acquired") s (logged $(rel "$d_became") s), D's first write $(rel "$d_first_write") s;" \
    "by the metrics: old leader's counter last grew $(rel "$c_last_inc") s, D's first grew $(rel "$d_first_inc") s;" \
    "fenced reconciles logged by the old leader: $fenced"
check "the old leader's workers still wrote during the partition (last write $(rel "$c_last_write") s after SIGSTOP)" \
    lt "$t_stop" "${c_last_write:-0}"
check "the old leader's writes stopped within the renew deadline (${RENEW_S} s + ${MARGIN} s)" \
    le "${c_last_write:-999999999999}" "$(awk -v t="$t_stop" -v r=$RENEW_S -v m=$MARGIN 'BEGIN { printf "%.3f", t + r + m }')"
check "the standby D took over" test -n "$d_became"
check "the old leader's last write came before D took over (gap $([ -n "$d_acquired" ] && [ -n "$c_last_write" ] && diff_s "$d_acquired" "$c_last_write") s)" \
    lt "${c_last_write:-999999999999}" "${d_acquired:-0}"
check "D wrote after it took over" le "${d_acquired:-999999999999}" "${d_first_write:-0}"
check "no old-leader write after D's first write" lt "${c_last_write:-999999999999}" "${d_first_write:-0}"
# The same by the metrics, which lag by up to one refresh (2 s) plus a loop turn (1 s);
# both instances must have been scraped (no sample: nothing to agree with).
check "both write counters scraped during the partition ($samples samples)" test "$samples" -gt 0
check "the metrics agree: the old leader's write counter stopped growing by its fence (+3 s refresh lag)" \
    le "${c_last_inc:-0}" "$(awk -v t="$t_stop" -v r=$RENEW_S -v m=$MARGIN 'BEGIN { printf "%.3f", t + r + 3 + m }')"
check "the metrics agree: D's write counter grew only after D took over" le "${d_acquired:-999999999999}" "${d_first_inc:-0}"
bound=$(awk -v l=$LEASE_S -v r=$RETRY_S -v m=$MARGIN 'BEGIN { print l + 2 * 2.2 * r + m }')
check "D took over within ${bound} s of the partition ($(rel "$d_acquired") s)" \
    le "$(rel "$d_acquired" | sed 's/never/999/')" "$bound"
check "leaseTransitions grew by one" test "$(transitions)" = $((tr0 + 1))
check "the Lease names D" test "$(holder)" = "$(identity D)"

# Heal the partition: the old leader must notice it lost, and stay silent.
t_cont=$(now)
kill -CONT "$el_pid"
check "the old leader logs 'stopped leading'" wait_until 10 logged "$L" electord "stopped leading"
check "master_status 0 on the old leader after SIGCONT" wait_until 10 mst "$L" 0
check "master_status 1 on D" test "$(master D)" = 1
sleep 2.5
c0=$(writes "$L") d0=$(writes D)
spec '{"config":{"maxmemory":"777mb"}}'
check "D applies the next spec change" wait_until 30 cm_has "maxmemory 777mb"
sleep 3
c1=$(writes "$L") d1=$(writes D)
check "the old leader made no write request after SIGCONT ($c0 -> $c1)" test "$c1" = "$c0"
check "... nor any since D's first write ($c_at_end -> $c1)" test "$c1" = "$c_at_end"
check "D made the writes ($d0 -> $d1)" test "$d1" -gt "$d0"
late=$(grep -F '"logger":"workerd","msg":"write done"' "$work/$L.log" | sed -n 's/^{"ts":"\([^"]*\)".*/\1/p' |
    while read -r ts; do lt "$t_cont" "$(ts_epoch "$ts")" && echo x; done | wc -l)
check "no 'write done' in the old leader's log after SIGCONT ($late)" test "$late" = 0
check "the Lease still names D" test "$(holder)" = "$(identity D)"

if [ "$failed" -gt 0 ]; then
    dump_logs "$old" C D
fi
summary
