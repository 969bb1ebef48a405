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
# wait_output SECONDS WANT command... : poll every 0.5 s until the command prints WANT (its
# whole output). Not `wait_until N test "$(command)" = WANT`: that runs the command once,
# before the wait, and only tests the same answer again.
wait_output() {
    local limit=$1 want=$2; shift 2
    wait_until "$limit" output_is "$want" "$@"
}
output_is() { local want=$1; shift; [ "$("$@" 2>/dev/null)" = "$want" ]; }
summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

# Sum of rest_client_requests_total for the write methods in a metrics exposition,
# leaving out electord, whose Lease renewals are writes by design.
#
# A scrape that fails, is empty, or has no rest_client_requests_total at all (every
# operator makes GETs, so the family is always there) is not "0 writes": it prints a
# value that equals no other (so `test "$w1" = "$w0"` fails), says why on stderr, and
# returns 1.
write_requests() {
    local body
    body=$(curl -sf --max-time 10 "$1") || body=''
    if ! printf '%s\n' "$body" | grep -q '^rest_client_requests_total{'; then
        echo "write_requests: no rest_client_requests_total in the scrape of $1" >&2
        echo "no-scrape-$RANDOM$RANDOM"
        return 1
    fi
    printf '%s\n' "$body" | awk '/^rest_client_requests_total\{/ && /method="(POST|PUT|PATCH|DELETE)"/ && !/child="electord"/ { s += $NF } END { printf "%d\n", s }'
}

# sup_start BIN_DIR RUNTIME_DIR LOG [supervisor flags...]: start BIN_DIR/supervisor in the
# background (a child of this shell, so `wait "$sup_pid"` gives its exit status) with its
# metrics and probes on free 127.0.0.1 ports and its output in LOG; sets sup_pid, and
# health and metrics (the ports) once it has written RUNTIME_DIR/endpoints.
sup_start() {
    local bin=$1 rt=$2 log=$3; shift 3
    "$bin/supervisor" "$@" --runtime-dir "$rt" \
        --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$log" 2>&1 &
    sup_pid=$!
    wait_until 10 test -s "$rt/endpoints"
    health=$(sed -n 's/^health=//p' "$rt/endpoints" 2>/dev/null)
    metrics=$(sed -n 's/^metrics=//p' "$rt/endpoints" 2>/dev/null)
}
# sup_stop [SECONDS]: SIGTERM the supervisor of sup_start, SIGKILL it if it still runs after
# SECONDS (default 10); nothing when it is gone already.
sup_stop() {
    [ -n "${sup_pid:-}" ] && kill -0 "$sup_pid" 2>/dev/null || return 0
    kill -TERM "$sup_pid"
    local end=$((SECONDS + ${1:-10}))
    while kill -0 "$sup_pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.2; done
    kill -KILL "$sup_pid" 2>/dev/null
    return 0
}

# e2e_setup NAME NAMESPACE...: the start most scripts share. Makes $work, a fresh directory
# /tmp/rdc-e2e-NAME.XXXXXX; applies the CRD and checks that it is Established; creates the
# namespaces. At exit (an EXIT trap): the supervisor of sup_start stopped (sup_stop
# ${SUP_STOP_SECONDS:-3}); the script's own cleanup_more, if it defines one; the
# finalizers of the RedisClusters left in the namespaces removed, the namespaces deleted
# without waiting; $work removed unless KEEP_WORK is set.
e2e_setup() {
    local name=$1; shift
    e2e_namespaces=("$@")
    work=$(mktemp -d "/tmp/rdc-e2e-$name.XXXXXX")
    sup_pid=
    trap e2e_cleanup EXIT
    kubectl apply -f "$TOP/crds/" >/dev/null
    # (retried: once, right after a fresh control plane came up, kubectl wait failed at once)
    check "CRD established" wait_until 60 kubectl wait --for=condition=Established --timeout=10s crd/redisclusters.cache.example.com
    local n
    for n in "$@"; do kubectl create namespace "$n" >/dev/null; done
}
e2e_cleanup() {
    sup_stop "${SUP_STOP_SECONDS:-3}"
    declare -F cleanup_more >/dev/null && cleanup_more
    # With the operator gone nothing removes its finalizer: a RedisCluster left would hold
    # its namespace in Terminating until a later script's operator finalizes it (and that
    # operator's work, Events and writes, would mix with the later script's figures).
    local n o
    for n in "${e2e_namespaces[@]}"; do
        for o in $(kubectl -n "$n" get redisclusters.cache.example.com -o name 2>/dev/null); do
            kubectl -n "$n" patch "$o" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
        done
    done
    [ "${#e2e_namespaces[@]}" -gt 0 ] &&
        kubectl delete namespace "${e2e_namespaces[@]}" --wait=false >/dev/null 2>&1
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"
}

# has_process_nodes: the cluster has nodes whose pods run real processes (started with
# RDC_CLUSTER_PROCESS_NODES=N tests/cluster/cluster.sh up).
has_process_nodes() { [ "$(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null | wc -l)" -gt 0 ]; }

# skip_without_process_nodes: on a cluster without them, say so and exit 0, one test
# skipped (a script that needs real Redis calls it first).
skip_without_process_nodes() {
    has_process_nodes && return 0
    echo "# SKIP: the cluster in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} has no process nodes;"
    echo "#       start it with RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up (run.sh does)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
}

# process_part PART NAMESPACE RUNDIR LOG: the start of a script's last part, on real pods:
# on a cluster without process nodes, say PART is skipped, print the summary and end the
# script (exit 0); else NAMESPACE created and pinned to the process nodes (one check), its
# default ServiceAccount waited for, and a second operator (sup_start: RUNDIR, LOG) on it
# with one worker.
process_part() {
    if ! has_process_nodes; then
        echo "# SKIP $1: no process nodes (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up)"
        summary
        exit
    fi
    kubectl create namespace "$2" >/dev/null
    check "cluster.sh pin-namespace $2" "$TOP/tests/cluster/cluster.sh" pin-namespace "$2"
    wait_until 20 kubectl -n "$2" get serviceaccount default
    sup_start "$BIN" "$3" "$4" --kubeconfig "$KUBECONFIG" --workers 1 --namespace "$2"
}

# rc_yaml NAME NAMESPACE: the manifest of a cache.example.com/v1 RedisCluster on stdout;
# its spec (the YAML under "spec:", indented by two spaces) is read from stdin:
#     rc_yaml cache "$ns" <<YAML | kubectl apply -f - >/dev/null
#       size: 3
#     YAML
rc_yaml() {
    printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: %s, namespace: %s}\nspec:\n' "$1" "$2"
    cat
}

# rc_apply_cache NAMESPACE: apply the RedisCluster "cache" most scripts start from: 3
# replicas of redis 7.2, maxmemory 256mb allkeys-lru, 1Gi of storage.
rc_apply_cache() {
    # Standalone: the scripts using it run on kwok's fake pods, with no Redis behind them.
    # In Replication a fresh look (`workerd --once`) and the running operator's observer
    # would then disagree on how long the primary has been down (PrimaryUnreachable vs
    # NoFailoverCandidate after downAfter), a difference of history, not of the cluster.
    rc_yaml cache "$1" <<YAML | kubectl apply -f - >/dev/null
  mode: Standalone
  size: 3
  image: redis
  version: "7.2"
  config: {maxmemory: 256mb, maxmemoryPolicy: allkeys-lru}
  storage: {size: 1Gi}
YAML
}

# rc_apply_cluster NAME NAMESPACE SHARDS DOWN_AFTER [SPEC]: apply a Cluster-mode
# RedisCluster of redis 7.2, SHARDS shards of a primary and one replica (size 2 x SHARDS),
# failover after DOWN_AFTER (a duration, as 2s); SPEC, YAML lines indented by two spaces,
# is added to its spec.
rc_apply_cluster() {
    { rc_yaml "$1" "$2" <<YAML
  mode: Cluster
  size: $(($3 * 2))
  image: redis
  version: "7.2"
  cluster: {shards: $3, replicasPerShard: 1}
  failover: {downAfter: $4}
YAML
      [ -n "${5:-}" ] && printf '%s\n' "$5"; } | kubectl apply -f - >/dev/null
}

# rc_apply_replication NAME NAMESPACE DOWN_AFTER [SPEC]: apply a Replication-mode
# RedisCluster of redis 7.2, a primary and two replicas (RS_SIZE - 1 with RS_SIZE set),
# failover after DOWN_AFTER (a duration, as 3s); SPEC, YAML lines indented by two
# spaces, is added to its spec. Its status is kubectl apply's.
rc_apply_replication() {
    rc_yaml "$1" "$2" <<YAML | kubectl apply -f - >/dev/null
  size: ${RS_SIZE:-3}
  image: redis
  version: "7.2"
  mode: Replication
  failover: {downAfter: $3}
${4:-}
YAML
}

# refused DESCRIPTION EXPECTED-SUBSTRING COMMAND...: the command fails and says EXPECTED
# (one check: not ok when it succeeds, or fails saying something else).
refused() {
    local what=$1 want=$2 out
    shift 2
    if out=$("$@" 2>&1); then
        not_ok "$what (accepted)"
        return
    fi
    if grep -qF -- "$want" <<<"$out"; then ok "$what"; else not_ok "$what: $out"; fi
}

# token_kubeconfig FILE NAME TOKEN: write FILE (mode 600), a kubeconfig for the API server
# of the current kubeconfig (its server and CA, inline or from a file) with one user and
# one context, both NAME, that authenticate with the bearer TOKEN.
token_kubeconfig() {
    local file=$1 name=$2 token=$3 server ca
    server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
    ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
    [ -n "$ca" ] || ca=$(base64 -w0 <"$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')")
    cat >"$file" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $name, user: {token: "$token"}}]
contexts: [{name: $name, context: {cluster: local, user: $name}}]
current-context: $name
YAML
    chmod 600 "$file"
}

# s3_start BUCKET: the S3 server of the backup scripts (tests/cluster/s3.sh: versitygw on
# 127.0.0.1 and a free port, its state in $work/s3; stop it in cleanup_more with
# `s3.sh stop "$work/s3"`): sets S3_ENDPOINT S3_REGION S3_ACCESS_KEY S3_SECRET_KEY S3_DATA
# S3_PID, makes BUCKET, writes the credentials into $work/creds (access-key-id,
# secret-access-key: rdc-backup's --credentials-dir). One check; the script ends (its
# summary) when the server does not start.
s3_start() {
    local env_lines
    env_lines=$("$TOP/tests/cluster/s3.sh" start "$work/s3") || { not_ok "the S3 server started"; summary; exit 1; }
    eval "$env_lines"
    ok "versitygw at $S3_ENDPOINT (pid $S3_PID)"
    mkdir -p "$S3_DATA/$1" "$work/creds"
    printf '%s\n' "$S3_ACCESS_KEY" >"$work/creds/access-key-id"
    printf '%s\n' "$S3_SECRET_KEY" >"$work/creds/secret-access-key"
}

# backup_e2e_begin NAME NAMESPACE: the start of the backup scripts (test_backup,
# test_restore, test_backup_kill): skipped without process nodes, e2e_setup NAME NAMESPACE
# (ns is NAMESPACE), the S3 server stopped at exit (cleanup_more; a script may define its
# own after this), and the readers they share: RB (the RedisBackup resource), jqs OBJECT
# FILTER, pod_ip POD, running RC, rb_phase RB, ready_reason RC, has_event RB-NAME REASON,
# backup_errors (the operator's error lines about backups, Jobs, their pods).
backup_e2e_begin() {
    skip_without_process_nodes
    ns=$2
    e2e_setup "$1" "$ns"
    RB=redisbackups.cache.example.com
    cleanup_more() { "$TOP/tests/cluster/s3.sh" stop "$work/s3" >/dev/null 2>&1; }
    jqs() { kubectl -n "$ns" get "$1" -o json 2>/dev/null | jq -r "$2"; }
    pod_ip() { jqs "pod/$1" '.status.podIP // empty'; }
    running() { [ "$(jqs "rdc/$1" .status.phase)" = Running ]; }
    rb_phase() { jqs "$RB/$1" '.status.phase // empty'; }
    ready_reason() { jqs "rdc/$1" '.status.conditions[]? | select(.type=="Ready") | .reason'; }
    has_event() {
        kubectl -n "$ns" get events --field-selector "involvedObject.kind=RedisBackup,involvedObject.name=$1,reason=$2" \
            -o name 2>/dev/null | grep -q .
    }
    backup_errors() { # errors (a failed write, list or watch; a dropped Event) about backups, Jobs, their pods
        grep -E '"level":"error"|"event dropped"|forbidden' "$work/operator.log" | grep -iE 'backup|/jobs|batch'
    }
}

# backup_src [YAML-LINE]: the source cluster of the backup scripts, a Standalone
# RedisCluster "src" of size 1 in $ns (plus YAML-LINE under spec, e.g. its auth), checked
# Running within 240 s; sets src_ip.
backup_src() {
    { printf '  size: 1\n  image: redis\n  version: "7.2"\n  mode: Standalone\n'
      [ -n "${1:-}" ] && printf '%s\n' "$1"; } | rc_yaml src "$ns" | kubectl apply -f - >/dev/null
    check "src Running" wait_until 240 running src
    src_ip=$(pod_ip src-0)
}

# rb_yaml NAME BUCKET PREFIX [CLUSTER]: a RedisBackup of CLUSTER (default src) to
# BUCKET/PREFIX on the S3 server of s3_start, with the credentials Secret s3-creds.
rb_yaml() {
    cat <<YAML
apiVersion: cache.example.com/v1
kind: RedisBackup
metadata: {name: $1, namespace: $ns}
spec:
  source: {cluster: ${4:-src}}
  destination: {endpoint: "$S3_ENDPOINT", bucket: $2, prefix: $3, region: $S3_REGION}
  credentialsSecret: {name: s3-creds}
YAML
}

# backup_setup NAMESPACE BUCKET: the start the backup scripts share: the S3 server with
# BUCKET (s3_start), NAMESPACE pinned to the process nodes, its default ServiceAccount
# waited for, and the Secret s3-creds (access-key-id, secret-access-key) in it.
backup_setup() {
    local ns=$1
    s3_start "$2"
    check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
    wait_until 20 kubectl -n "$ns" get serviceaccount default
    kubectl -n "$ns" create secret generic s3-creds --from-file=access-key-id="$work/creds/access-key-id" \
        --from-file=secret-access-key="$work/creds/secret-access-key" >/dev/null
}

# kv_files N: $work/set.txt (N SET commands for redis-cli), $work/get.txt (their GETs) and
# $work/want.txt (the values GET --raw prints, in order).
kv_files() {
    local i
    for i in $(seq 1 "$1"); do printf 'SET key:%d value-%d-%s\n' "$i" "$i" "$((i * 7919 % 100003))"; done >"$work/set.txt"
    for i in $(seq 1 "$1"); do printf 'GET key:%d\n' "$i"; done >"$work/get.txt"
    for i in $(seq 1 "$1"); do printf 'value-%d-%s\n' "$i" "$((i * 7919 % 100003))"; done >"$work/want.txt"
}
