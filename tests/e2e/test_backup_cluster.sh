#!/usr/bin/env bash
# End to end: Cluster mode's backups and restore (issue 36; docs/backup.md "Cluster mode"),
# on process nodes: real redis-servers in Redis Cluster mode, the RedisBackup's Job (one
# container per shard, each rdc-backup take in the operator's image), the pinned versitygw.
#
#   1. The S3 server and the credentials Secret; a Cluster-mode RedisCluster "cache" of 3
#      shards (a primary and a replica each), healthy; 100,000 keys written through the
#      slot map (bench/clusterwriter fill) and read back.
#   2. A RedisBackup "one" of cache: Succeeded within 240 s; status.shards has 3 entries,
#      shard k's key one/one/shard-<k>.rdb, its sha256 and size (the object in the bucket
#      has that size), its source pod a replica of shard k (cache-shard<k>-*), its slots
#      the slots shard k's master serves; the shards' slots cover 16384 once; status.key
#      one/one/, status.size their sum; Event BackupSucceeded; the Job's pod had one
#      container per shard.
#   3. FLUSHALL on every master of cache: the keys are gone (DBSIZE 0 everywhere).
#   4. A new RedisCluster "dst" (3 shards) with spec.restore.from.backup: one: Running and
#      healthy; status.restore.source lists the 3 shards' objects; each shard's first pod's
#      restore init container restored (its line in the container's log says "restored"),
#      the others skipped (--only-pod); every one of the 100,000 keys back with its value
#      (clusterwriter verify through dst's slot map); redis-cli --cluster check clean.
#   5. A RedisCluster "dst4" of 4 shards from the same backup: the fourth shard starts
#      empty, the slots move to it; healthy with even shares (redis-cli --cluster check's
#      counts; status.cluster.shards[].slots says every slot of the fragmented map), every
#      key back, --cluster check clean.
#   6. Misfits: a Standalone RedisCluster restoring from one: Ready False RestoreFailed
#      ("is a Cluster-mode backup of 3 shards"), no StatefulSet; the API server refuses
#      spec.restore.from's bucket/key form in Cluster mode (CEL).
#   7. The operator's log: no error about RedisBackups, their Jobs or pods.
# Everything this script starts (the operator, the S3 server) is stopped by its PID; the
# namespace is deleted.
#   tests/e2e/test_backup_cluster.sh  (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up first)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

KEYS=${BACKUP_CLUSTER_E2E_KEYS:-100000}
backup_e2e_begin backup-cluster "rdc-e2e-bkc-$$"
CW=${RDC_CLUSTERWRITER:-$TOP/${BUILD:-build}/bench/clusterwriter}
check "clusterwriter built" make -s -C "$TOP" BUILD="${BUILD:-build}" "${BUILD:-build}/bench/clusterwriter"

pods_of() { kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null; }
seeds_of() { local p s=""; for p in $(pods_of "$1"); do s="$s${s:+,}$(pod_ip "$p"):6379"; done; echo "$s"; }
healthy() { # healthy RC N: Running, state ok, every slot held, nothing to move, N shards each with a linked replica
    kubectl -n "$ns" get rdc "$1" -o json 2>/dev/null | jq -e --argjson n "$2" '.status.phase == "Running"
        and .status.cluster.state == "ok" and .status.cluster.slotsAssigned == 16384
        and (.status.cluster.slotsToMove // 0) == 0 and (.status.cluster.shards | length) == $n
        and ([.status.cluster.shards[] | select(.primary != "" and ([.replicas[]? | select(.linkUp)] | length) == 1)] | length) == $n' >/dev/null
}
masters_slots() { # masters_slots RC: each master's slot count as redis-cli --cluster check counts them
    redis-cli --cluster check "$(pod_ip "$1-shard0-0"):6379" 2>/dev/null | sed -n 's/^[^ ]* ([^)]*) -> [0-9]* keys | \([0-9]*\) slots | .*/\1/p'
}
shares_even() { # shares_even RC N: N masters, each 16384/N slots give or take one (redis-cli's count)
    masters_slots "$1" | jq -se --argjson n "$2" 'length == $n and (min >= (16384 / $n | floor))
        and (max <= (16384 / $n | floor) + 1) and (add == 16384)' >/dev/null
}
cluster_clean() { # cluster_clean RC: redis-cli --cluster check: covered, nothing open, no warning
    local out
    out=$(redis-cli --cluster check "$(pod_ip "$1-shard0-0"):6379" 2>&1)
    grep -q '\[OK\] All 16384 slots covered' <<<"$out" && ! grep -qE '\[WARNING\]|\[ERR\]' <<<"$out"
}
keys_back() { # keys_back RC: every filled key, with its value, read through RC's slot map
    local out
    out=$("$CW" verify --seeds "$(seeds_of "$1")" --count "$KEYS" --prefix k: --value-bytes 32 2>&1)
    echo "# $1: verify: $out"
    check "$1: every one of the $KEYS keys back with its value ($out)" bash -c "echo '$out' | grep -q 'missing=0 wrong=0'"
}
dbsize_sum() { # dbsize_sum RC: "<DBSIZE summed over RC's masters> over <how many masters answered>"
    local p s=0 n m=0
    for p in $(pods_of "$1"); do
        [ "$(redis-cli -h "$(pod_ip "$p")" role 2>/dev/null | head -1)" = master ] || continue
        n=$(redis-cli -h "$(pod_ip "$p")" dbsize 2>/dev/null) && s=$((s + n)) m=$((m + 1))
    done
    echo "$s over $m"
}
export -f pods_of pod_ip jqs healthy shares_even
export ns

# ---- 1. S3, the source cluster, its keys ---------------------------------------------------------
check "RedisBackup CRD established" \
    wait_until 60 kubectl wait --for=condition=Established --timeout=10s crd/redisbackups.cache.example.com
bucket=backups
backup_setup "$ns" "$bucket"
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "operator ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
rc_apply_cluster cache "$ns" 3 2s
check "cache: 3 shards healthy" wait_until 300 healthy cache 3
out=$("$CW" fill --seeds "$(seeds_of cache)" --count "$KEYS" --prefix k: --value-bytes 32 2>&1)
echo "# fill: $out"
check "$KEYS keys filled" bash -c "echo '$out' | grep -q 'filled=$KEYS'"
keys_back cache

# ---- 2. A RedisBackup of every shard --------------------------------------------------------------
rb_yaml one "$bucket" one/ cache | kubectl apply -f - >/dev/null
check "RedisBackup one: Succeeded within 240 s" wait_output 240 Succeeded rb_phase one
echo "# one: $(jqs "$RB/one" '.status | tostring')"
check "one: status.shards has 3 entries" output_is 3 jqs "$RB/one" '.status.shards | length'
check "one: status.key is one/one/" output_is one/one/ jqs "$RB/one" .status.key
total=0
for k in 0 1 2; do
    e=$(jqs "$RB/one" ".status.shards[$k] | tostring")
    key=$(jq -r .key <<<"$e"); size=$(jq -r '.size // 0' <<<"$e"); src=$(jq -r .sourcePod <<<"$e")
    check "one: shard $k's key is one/one/shard-$k.rdb" test "$key" = "one/one/shard-$k.rdb"
    check "one: shard $k's sha256 is 64 hex digits" sh -c "jq -r .sha256 <<'J' | grep -qxE '[0-9a-f]{64}'
$e
J"
    check "one: shard $k's object is in the bucket, $size bytes" output_is "$size" stat -c %s "$S3_DATA/$bucket/$key"
    check "one: shard $k taken from a pod of shard $k ($src)" sh -c "case '$src' in cache-shard$k-*) exit 0;; esac; exit 1"
    check "one: shard $k's slots are what its master serves" \
        output_is "$(jq -r .slots <<<"$e")" jqs rdc/cache ".status.cluster.shards[$k].slots"
    total=$((total + size))
done
check "one: status.size is the shards' sum ($total)" output_is "$total" jqs "$RB/one" .status.size
check "one: the shards' slots cover 16384, once" output_is 16384 jqs "$RB/one" '[.status.shards[].slots | split(",")[]
    | split("-") | map(tonumber) | if length == 2 then .[1] - .[0] + 1 else 1 end] | add'
check "one: Event BackupSucceeded" wait_until 30 has_event one BackupSucceeded
check "one: its Job's pod ran a container per shard" output_is "shard-0 shard-1 shard-2" \
    jqs job/one '[.spec.template.spec.containers[].name] | join(" ")'

# ---- 3. The data lost ------------------------------------------------------------------------------
for p in $(pods_of cache); do
    [ "$(redis-cli -h "$(pod_ip "$p")" role 2>/dev/null | head -1)" = master ] && redis-cli -h "$(pod_ip "$p")" flushall >/dev/null
done
check "cache: FLUSHALL on every master, no key left on its 3 masters" wait_output 30 "0 over 3" dbsize_sum cache

# ---- 4. Restored into a new cluster of 3 shards ------------------------------------------------------
rc_apply_cluster dst "$ns" 3 2s "  restore: {from: {backup: one}}"
check "dst: 3 shards healthy" wait_until 420 healthy dst 3
echo "# dst: status.restore: $(jqs rdc/dst '.status.restore | tostring')"
check "dst: status.restore.source lists the 3 shards' objects" \
    output_is "one/one/shard-0.rdb one/one/shard-1.rdb one/one/shard-2.rdb" \
    jqs rdc/dst '[.status.restore.source.shards[].key] | join(" ")'
init_result() { kubectl -n "$ns" logs "$1" -c restore 2>/dev/null | jq -r 'select(.result) | .result' 2>/dev/null | tail -1; }
for k in 0 1 2; do
    check "dst: shard $k's first pod restored its object" output_is restored init_result "dst-shard$k-0"
    check "dst: shard $k's second pod skipped the restore (--only-pod)" output_is skipped init_result "dst-shard$k-1"
done
keys_back dst
check "dst: $KEYS keys over its 3 masters" output_is "$KEYS over 3" dbsize_sum dst
check "dst: redis-cli --cluster check is clean" cluster_clean dst

# ---- 5. Restored into 4 shards: the fourth starts empty, the slots move to it --------------------------
rc_apply_cluster dst4 "$ns" 4 2s "  restore: {from: {backup: one}}"
check "dst4: 4 shards healthy" wait_until 600 healthy dst4 4
check "dst4: even shares (redis-cli --cluster check's counts)" wait_until 60 shares_even dst4 4
echo "# dst4: masters' slots (redis-cli): $(masters_slots dst4 | tr '\n' ' ')"
check "dst4: status.cluster.shards[].slots say every slot (no \"...\"), 16384 in all" \
    output_is 16384 jqs rdc/dst4 '[.status.cluster.shards[].slots | split(",")[] | split("-") | map(tonumber)
    | if length == 2 then .[1] - .[0] + 1 else 1 end] | add'
check "dst4: shard 3 has no restore container" output_is "" \
    jqs statefulset/dst4-shard3 '[.spec.template.spec.initContainers[]?.name] | join(" ")'
keys_back dst4
check "dst4: redis-cli --cluster check is clean" cluster_clean dst4

# ---- 6. Misfits ---------------------------------------------------------------------------------------
printf '  size: 1\n  image: redis\n  version: "7.2"\n  mode: Standalone\n  restore: {from: {backup: one}}\n' |
    rc_yaml lone "$ns" | kubectl apply -f - >/dev/null
check "lone (Standalone from a sharded backup): Ready False RestoreFailed" wait_output 60 RestoreFailed ready_reason lone
check "lone: the message says why" sh -c "kubectl -n '$ns' get rdc lone -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q 'is a Cluster-mode backup of 3 shards'"
check "lone: no StatefulSet" sh -c "! kubectl -n '$ns' get statefulset lone >/dev/null 2>&1"
refused "Cluster mode with spec.restore's bucket/key form: refused by the API server (CEL)" \
    "in Cluster mode must name a RedisBackup (backup)" \
    sh -c "printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: cm, namespace: $ns}\nspec: {size: 6, image: redis, mode: Cluster, restore: {from: {endpoint: \"http://127.0.0.1:1\", bucket: backups, key: k, credentialsSecret: s3-creds}}}\n' | kubectl apply -f -"

# ---- 7. The operator's log ------------------------------------------------------------------------------
check "operator log: no error about RedisBackups, their Jobs or pods" sh -c "[ -z \"\$1\" ]" _ "$(backup_errors)"
backup_errors | head -5 | sed 's/^/# /'
summary
