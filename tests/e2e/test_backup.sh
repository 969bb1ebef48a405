#!/usr/bin/env bash
# End to end: backups by the operator (docs/backup.md "What the operator does"), on process
# nodes: real redis-servers, each RedisBackup's Job (rdc-backup take in the operator's
# image, its outcome read from the pod's termination message: the process runtime's
# /dev/termination-log, tests/cluster/README.md "Termination messages"), the pinned
# versitygw.
#
#   1. The S3 server (tests/cluster/s3.sh: versitygw on 127.0.0.1 and a free port; the
#      pods' processes share the machine's network) and the credentials Secret.
#   2. A Standalone RedisCluster "src" (size 1) with auth, 100,000 keys written (the issue's figure).
#   3. A RedisBackup "one" of src: phase Succeeded within 180 s, status key/size/sha256/
#      sourcePod set, Event BackupSucceeded; the operator's /metrics counts it in
#      rdc_backups_total and says its completionTime in
#      rdc_backup_last_success_timestamp_seconds; the object is in the bucket (versitygw's file)
#      with that size, and downloaded by rdc-backup restore (which checks the object's
#      x-amz-meta-sha256 against status.sha256) its bytes hash to it (sha256sum).
#   4. A new RedisCluster "dst" with spec.restore.from that object (and its sha256): every
#      key back with its value.
#  4b. A new RedisCluster "dst2" with spec.restore.from.backup: one (the RedisBackup by
#      name, docs/backup.md "Restore from a RedisBackup"): status.restore.source records
#      one's object, every key back with its value; RedisBackup one deleted, dst2 reconciled
#      again (an annotation): its StatefulSet's pod template and generation unchanged, still
#      Running. A RedisCluster "ghost" restoring from a RedisBackup that does not exist:
#      Ready False RestoreFailed with a message naming it, a Warning Event RestoreFailed, no
#      StatefulSet and no pod.
#   5. spec.backup on src (schedule "*/1 * * * *", keep 2, prefix sched/): within 270 s at
#      least 3 of the schedule's RedisBackups were created and 3 Succeeded (their names
#      collected while polling: retention deletes the older ones); then at most 2
#      Succeeded remain (at least 1), none Failed, and 1 to 2 objects under sched/
#      (rdc-backup list), status.backup.lastScheduleTime set.
#      spec.backup removed again.
#   6. A RedisBackup "nobucket" to a bucket that does not exist: phase Failed within 180 s
#      with rdc-backup's line (NoSuchBucket) in status.message, a Warning Event
#      BackupFailed on it.
#   7. The operator's log: no error about RedisBackups, their Jobs or pods.
# Everything this script starts (the operator, the S3 server) is stopped by its PID; the
# namespace, with every RedisCluster, RedisBackup, Job and Secret in it, is deleted.
#   tests/e2e/test_backup.sh      (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up first)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

KEYS=${BACKUP_E2E_KEYS:-100000}
backup_e2e_begin backup "rdc-e2e-backup-$$"
s3list() { # s3list PREFIX: rdc-backup list's lines
    "$BIN/rdc-backup" list --prefix "$1" --endpoint "$S3_ENDPOINT" --bucket "$bucket" --region "$S3_REGION" \
        --credentials-dir "$work/creds"
}

# ---- 1. The S3 server, the credentials ---------------------------------------------------------
check "RedisBackup CRD established" \
    wait_until 60 kubectl wait --for=condition=Established --timeout=10s crd/redisbackups.cache.example.com
bucket=backups
s3_start "$bucket"

check "cluster.sh pin-namespace $ns" "$TOP/tests/cluster/cluster.sh" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
kubectl -n "$ns" create secret generic s3-creds --from-file=access-key-id="$work/creds/access-key-id" \
    --from-file=secret-access-key="$work/creds/secret-access-key" >/dev/null
PW=bk-$(openssl rand -hex 8)
kubectl -n "$ns" create secret generic pw --from-literal=password="$PW" >/dev/null
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
check "operator ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"

# ---- 2. The source cluster and its keys -----------------------------------------------------------
backup_src "  auth: {secretRef: {name: pw}}"
kv_files "$KEYS"
REDISCLI_AUTH="$PW" redis-cli -h "$src_ip" <"$work/set.txt" >/dev/null
check "src holds the $KEYS keys" output_is "$KEYS" env REDISCLI_AUTH="$PW" redis-cli -h "$src_ip" dbsize

# ---- 3. A RedisBackup ------------------------------------------------------------------------------
rb_yaml one "$bucket" one/ | kubectl apply -f - >/dev/null
check "RedisBackup one: Succeeded within 180 s" wait_output 180 Succeeded rb_phase one
echo "# one: $(jqs "$RB/one" '.status | tostring')"
# metrics (docs/backup.md "Metrics and the alert"): the counter and the last success, from /metrics
src_sum() { # src_sum NAME: the sum of NAME's series of src (the counter's: result succeeded)
    curl -s "http://127.0.0.1:$metrics/metrics" | awk -v n="$1{" 'index($0, n) == 1 && /rediscluster="src"/ &&
        (!/result=/ || /result="succeeded"/) { s += $NF } END { printf "%d\n", s }'
}
counted() { [ "$(src_sum rdc_backups_total)" -ge 1 ]; }
check "/metrics: rdc_backups_total{rediscluster=src,result=succeeded} >= 1" wait_until 10 counted
done_s=$(date -u -d "$(jqs "$RB/one" .status.completionTime)" +%s)
check "/metrics: rdc_backup_last_success_timestamp_seconds of src is one's completionTime ($done_s)" \
    wait_output 10 "$done_s" src_sum rdc_backup_last_success_timestamp_seconds
key=$(jqs "$RB/one" '.status.key // empty')
size=$(jqs "$RB/one" '.status.size // empty')
sha=$(jqs "$RB/one" '.status.sha256 // empty')
check "one: status.key is one/one.rdb" test "$key" = one/one.rdb
check "one: status.size is set (> 0)" test "${size:-0}" -gt 0
check "one: status.sha256 is 64 hex digits" sh -c "printf '%s' '$sha' | grep -qxE '[0-9a-f]{64}'"
check "one: status.sourcePod is src-0" output_is src-0 jqs "$RB/one" .status.sourcePod
check "one: its Job ran (label cache.example.com/backup=one)" \
    output_is one jqs job/one '.metadata.labels["cache.example.com/backup"]'
check "one: Event BackupSucceeded" wait_until 30 has_event one BackupSucceeded
# (rdc-backup list shows only a schedule's <prefix>/<time>.rdb objects: versitygw's file here)
check "the object $bucket/$key is in the bucket: $size bytes" output_is "$size" stat -c %s "$S3_DATA/$bucket/$key"
mkdir -p "$work/dl"
"$BIN/rdc-backup" restore --to "$work/dl/dump.rdb" --endpoint "$S3_ENDPOINT" --bucket "$bucket" --key "$key" \
    --region "$S3_REGION" --credentials-dir "$work/creds" --expect-sha256 "$sha" >"$work/restore.json" 2>&1
echo "# restore: $(cat "$work/restore.json")"
check "rdc-backup restore --expect-sha256 status.sha256: restored" \
    sh -c "jq -e '.result == \"restored\"' <'$work/restore.json'"
check "the object downloaded: $size bytes" output_is "$size" stat -c %s "$work/dl/dump.rdb"
check "the object downloaded: its sha256sum is status.sha256" \
    output_is "$sha" sh -c "sha256sum '$work/dl/dump.rdb' | cut -d' ' -f1"

# ---- 4. A new cluster restored from it ---------------------------------------------------------------
restored_rc() { # restored_rc NAME: a Standalone RedisCluster of 1 pod whose spec.restore.from is stdin's lines
    { printf '  size: 1\n  image: redis\n  version: "7.2"\n  mode: Standalone\n  restore:\n    from:\n'; cat; } |
        rc_yaml "$1" "$ns" | kubectl apply -f - >/dev/null
}
keys_back() { # keys_back RC: its pod holds the $KEYS keys, each with its value
    local ip
    ip=$(pod_ip "$1-0")
    check "$1: DBSIZE $KEYS" output_is "$KEYS" redis-cli -h "$ip" dbsize
    redis-cli -h "$ip" --raw <"$work/get.txt" >"$work/got-$1.txt"
    check "$1: every key back with its value" cmp -s "$work/got-$1.txt" "$work/want.txt"
}
restored_rc dst <<YAML
      endpoint: "$S3_ENDPOINT"
      bucket: $bucket
      key: $key
      region: $S3_REGION
      credentialsSecret: s3-creds
      sha256: "$sha"
YAML
check "dst Running" wait_until 300 running dst
keys_back dst

# ---- 4b. Restored from the RedisBackup by name; the RedisBackup deleted; one that does not exist ------
restored_rc dst2 <<<'      backup: one'
check "dst2 (restore.from.backup: one) Running" wait_until 300 running dst2
echo "# dst2: status.restore: $(jqs rdc/dst2 '.status.restore | tostring')"
check "dst2: status.restore.source is one's object (bucket, key, sha256)" \
    output_is "one $bucket $key $sha" jqs rdc/dst2 '.status.restore.source | "\(.backup) \(.bucket) \(.key) \(.sha256)"'
keys_back dst2
template() { kubectl -n "$ns" get statefulset "$1" -o json 2>/dev/null | jq -cS .spec.template; } # template STS
template dst2 >"$work/dst2-template.json"
sts_gen=$(jqs statefulset/dst2 .metadata.generation)
check "dst2: its restore init container downloads one's key" \
    sh -c "jq -e --arg k \"\$1\" '.spec.initContainers[0].command | any(. == \$k)' <'$work/dst2-template.json'" _ "$key"
reconciled() { grep -c '"msg":"reconciled".*"namespace":"'"$ns"'","name":"'"$1"'"' "$work/operator.log"; } # reconciled RC
more_reconciles() { [ "$(reconciled "$1")" -gt "$2" ]; }                # more_reconciles RC COUNT
kubectl -n "$ns" delete "$RB/one" --wait=true --timeout=60s >/dev/null 2>&1
check "RedisBackup one deleted" wait_output 60 "" jqs "$RB/one" '.metadata.name // empty'
seen=$(reconciled dst2)
kubectl -n "$ns" annotate rdc dst2 e2e.example.com/poke="$(date +%s)" --overwrite >/dev/null
check "dst2 reconciled after one was deleted (an annotation)" wait_until 60 more_reconciles dst2 "$seen"
check "dst2: the pod template is unchanged" output_is "$(cat "$work/dst2-template.json")" template dst2
check "dst2: the StatefulSet's generation is unchanged ($sts_gen)" output_is "$sts_gen" jqs statefulset/dst2 .metadata.generation
check "dst2: status.restore.source kept" output_is "one $key" jqs rdc/dst2 '.status.restore.source | "\(.backup) \(.key)"'
check "dst2 still Running" running dst2

restored_rc ghost <<<'      backup: no-such-backup'
ready_of() { jqs "rdc/$1" '.status.conditions[]? | select(.type == "Ready") | "\(.reason) \(.message)"'; }
ghost_failed() { ready_of ghost | grep -q "^RestoreFailed .*RedisBackup $ns/no-such-backup does not exist"; }
check "ghost: Ready RestoreFailed naming RedisBackup $ns/no-such-backup within 60 s" wait_until 60 ghost_failed
echo "# ghost: Ready: $(ready_of ghost)"
check "ghost: phase Pending" output_is Pending jqs rdc/ghost .status.phase
rc_event() { # rc_event RC REASON: a Warning Event of that reason on the RedisCluster
    kubectl -n "$ns" get events --field-selector "involvedObject.kind=RedisCluster,involvedObject.name=$1,reason=$2,type=Warning" \
        -o name 2>/dev/null | grep -q .
}
check "ghost: Warning Event RestoreFailed" wait_until 30 rc_event ghost RestoreFailed
check "ghost: no StatefulSet" output_is "" jqs statefulset/ghost '.metadata.name // empty'
check "ghost: no pod" output_is 0 sh -c "kubectl -n $ns get pods -l app.kubernetes.io/instance=ghost -o name | wc -l"

# ---- 5. The schedule ---------------------------------------------------------------------------------
kubectl -n "$ns" patch rdc src --type=merge -p "$(jq -cn --arg e "$S3_ENDPOINT" --arg b "$bucket" --arg r "$S3_REGION" \
    '{spec: {backup: {schedule: "*/1 * * * *", keep: 2, credentialsSecret: "s3-creds",
                      destination: {endpoint: $e, bucket: $b, prefix: "sched/", region: $r}}}}')" >/dev/null
: >"$work/sched-seen"
: >"$work/sched-succeeded"
sched_now() { # the schedule's RedisBackups now: "name phase" lines
    kubectl -n "$ns" get "$RB" -l cache.example.com/schedule=src -o json 2>/dev/null |
        jq -r '.items[] | "\(.metadata.name) \(.status.phase // "-")"'
}
sched_poll() { # collect names; true once 3 were created and 3 Succeeded
    sched_now >"$work/sched-now" || return 1
    awk '{print $1}' "$work/sched-now" >>"$work/sched-seen"
    awk '$2 == "Succeeded" {print $1}' "$work/sched-now" >>"$work/sched-succeeded"
    [ "$(sort -u "$work/sched-seen" | wc -l)" -ge 3 ] && [ "$(sort -u "$work/sched-succeeded" | wc -l)" -ge 3 ]
}
check "spec.backup: 3 scheduled RedisBackups created and Succeeded within 270 s" wait_until 270 sched_poll
echo "# scheduled RedisBackups seen: $(sort -u "$work/sched-seen" | tr '\n' ' ')"
echo "# of them Succeeded: $(sort -u "$work/sched-succeeded" | tr '\n' ' ')"
names_ok() { ! sort -u "$work/sched-seen" | grep -vqxE 'src-[0-9]{12}'; }
check "the schedule's RedisBackups are named src-<UTC yyyymmddhhmm>" names_ok
succeeded_le_2() { local n; n=$(sched_now | awk '$2 == "Succeeded"' | wc -l) && [ "$n" -ge 1 ] && [ "$n" -le 2 ]; }
objects_le_2() { local n; n=$(s3list sched | grep -c '"key"') && [ "$n" -ge 1 ] && [ "$n" -le 2 ]; }
check "retention: 1 to 2 Succeeded schedule RedisBackups remain (within 90 s)" wait_until 90 succeeded_le_2
check "retention: 1 to 2 objects under sched/ (rdc-backup list, within 90 s)" wait_until 90 objects_le_2
none_failed() { sched_now >"$work/sched-now" && ! awk '$2 == "Failed"' "$work/sched-now" | grep -q .; }
check "no schedule RedisBackup Failed" none_failed
echo "# now: $(sched_now | tr '\n' ' '); objects: $(s3list sched 2>&1 | jq -r .key 2>/dev/null | tr '\n' ' ')"
check "src: status.backup.lastScheduleTime set" \
    sh -c "kubectl -n $ns get rdc src -o jsonpath='{.status.backup.lastScheduleTime}' | grep -q T"
kubectl -n "$ns" patch rdc src --type=merge -p '{"spec":{"backup":null}}' >/dev/null
check "spec.backup removed" output_is "" jqs rdc/src '.spec.backup // empty'

# ---- 6. A backup that fails ----------------------------------------------------------------------------
rb_yaml nobucket no-such-bucket-e2e one/ | kubectl apply -f - >/dev/null
check "RedisBackup nobucket: Failed within 180 s" wait_output 180 Failed rb_phase nobucket
msg=$(jqs "$RB/nobucket" '.status.message // empty')
echo "# nobucket: $msg"
check "nobucket: status.message is rdc-backup's line (rdc-backup take: ... NoSuchBucket)" \
    sh -c "printf '%s' \"\$1\" | grep -q '^rdc-backup take: .*NoSuchBucket'" _ "$msg"
check "nobucket: Warning Event BackupFailed" wait_until 30 has_event nobucket BackupFailed

# ---- 7. The operator's log --------------------------------------------------------------------------
check "operator log: no error about RedisBackups, their Jobs or pods" sh -c "[ -z \"\$1\" ]" _ "$(backup_errors)"
backup_errors | head -5 | sed 's/^/# /'
summary
