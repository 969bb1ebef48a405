#!/usr/bin/env bash
# End to end: restore at creation, spec.restore.from (issue 36; docs/backup.md "Restore at
# creation"), on process nodes: real redis-servers, the restore init container running
# build/bin/rdc-backup in the pod (the operator's image), the pinned versitygw.
#
#   1. kubectl explain documents spec.restore.from and its fields; the API server refuses
#      spec.restore in Cluster mode (CEL), with its message.
#   2. The S3 server (tests/cluster/s3.sh: versitygw on 127.0.0.1 and a free port; the
#      pods' processes share the machine's network, so they reach it there).
#   3. A Standalone RedisCluster "src" with 100,000 keys; a backup of it taken from the
#      test with build/bin/rdc-backup take against its pod IP.
#   4. A Secret with the credentials; a new Standalone RedisCluster "dst" (persistence aof,
#      the default: the init container restores with --aof) with spec.restore.from: its
#      pod's init container restore Completed (Initialized True), then every key back with
#      its value, DBSIZE 100,000. spec.restore is immutable (the API server refuses a
#      change, with its message).
#   5. The skip rule: a key written after the restore; the pod deleted, made again by the
#      StatefulSet on the same claim: the init container runs again and skips (its log
#      says so), the key is there, DBSIZE 100,001.
#   6. A wrong spec.restore.from.sha256 ("bad-sha"), and the object corrupted in the bucket
#      (16 bytes overwritten in place, its x-amz-meta-sha256 kept) for a cluster without
#      sha256 ("bad-obj"): the init container fails, redis never starts (PodInitializing),
#      the RedisCluster's Ready condition is False with reason RestoreFailed and
#      rdc-backup's line ("SHA-256 ... want ...").
# Everything this script starts (the operator, the S3 server) is stopped by its PID.
#   tests/e2e/test_restore.sh      (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up first)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

KEYS=${RESTORE_E2E_KEYS:-100000}
backup_e2e_begin restore "rdc-e2e-restore-$$"

# ---- 1. kubectl explain, the Cluster-mode refusal ------------------------------------------
wait_until 60 sh -c "kubectl explain rediscluster.spec.restore --api-version=cache.example.com/v1 2>/dev/null | grep -q '^FIELD: *restore '"
for f in restore restore.from restore.from.endpoint restore.from.bucket restore.from.key restore.from.region \
    restore.from.credentialsSecret restore.from.caSecret restore.from.sha256; do
    out=$(kubectl explain "rediscluster.spec.$f" --api-version=cache.example.com/v1 2>&1)
    leaf=${f##*.}
    check "kubectl explain rediscluster.spec.$f documents it" \
        sh -c "printf '%s\n' \"\$1\" | grep -q \"^FIELD: *$leaf \" && printf '%s\n' \"\$1\" | sed -n '/^DESCRIPTION:/,\$p' | grep -q '[a-z]'" _ "$out"
done
refused "Cluster mode with spec.restore's bucket/key form: refused by the API server (CEL)" \
    "in Cluster mode must name a RedisBackup (backup): each shard restores its own object" \
    sh -c "printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: cm, namespace: $ns}\nspec: {size: 6, image: redis, mode: Cluster, restore: {from: {endpoint: \"http://127.0.0.1:1\", bucket: backups, key: k, credentialsSecret: s3-creds}}}\n' | kubectl apply -f -"

# ---- 2. The S3 server ------------------------------------------------------------------------
bucket=backups
s3_start "$bucket"

# ---- 3. The source cluster, its keys, a backup -----------------------------------------------
check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "operator ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"

backup_src
kv_files "$KEYS"
redis-cli -h "$src_ip" <"$work/set.txt" >/dev/null
check "src holds the $KEYS keys" output_is "$KEYS" redis-cli -h "$src_ip" dbsize
"$BIN/rdc-backup" take --redis "$src_ip:6379" --endpoint "$S3_ENDPOINT" --bucket "$bucket" --key src/dump.rdb \
    --region "$S3_REGION" --credentials-dir "$work/creds" >"$work/take.json" 2>"$work/take.err"
echo "# take: $(cat "$work/take.json" "$work/take.err")"
check "rdc-backup take from src-0 ($src_ip): ok" sh -c "jq -e '.result == \"ok\"' <'$work/take.json' >/dev/null"
kubectl -n "$ns" create secret generic s3-creds --from-file=access-key-id="$work/creds/access-key-id" \
    --from-file=secret-access-key="$work/creds/secret-access-key" >/dev/null

# ---- 4. A new cluster restored from it ---------------------------------------------------------
restored_yaml() { # restored_yaml NAME [sha256-line]
    rc_yaml "$1" "$ns" <<YAML
  size: 1
  image: redis
  version: "7.2"
  mode: Standalone
  restore:
    from:
      endpoint: "$S3_ENDPOINT"
      bucket: $bucket
      key: src/dump.rdb
      region: $S3_REGION
      credentialsSecret: s3-creds
${2:-}
YAML
}
restored_yaml dst | kubectl apply -f - >/dev/null
check "dst Running" wait_until 300 running dst
check "dst-0's init container restore Completed (exit 0)" \
    output_is "Completed,0" jqs pod/dst-0 '.status.initContainerStatuses[0] | "\(.state.terminated.reason),\(.state.terminated.exitCode)"'
check "dst-0 Initialized" output_is True jqs pod/dst-0 '.status.conditions[] | select(.type=="Initialized") | .status'
check "the init container ran rdc-backup restore --aof (persistence aof)" \
    output_is true jqs statefulset/dst '.spec.template.spec.initContainers[0].command | index("--aof") != null'
dst_ip=$(pod_ip dst-0)
check "dst: DBSIZE $KEYS" output_is "$KEYS" redis-cli -h "$dst_ip" dbsize
redis-cli -h "$dst_ip" --raw <"$work/get.txt" >"$work/got.txt"
check "dst: every key back with its value" cmp -s "$work/got.txt" "$work/want.txt"
check "dst: loaded from the AOF base (appendonlydir)" \
    output_is 1 sh -c "redis-cli -h $dst_ip info persistence | tr -d '\r' | sed -n 's/^aof_enabled://p'"
refused "spec.restore is immutable (the API server, CEL)" "is immutable" \
    kubectl -n "$ns" patch rdc dst --type=merge -p '{"spec":{"restore":{"from":{"key":"other.rdb"}}}}'

# ---- 5. The skip rule: a restarted pod keeps what it wrote since ---------------------------------
redis-cli -h "$dst_ip" set after-restore yes >/dev/null
uid0=$(jqs pod/dst-0 .metadata.uid)
kubectl -n "$ns" delete pod dst-0 --wait=true --timeout=60s >/dev/null
check "dst-0 made again (another uid) and Ready" \
    wait_until 180 sh -c "u=\$(kubectl -n $ns get pod dst-0 -o jsonpath='{.metadata.uid}' 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $uid0 ] && kubectl -n $ns get pod dst-0 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
dst_ip=$(pod_ip dst-0)
check "the init container ran again and skipped (its log)" \
    wait_until 30 sh -c "kubectl -n $ns logs dst-0 -c restore 2>/dev/null | grep -q '\"result\":\"skipped\"'"
check "the key written after the restore is there" output_is yes redis-cli -h "$dst_ip" get after-restore
check "DBSIZE $((KEYS + 1))" output_is "$((KEYS + 1))" redis-cli -h "$dst_ip" dbsize

# ---- 6. A failed restore: the pod does not start, the status says why ------------------------------
restored_yaml bad-sha "      sha256: \"$(printf '0%.0s' $(seq 64))\"" | kubectl apply -f - >/dev/null
check "bad-sha: Ready False with reason RestoreFailed within 120 s" wait_output 120 RestoreFailed ready_reason bad-sha
check "bad-sha: the message is rdc-backup's line (SHA-256 ..., want 000...)" \
    sh -c "kubectl -n $ns get rdc bad-sha -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q 'SHA-256 of the .* bytes is .*, want 0000'"
check "bad-sha: redis never started (PodInitializing)" \
    output_is PodInitializing jqs pod/bad-sha-0 '.status.containerStatuses[0].state.waiting.reason'
# The object corrupted in the bucket, its metadata kept (versitygw keeps it in xattrs).
python3 - "$S3_DATA/$bucket/src/dump.rdb" <<'EOP'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"\0corrupted-byte\0", os.fstat(fd).st_size // 2)
os.close(fd)
EOP
restored_yaml bad-obj | kubectl apply -f - >/dev/null
check "bad-obj (a corrupted object): Ready False with reason RestoreFailed within 120 s" \
    wait_output 120 RestoreFailed ready_reason bad-obj
check "bad-obj: the message names the checksum" \
    sh -c "kubectl -n $ns get rdc bad-obj -o json | jq -r '.status.conditions[] | select(.type==\"Ready\") | .message' | grep -q 'SHA-256'"
check "bad-obj: redis never started (PodInitializing)" \
    output_is PodInitializing jqs pod/bad-obj-0 '.status.containerStatuses[0].state.waiting.reason'
check "dst, already restored, is untouched by the corrupted object (DBSIZE $((KEYS + 1)))" \
    output_is "$((KEYS + 1))" redis-cli -h "$dst_ip" dbsize
summary
