#!/usr/bin/env bash
# End to end: a backup interrupted in the middle of its upload is never reported as a
# success (issue 36's "the operator killed mid-upload: no half object reported as a
# success"; docs/backup.md "Interrupted backups"), on process nodes: a real redis-server,
# the RedisBackup's Job (rdc-backup take), the pinned versitygw.
#
# The upload is caught in its middle the same way both times: the RedisBackup is created,
# and as soon as the S3 server's data directory holds a file newer than that moment (the
# first part of the multipart upload landed) the S3 server is frozen (SIGSTOP): the take
# is then blocked inside its upload, with parts sent and the object not completed.
#   1. The S3 server, the credentials, a Standalone RedisCluster "src" with DATA_MB MiB of
#      incompressible values (enough for a multipart upload of many 8 MiB parts).
#   2. The operator killed mid-upload: RedisBackup "one" caught as above; the operator
#      SIGKILLed and started again while the upload is blocked; for 10 s after it is ready
#      the RedisBackup is still Running (neither Succeeded nor Failed while the take has
#      not finished); the S3 server thawed: the take finishes, the RedisBackup Succeeded,
#      and the object in the bucket has status.size bytes hashing to status.sha256
#      (rdc-backup restore --expect-sha256 and sha256sum).
#   3. The take killed mid-upload: RedisBackup "cut" caught as above; its pod's process
#      SIGKILLed (cluster.sh pod-kill), the S3 server thawed: the RedisBackup Failed with a
#      message, a Warning Event BackupFailed, and no object at cut/cut.rdb (the parts sent
#      are an incomplete multipart upload, never an object; rdc-backup restore of that key
#      fails with NoSuchKey).
#   4. (first) A RedisBackup named with 64 characters is refused by the API server (CEL):
#      its name is its Job's name and the value of the label cache.example.com/backup.
#   tests/e2e/test_backup_kill.sh    (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up first)
# Knobs: DATA_MB (default 256).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

DATA_MB=${DATA_MB:-256}
backup_e2e_begin bkill "rdc-e2e-bkill-$$"
s3_frozen=0
cleanup_more() {
    [ "$s3_frozen" = 1 ] && kill -CONT "$S3_PID" 2>/dev/null
    "$TOP/tests/cluster/s3.sh" stop "$work/s3" >/dev/null 2>&1
}
operator_start() { # operator_start RUNDIR LOG
    sup_start "$BIN" "$1" "$2" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
    check "operator ready ($2)" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
}

# ---- 1. The S3 server, the source cluster and its data ----------------------------------------
check "RedisBackup CRD established" \
    wait_until 60 kubectl wait --for=condition=Established --timeout=10s crd/redisbackups.cache.example.com
long=b$(printf 'x%.0s' $(seq 63))
refused "a RedisBackup named with 64 characters: refused (its Job's label value would be)" \
    "must be at most 63 characters" sh -c "printf 'apiVersion: cache.example.com/v1\nkind: RedisBackup\nmetadata: {name: $long, namespace: $ns}\nspec: {source: {cluster: src}, destination: {endpoint: \"http://127.0.0.1:1\", bucket: backups}, credentialsSecret: {name: s3-creds}}\n' | kubectl apply -f -"
bucket=backups
backup_setup "$ns" "$bucket"
operator_start "$work/rt" "$work/operator.log"
backup_src
# DATA_MB x 1024 keys of 1 KiB random hex (LZF cannot shrink it), as RESP for --pipe.
python3 - "$DATA_MB" >"$work/fill.resp" <<'PY'
import os, sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1]) * 1024):
    k, v = b"big:%d" % i, os.urandom(512).hex().encode()
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
redis-cli -h "$src_ip" --pipe <"$work/fill.resp" >"$work/fill.out" 2>&1
rm -f "$work/fill.resp"
check "src holds $((DATA_MB * 1024)) keys" output_is "$((DATA_MB * 1024))" redis-cli -h "$src_ip" dbsize

# catch_mid_upload NAME PREFIX: create the RedisBackup, freeze the S3 server once a file
# newer than the creation is in its data directory (the upload's first part); true if so.
upload_started() { find "$S3_DATA" -type f -newer "$work/marker" 2>/dev/null | grep -q .; }
catch_mid_upload() {
    touch "$work/marker"
    sleep 0.01
    rb_yaml "$1" "$bucket" "$2" | kubectl apply -f - >/dev/null
    local end=$((SECONDS + 180))
    while [ "$SECONDS" -lt "$end" ]; do
        if upload_started; then
            kill -STOP "$S3_PID" && s3_frozen=1
            echo "# $1: S3 server frozen with $(find "$S3_DATA" -type f -newer "$work/marker" | wc -l) new file(s)," \
                "$(find "$S3_DATA" -type f -newer "$work/marker" -printf '%s\n' | awk '{s += $1} END {print s + 0}') bytes" \
                >"$work/caught-$1"
            return 0
        fi
        sleep 0.02
    done
    return 1
}
s3_thaw() { kill -CONT "$S3_PID" && s3_frozen=0; }
object() { echo "$S3_DATA/$bucket/$1"; }

# ---- 2. The operator killed mid-upload ----------------------------------------------------------
check "one: the upload caught in its middle (S3 server frozen)" catch_mid_upload one one/
cat "$work/caught-one" 2>/dev/null
check "one: Running while its upload is blocked" output_is Running rb_phase one
kill -KILL -- "-$sup_pid" 2>/dev/null || kill -KILL "$sup_pid"
wait "$sup_pid" 2>/dev/null
echo "# operator SIGKILLed mid-upload"
operator_start "$work/rt2" "$work/operator2.log"
not_settled() { # phase Running at every look for 10 s
    local end=$((SECONDS + 10))
    while [ "$SECONDS" -lt "$end" ]; do [ "$(rb_phase one)" = Running ] || return 1; sleep 0.5; done
}
check "one: still Running 10 s after the restarted operator is ready (the take has not finished)" not_settled
check "one: no object at one/one.rdb while the upload is blocked" test ! -e "$(object one/one.rdb)"
check "the S3 server thawed" s3_thaw
check "one: Succeeded within 180 s of the thaw" wait_output 180 Succeeded rb_phase one
size=$(jqs "$RB/one" '.status.size // empty')
sha=$(jqs "$RB/one" '.status.sha256 // empty')
echo "# one: $(jqs "$RB/one" '.status | tostring')"
check "one: status.size ($size) is at least the data (${DATA_MB} MiB)" test "${size:-0}" -ge $((DATA_MB * 1048576))
check "one: the object has status.size bytes" output_is "$size" stat -c %s "$(object one/one.rdb)"
check "one: the object's sha256sum is status.sha256" \
    output_is "$sha" sh -c "sha256sum '$(object one/one.rdb)' | cut -d' ' -f1"
"$BIN/rdc-backup" restore --to "$work/one.rdb" --endpoint "$S3_ENDPOINT" --bucket "$bucket" --key one/one.rdb \
    --region "$S3_REGION" --credentials-dir "$work/creds" --expect-sha256 "$sha" >"$work/restore.json" 2>&1
check "one: rdc-backup restore --expect-sha256 status.sha256: restored" \
    sh -c "jq -e '.result == \"restored\"' <'$work/restore.json' >/dev/null"
rm -f "$work/one.rdb"

# ---- 3. The take killed mid-upload ----------------------------------------------------------------
check "cut: the upload caught in its middle (S3 server frozen)" catch_mid_upload cut cut/
cat "$work/caught-cut" 2>/dev/null
cut_pod=$(kubectl -n "$ns" get pods -l job-name=cut -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
check "cut: its pod's process SIGKILLed ($cut_pod)" "$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$cut_pod"
check "the S3 server thawed" s3_thaw
check "cut: Failed within 120 s" wait_output 120 Failed rb_phase cut
msg=$(jqs "$RB/cut" '.status.message // empty')
echo "# cut: $msg"
check "cut: status.message says the take was killed (signal 9, exit code 137)" \
    sh -c "printf '%s' \"\$1\" | grep -q 'killed by signal 9 (exit code 137)'" _ "$msg"
check "cut: Warning Event BackupFailed" wait_until 30 has_event cut BackupFailed
check "cut: no key or size reported" output_is "" jqs "$RB/cut" '(.status.key // "") + (.status.size // "" | tostring)'
check "cut: no object at cut/cut.rdb" test ! -e "$(object cut/cut.rdb)"
"$BIN/rdc-backup" restore --to "$work/cut.rdb" --endpoint "$S3_ENDPOINT" --bucket "$bucket" --key cut/cut.rdb \
    --region "$S3_REGION" --credentials-dir "$work/creds" >"$work/cut.json" 2>&1
echo "# restore cut/cut.rdb: $(head -c 300 "$work/cut.json")"
check "cut: rdc-backup restore of cut/cut.rdb fails: NoSuchKey" grep -q NoSuchKey "$work/cut.json"
check "cut: and wrote no file" test ! -e "$work/cut.rdb"
summary
