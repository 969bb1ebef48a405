#!/usr/bin/env bash
# bench/backup.sh: backup and restore throughput with DATA bytes of keys (issue 36's bench;
# docs/backup.md), side by side with what a user would do by hand on the same pod, the
# same data and the same S3 server (the pinned versitygw), alternating trials.
# `make bench-backup` runs it; bench/README.md has the table.
#
#   1. A Replication RedisCluster "bk" (size 2) made by this checkout's operator; DATA bytes
#      of keys (VALUE_BYTES random hex each, which LZF cannot shrink) written to the primary
#      through redis-cli --pipe. Every backup reads the replica, as the operator's do (its
#      redis.conf has repl-diskless-sync-delay 0, docs/replication.md; a Standalone pod
#      keeps Redis's 5 s, which each of its backups waits).
#   2. TRIALS times, alternating:
#        rdc-backup take       the operator's binary on this machine: the replication stream
#                              to S3 in 8 MiB parts, hashed on the way (no local file);
#        redis-cli --rdb + curl   the RDB to a local file (redis-cli --rdb), then
#                              `curl -T --aws-sigv4` (one PUT), the two timed together;
#        RedisBackup           the operator's way: the object created to phase Succeeded
#                              (a Job's pod, its start included), polled every 200 ms;
#      and for restore:
#        rdc-backup restore    the object to a file, its SHA-256 checked;
#        curl + sha256sum      the same object with curl's GET, then sha256sum.
#   MB/s is the RDB's size (MiB) over the seconds. The load average at start is printed.
#
# Knobs: DATA=1073741824 VALUE_BYTES=1024 TRIALS=2 CB_CLUSTER_DIR=/tmp/rdc-cluster-bkbench
#   RDC_POD_CIDR=127.74.0.0/16 (when this script starts the control plane) BK_KEEP_CLUSTER=1
#   BK_OUT=<file> (default bench/results/backup-<date>-<sha>.json). Short: DATA=67108864.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
DATA=${DATA:-1073741824}
VALUE_BYTES=${VALUE_BYTES:-1024}
TRIALS=${TRIALS:-2}
# shellcheck source=lib_cluster.sh
. bench/lib_cluster.sh
bench_cluster_start backup /tmp/rdc-cluster-bkbench 127.74.0.0/16
work=$(mktemp -d /tmp/rdc-bench-backup.XXXXXX)
started=0 ns=rdc-bench-bk-$$
cleanup() {
    sup_stop 5
    kubectl -n "$ns" delete rdc bk --timeout=20s >/dev/null 2>&1 ||
        kubectl -n "$ns" patch rdc bk --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    "$top/tests/cluster/s3.sh" stop "$work/s3" >/dev/null 2>&1
    if [ "$started" = 1 ] && [ "${BK_KEEP_CLUSTER:-0}" != 1 ]; then "$cluster" down >&2 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_cluster_up
bench_crds redisclusters redisbackups || exit 1
kubectl create namespace "$ns" >/dev/null || exit 1
bucket=backups
backup_setup "$ns" "$bucket" >&2
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
rc_yaml bk "$ns" <<YAML | kubectl apply -f - >/dev/null
  size: 2
  image: redis
  version: "7.2"
  mode: Replication
YAML
wait_until 240 bash -c "kubectl -n $ns get rdc bk -o jsonpath='{.status.phase}' | grep -qx Running" ||
    { log "the cluster did not come up"; exit 1; }
role_ip() { kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=bk,cache.example.com/role=$1" -o jsonpath='{.items[0].status.podIP}'; }
has_replica() { [ -n "$(role_ip replica)" ]; }
wait_until 60 has_replica || { log "no replica"; exit 1; }
primary=$(role_ip primary) ip=$(role_ip replica)

# ---- 1. the data ------------------------------------------------------------------------------
count=$((DATA / VALUE_BYTES))
t0=$(now_ms)
python3 - "$count" "$VALUE_BYTES" <<'PY' | redis-cli -h "$primary" --pipe >"$work/fill.out" 2>&1
import os, sys
n, vb = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
for i in range(n):
    k, v = b"d:%d" % i, os.urandom(vb // 2).hex().encode()
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
replica_has_all() { [ "$(redis-cli -h "$ip" dbsize)" = "$count" ]; }
wait_until 300 replica_has_all || log "the replica does not hold the $count keys"
log "fill: $(redis-cli -h "$ip" dbsize) keys on the replica in $(( $(now_ms) - t0 )) ms; used_memory $(redis-cli -h "$ip" info memory | sed -n 's/^used_memory_human://p' | tr -d '\r')"

# ---- 2. the trials ------------------------------------------------------------------------------
s3args=(--endpoint "$S3_ENDPOINT" --bucket "$bucket" --region "$S3_REGION" --credentials-dir "$work/creds")
# (S3 and versitygw want x-amz-content-sha256 on every request; curl's SigV4 signs what it is given)
sigv4=(-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY")
: >"$work/rows"
row() { echo "$1 $2 ${3:--}" >>"$work/rows"; log "$1 trial $2: ${3:-failed} ms"; } # row SYSTEM TRIAL MS
timed() { local t=$(now_ms); "$@" >>"$work/cmd.out" 2>&1 || { log "failed: $*"; tail -3 "$work/cmd.out" >&2; return 1; }; echo $(( $(now_ms) - t )); }
ours_take() { timed "$BIN/rdc-backup" take --redis "$ip:6379" --key "take/$1.rdb" "${s3args[@]}"; }
by_hand() { timed sh -c "redis-cli -h '$ip' --rdb '$work/hand.rdb' >/dev/null && curl -sf -T '$work/hand.rdb' $(printf "'%s' " "${sigv4[@]}") '$S3_ENDPOINT/$bucket/hand/$1.rdb'"; }
rb_phase() { kubectl -n "$ns" get redisbackups.cache.example.com "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
ours_rb() {
    local t
    t=$(now_ms)
    printf 'apiVersion: cache.example.com/v1\nkind: RedisBackup\nmetadata: {name: rb%s, namespace: %s}\nspec:\n  source: {cluster: bk}\n  destination: {endpoint: "%s", bucket: %s, prefix: rb/, region: %s}\n  credentialsSecret: {name: s3-creds}\n' \
        "$1" "$ns" "$S3_ENDPOINT" "$bucket" "$S3_REGION" | kubectl apply -f - >/dev/null || return 1
    while :; do
        case $(rb_phase "rb$1") in
            Succeeded) echo $(( $(now_ms) - t )); return 0 ;;
            Failed) log "RedisBackup rb$1 Failed"; return 1 ;;
        esac
        [ $(( $(now_ms) - t )) -gt 1800000 ] && return 1
        sleep 0.2
    done
}
ours_restore() { rm -f "$work/r.rdb"; timed "$BIN/rdc-backup" restore --to "$work/r.rdb" --key "take/$1.rdb" --expect-sha256 "$2" "${s3args[@]}"; }
hand_restore() { rm -f "$work/h.rdb"; timed sh -c "curl -sf -o '$work/h.rdb' $(printf "'%s' " "${sigv4[@]}") '$S3_ENDPOINT/$bucket/take/$1.rdb' && sha256sum '$work/h.rdb' >/dev/null"; }
for i in $(seq 1 "$TRIALS"); do
    if [ $((i % 2)) = 1 ]; then row take "$i" "$(ours_take "$i")"; row hand "$i" "$(by_hand "$i")"
    else row hand "$i" "$(by_hand "$i")"; row take "$i" "$(ours_take "$i")"; fi
    rm -f "$work/hand.rdb"
    row rb "$i" "$(ours_rb "$i")"
    sha=$(sha256sum "$S3_DATA/$bucket/take/$i.rdb" | cut -d' ' -f1)
    if [ $((i % 2)) = 1 ]; then row restore "$i" "$(ours_restore "$i" "$sha")"; row get "$i" "$(hand_restore "$i")"
    else row get "$i" "$(hand_restore "$i")"; row restore "$i" "$(ours_restore "$i" "$sha")"; fi
    rm -f "$work/r.rdb" "$work/h.rdb"
done
size=$(stat -c %s "$S3_DATA/$bucket/take/1.rdb")

out=${BK_OUT:-bench/results/backup-$(date -u +%F)-$(git rev-parse --short HEAD).json}
python3 - "$out" "$work/rows" "$DATA" "$VALUE_BYTES" "$count" "$size" "$la1" <<'PY'
import json, statistics, sys
out, rows_f, data, vb, count, size, la = sys.argv[1:]
names = {"take": "rdc-backup take (replication stream -> S3 parts)",
         "hand": "redis-cli --rdb file + curl -T (by hand)",
         "rb": "RedisBackup: created -> Succeeded (a Job's pod)",
         "restore": "rdc-backup restore (S3 -> file, SHA-256 checked)",
         "get": "curl GET + sha256sum (by hand)"}
ms = {}
for line in open(rows_f):
    k, _, v = line.split()
    if v.isdigit():
        ms.setdefault(k, []).append(int(v))
mib = int(size) / 2**20
rows = [{"system": names[k], "trials_ms": ms.get(k, []),
         "median_s": statistics.median(ms[k]) / 1000 if ms.get(k) else None,
         "mib_per_s": mib / (statistics.median(ms[k]) / 1000) if ms.get(k) else None} for k in names]
json.dump({"data_bytes": int(data), "value_bytes": int(vb), "keys": int(count), "rdb_bytes": int(size),
           "rows": rows, "load_at_start": la}, open(out, "w"), indent=1)
print("### Backup and restore of %d keys of %d bytes (RDB %.0f MiB), load at start %s\n" % (int(count), int(vb), mib, la))
print("| | median time | MiB/s | trials (ms) |")
print("|---|---|---|---|")
for r in rows:
    t = "%.2f s" % r["median_s"] if r["median_s"] else "failed"
    m = "%.0f" % r["mib_per_s"] if r["mib_per_s"] else "-"
    print("| %s | %s | %s | %s |" % (r["system"], t, m, ", ".join(map(str, r["trials_ms"]))))
print("\nJSON: %s" % out)
PY
