#!/usr/bin/env bash
# make backup-check: rdc-backup (backup/, docs/backup.md) against real servers, all on
# 127.0.0.1: the pinned versitygw (tests/cluster/s3.sh), a redis-server primary with
# AUTH and a replica of it, 100,000 keys.
#   1. take from the replica (disk-based sync: the "$<len>" form), 5 MiB parts: multipart,
#      its memory (max RSS) below the RDB's size;
#   2. take from the primary (diskless sync: the "$EOF:<mark>" form), default part size;
#      and over TLS (--tls-dir: CA, client certificate), 5 MiB parts;
#   3. restore each into an empty data dir (but for a stale temporary file of a killed
#      restore, which goes), start a new redis-server on it, compare every key's value
#      with what was written; DBSIZE equal;
#      and with --aof (the base of a new appendonlydir) into a redis-server with appendonly
#      yes: every key, and a key written after it kept over a restart;
#   4. restore again over the restored dir: skipped (no S3 request: bogus endpoint and
#      credentials), the file untouched;
#   5. the object's bytes overwritten in place (its x-amz-meta-sha256 kept): refused, no
#      dump.rdb and no temporary file left; an object without the metadata: refused,
#      accepted with --expect-sha256 of its bytes; a missing key: refused; take over TLS
#      with a CA that did not sign the server's certificate, and with a wrong password:
#      refused, no object;
#   6. a node that breaks off mid-RDB after two parts went up: take fails, the multipart
#      upload is aborted (none left in progress), no object at the key;
#   7. scheduled backups: three takes with --prefix and --keep 2 (the listing in pages of
#      2): two remain, the newest; the third's line says what it pruned; objects under
#      the prefix that are not ours (another name, no x-amz-meta-sha256, a deeper prefix's
#      backup) survive; list prints the backups newest first with the takes' sha256;
#      prune --keep 1; a delete that fails (the object's file made immutable) is reported
#      and the take still succeeds; --termination-log holds the one line, the JSON line on
#      success (take, prune, restore) and the error line on failure;
#   8. Cluster mode: a cluster-enabled redis-server serving every slot: take --slots with
#      its slots succeeds and its line says them; with other slots it fails before the
#      sync; slots that move while the RDB is read (CLUSTER DELSLOTS during the diskless
#      sync's delay) fail it after the RDB with no object and no upload left in progress;
#      restore --only-pod NAME skips on another host (the dir left empty) and restores on
#      this one.
# A missing redis-server, or an S3 server that cannot be built or started, FAILS the
# check: it never skips. Every process started here is stopped by its PID.
#   tests/s3/backup.sh build/bin/rdc-backup
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work=$(mktemp -d "${TMPDIR:-/tmp}/rdc-backup-check.XXXXXX")
pids=()
failures=0
KEYS=${BACKUP_CHECK_KEYS:-100000}

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$here/../cluster/s3.sh" stop "$work/s3" || true
  [ -z "${immutable:-}" ] || chattr -i "$immutable" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

die() { echo "backup-check: FAILED: $*" >&2; exit 1; }
ok() { echo "  ok: $*"; }
bad() { echo "  FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check "what" command...: ok when the command succeeds
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
maxrss() {  # maxrss FILE command...: run it; its peak RSS in KiB into FILE (getrusage)
  python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$@"
}
json() {  # json FIELD < line
  python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"
}

command -v redis-server >/dev/null || die "redis-server is not installed (scripts/deps.sh installs it)"
command -v redis-cli >/dev/null || die "redis-cli is not installed (scripts/deps.sh installs it)"
[ -x "$bin" ] || die "no rdc-backup binary at $1"

# ---- the S3 server -------------------------------------------------------------------
env_lines=$("$here/../cluster/s3.sh" start "$work/s3") || die "the S3 server could not be built or started"
eval "$env_lines"
mkdir -p "$work/creds"
printf '%s\n' "$S3_ACCESS_KEY" >"$work/creds/access-key-id"
printf '%s\n' "$S3_SECRET_KEY" >"$work/creds/secret-access-key"
# versitygw's POSIX backend: a bucket is a directory of its data dir (tests/cluster/s3.sh).
bucket=backups
mkdir -p "$S3_DATA/$bucket"
s3=(--endpoint "$S3_ENDPOINT" --bucket "$bucket" --region "$S3_REGION" --credentials-dir "$work/creds")
echo "backup-check: versitygw at $S3_ENDPOINT, redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"

# ---- Redis ----------------------------------------------------------------------------
password=$(openssl rand -hex 16)
printf '%s\n' "$password" >"$work/password"
export REDISCLI_AUTH="$password"

start_redis() {  # start_redis NAME PORT DIR [args...]: started, answering PING
  local name=$1 port=$2 dir=$3; shift 3
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
    --logfile "$work/$name.log" "$@" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  cat "$work/$name.log" >&2
  die "redis-server $name on 127.0.0.1:$port did not answer"
}

# TLS: a CA, the server's certificate for IP 127.0.0.1, a client certificate (the
# primary asks for one), in the layout --tls-dir reads (cert-manager's: ca.crt, tls.crt,
# tls.key); and a second CA that trusts nothing of these.
pki() {
  local d=$work/pki ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  mkdir -p "$d" "$work/tls" "$work/tls-wrong"
  for ca in ca other-ca; do
    openssl req -x509 "${ec[@]}" -keyout "$d/$ca.key" -out "$d/$ca.crt" -subj "/CN=$ca" -days 1
  done
  openssl req "${ec[@]}" -keyout "$d/server.key" -out "$d/server.csr" -subj /CN=redis
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 1 \
    -out "$d/server.crt" -extfile <(printf 'subjectAltName=IP:127.0.0.1\n')
  openssl req "${ec[@]}" -keyout "$work/tls/tls.key" -out "$d/client.csr" -subj /CN=backup
  openssl x509 -req -in "$d/client.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 1 \
    -out "$work/tls/tls.crt"
  cp "$d/ca.crt" "$work/tls/ca.crt"
  cp "$d/other-ca.crt" "$work/tls-wrong/ca.crt"
}
pki >"$work/pki.log" 2>&1 || { cat "$work/pki.log" >&2; die "making the test certificates"; }

pport=$(free_port) rport=$(free_port) tport=$(free_port)
start_redis primary "$pport" "$work/primary" --requirepass "$password" --masterauth "$password" \
  --repl-diskless-sync yes --repl-diskless-sync-delay 0 --tls-port "$tport" \
  --tls-cert-file "$work/pki/server.crt" --tls-key-file "$work/pki/server.key" \
  --tls-ca-cert-file "$work/pki/ca.crt" --tls-auth-clients yes
start_redis replica "$rport" "$work/replica" --requirepass "$password" --masterauth "$password" \
  --replicaof 127.0.0.1 "$pport" --repl-diskless-sync no

# 100,000 keys of 256 hex characters each (little for LZF to compress: an RDB of ~27 MB,
# five 5 MiB parts and more than take's whole memory).
python3 - "$KEYS" "$work" <<'EOP'
import hashlib, sys
n, work = int(sys.argv[1]), sys.argv[2]
with open(f"{work}/fill.txt", "w") as fill, open(f"{work}/expected.txt", "w") as exp, \
     open(f"{work}/mget.txt", "w") as mget:
    for i in range(n):
        h = hashlib.sha256(str(i).encode()).hexdigest()
        v = h
        for _ in range(3):
            h = hashlib.sha256(h.encode()).hexdigest()
            v += h
        fill.write(f"SET key:{i} {v}\r\n")
        exp.write(v + "\n")
    for start in range(0, n, 1000):
        mget.write("MGET " + " ".join(f"key:{i}" for i in range(start, min(n, start + 1000))) + "\n")
EOP
redis-cli -p "$pport" --pipe <"$work/fill.txt" >"$work/fill.out" || die "filling the primary: $(cat "$work/fill.out")"
[ "$(redis-cli -p "$pport" dbsize)" = "$KEYS" ] || die "the primary does not hold $KEYS keys"
synced=0
for _ in $(seq 300); do
  m=$(redis-cli -p "$pport" info replication | sed -n 's/^master_repl_offset:\([0-9]*\).*/\1/p')
  r=$(redis-cli -p "$rport" info replication | tr -d '\r')
  if grep -q '^master_link_status:up' <<<"$r" && grep -q "^slave_repl_offset:$m\$" <<<"$r"; then
    synced=1; break
  fi
  sleep 0.1
done
[ $synced = 1 ] || die "the replica did not catch up with the primary"
echo "backup-check: primary 127.0.0.1:$pport with $KEYS keys, replica 127.0.0.1:$rport in sync"

compare() {  # compare PORT: every key's value as written, DBSIZE equal
  local port=$1
  redis-cli -p "$port" --raw <"$work/mget.txt" >"$work/got.txt"
  cmp -s "$work/got.txt" "$work/expected.txt" && [ "$(redis-cli -p "$port" dbsize)" = "$KEYS" ]
}

# ---- 1, 2: take -------------------------------------------------------------------------
take() {  # take NAME PORT [flags...]: the JSON line into $work/NAME.json
  local name=$1 port=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  maxrss "$work/$name.rss" "$bin" take --redis "127.0.0.1:$port" \
    --password-file "$work/password" "${s3[@]}" --key "$name/dump.rdb" "$@" >"$work/$name.json" \
    2>"$work/$name.err" || { cat "$work/$name.err" >&2; return 1; }
  t1=$(date +%s.%N)
  printf '  take %s: %s\n' "$name" "$(cat "$work/$name.json")"
  printf '  take %s: %.1f s, max RSS %s KiB\n' "$name" "$(echo "$t1 - $t0" | bc)" "$(cat "$work/$name.rss")"
}
echo "backup-check: take"
check "take from the replica" take replica "$rport" --part-size-mib 5
# The primary's offset after the take: between the sync check and the take the primary
# may have sent its replica a PING (every repl-ping-replica-period, 10 s: 14 bytes of
# stream), so the snapshot's offset lies in [m, m_after], not always at m.
m_after=$(redis-cli -p "$pport" info replication | sed -n 's/^master_repl_offset:\([0-9]*\).*/\1/p')
check "take from the primary" take primary "$pport"
check "take from the primary over TLS (client certificate, AUTH)" \
  take tls "$tport" --tls-dir "$work/tls" --part-size-mib 5
size=$(json size <"$work/replica.json")
check "the replica's RDB ($size bytes) is larger than a 5 MiB part" test "$size" -gt $((5 * 1024 * 1024))
check "it went multipart ($(json parts <"$work/replica.json") parts)" test "$(json parts <"$work/replica.json")" -ge 2
check "the replica sent the \$<len> form (disk-based sync)" test "$(json rdbForm <"$work/replica.json")" = length
check "the primary sent the \$EOF:<mark> form (diskless sync)" \
  test "$(json rdbForm <"$work/primary.json")" = eof-marker
off=$(json offset <"$work/replica.json")
check "the replica's offset ($off) is the primary's replication offset (from $m before to $m_after after)" \
  test "$m" -le "$off" -a "$off" -le "$m_after"
rss=$(cat "$work/replica.rss")
check "take's memory (max RSS $rss KiB) is below the RDB's size: no copy of it, two parts" \
  test $((rss * 1024)) -lt "$size"
check "the object's bytes hash to the sha256 printed" \
  test "$(sha256sum <"$S3_DATA/$bucket/replica/dump.rdb" | cut -d' ' -f1)" = "$(json sha256 <"$work/replica.json")"

# ---- 3, 4: restore -----------------------------------------------------------------------
echo "backup-check: restore"
restore_and_compare() {  # restore_and_compare NAME: restored into a new server, compared
  local name=$1 port
  mkdir -p "$work/restored-$name"
  # What a restore killed mid-download leaves: removed, never loaded.
  printf 'half' >"$work/restored-$name/dump.rdb.restore.AbC123"
  "$bin" restore "${s3[@]}" --key "$name/dump.rdb" --to "$work/restored-$name/dump.rdb" \
    >"$work/restore-$name.json" 2>"$work/restore-$name.err" || { cat "$work/restore-$name.err" >&2; return 1; }
  printf '  restore %s: %s\n' "$name" "$(cat "$work/restore-$name.json")"
  [ ! -e "$work/restored-$name/dump.rdb.restore.AbC123" ] || { echo "  a stale temporary file stayed" >&2; return 1; }
  port=$(free_port)
  start_redis "restored-$name" "$port" "$work/restored-$name" --requirepass "$password"
  compare "$port"
}
check "the replica's backup restored: all $KEYS keys with their values" restore_and_compare replica
check "the primary's backup restored: all $KEYS keys with their values" restore_and_compare primary
check "the TLS backup restored: all $KEYS keys with their values" restore_and_compare tls
restore_aof() {  # --aof: the RDB as the base of a new appendonlydir; Redis with appendonly yes loads it
  local d=$work/restored-aof port
  mkdir -p "$d"
  "$bin" restore "${s3[@]}" --key primary/dump.rdb --to "$d/dump.rdb" --aof >"$work/restore-aof.json" \
    2>"$work/restore-aof.err" || { cat "$work/restore-aof.err" >&2; return 1; }
  printf '  restore --aof: %s; %s\n' "$(cat "$work/restore-aof.json")" "$(ls "$d" "$d/appendonlydir" | tr '\n' ' ')"
  [ ! -e "$d/dump.rdb" ] && [ ! -e "$d/appendonlydir.restore" ] || { echo "  dump.rdb or the staging dir left" >&2; return 1; }
  port=$(free_port)
  start_redis restored-aof "$port" "$d" --requirepass "$password" --appendonly yes
  compare "$port" || return 1
  # written after the restore, kept across a restart (the AOF's incr file); and a second
  # restore is skipped (appendonlydir holds data)
  redis-cli -p "$port" set after-restore 1 >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 || break; sleep 0.1; done
  "$bin" restore "${s3[@]}" --key primary/dump.rdb --to "$d/dump.rdb" --aof | grep -q '"result":"skipped"' || return 1
  start_redis restored-aof-2 "$port" "$d" --requirepass "$password" --appendonly yes
  test "$(redis-cli -p "$port" get after-restore)" = 1 && test "$(redis-cli -p "$port" dbsize)" = $((KEYS + 1))
}
check "--aof: the primary's backup as the AOF base, loaded with appendonly yes; a later write kept over a restart" \
  restore_aof
before=$(sha256sum <"$work/restored-replica/dump.rdb")
# No credentials and no S3 server needed to skip: a restarted pod keeps its data.
"$bin" restore --endpoint http://127.0.0.1:1 --bucket "$bucket" --key primary/dump.rdb \
  --credentials-dir "$work/nothere" --to "$work/restored-replica/dump.rdb" >"$work/skip.json"
printf '  restore over data: %s\n' "$(cat "$work/skip.json")"
check "a restore over a data dir that holds data is skipped (before any S3 request)" \
  test "$(json result <"$work/skip.json")" = skipped
check "... and leaves its dump.rdb untouched" test "$(sha256sum <"$work/restored-replica/dump.rdb")" = "$before"

# ---- 5: refusals -------------------------------------------------------------------------
echo "backup-check: refusals"
refused() {  # refused WHAT KEY [flags]: restore fails, says WHAT, leaves the dir empty
  local what=$1 key=$2 dir; shift 2
  dir=$(mktemp -d "$work/refused.XXXXXX")
  if "$bin" restore "${s3[@]}" --key "$key" --to "$dir/dump.rdb" "$@" >"$dir.out" 2>"$dir.err"; then
    echo "  restore of $key succeeded" >&2; return 1
  fi
  printf '  refused: %s\n' "$(cat "$dir.err")"
  grep -q "$what" "$dir.err" && [ -z "$(ls -A "$dir")" ]
}
obj="$S3_DATA/$bucket/replica/dump.rdb"
# Overwrite 16 bytes in the middle in place: same size, same xattrs (its metadata).
python3 - "$obj" <<'EOP'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"\0corrupted-byte\0", os.fstat(fd).st_size // 2)
os.close(fd)
EOP
check "a corrupted object is refused (checksum), no dump.rdb or temp file left" \
  refused "SHA-256" replica/dump.rdb
mkdir -p "$S3_DATA/$bucket/plain"
cp "$work/restored-primary/dump.rdb" "$S3_DATA/$bucket/plain/dump.rdb"
check "an object without x-amz-meta-sha256 is refused" refused "x-amz-meta-sha256" plain/dump.rdb
check "a missing key is refused" refused "NoSuchKey" nothere/dump.rdb
expected_ok() {  # the object without metadata, with the hash of its bytes named
  local want
  want=$(sha256sum <"$S3_DATA/$bucket/plain/dump.rdb" | cut -d' ' -f1)
  mkdir -p "$work/expect"
  "$bin" restore "${s3[@]}" --key plain/dump.rdb --to "$work/expect/dump.rdb" --expect-sha256 "$want" >/dev/null &&
    cmp -s "$work/expect/dump.rdb" "$S3_DATA/$bucket/plain/dump.rdb"
}
check "... and accepted with --expect-sha256 of its bytes" expected_ok

untrusted() {  # TLS to a server whose certificate no CA of --tls-dir signed
  if "$bin" take --redis "127.0.0.1:$tport" --tls-dir "$work/tls-wrong" "${s3[@]}" --key untrusted/dump.rdb \
    >/dev/null 2>"$work/untrusted.err"; then
    return 1
  fi
  printf '  refused: %s\n' "$(cat "$work/untrusted.err")"
  grep -q "certificate verify failed" "$work/untrusted.err" && [ ! -e "$S3_DATA/$bucket/untrusted" ]
}
check "take over TLS refuses a server certificate its CA did not sign; no object" untrusted
wrongpass() {
  printf 'not-the-password\n' >"$work/wrong-password"
  if "$bin" take --redis "127.0.0.1:$rport" --password-file "$work/wrong-password" "${s3[@]}" \
    --key wrongpass/dump.rdb >/dev/null 2>"$work/wrongpass.err"; then
    return 1
  fi
  printf '  refused: %s\n' "$(cat "$work/wrongpass.err")"
  grep -q "AUTH: WRONGPASS" "$work/wrongpass.err" && [ ! -e "$S3_DATA/$bucket/wrongpass" ]
}
check "take with a wrong password fails with Redis's words; no object" wrongpass

# ---- 6: a node that breaks off mid-RDB ---------------------------------------------------
echo "backup-check: a node that breaks off mid-RDB"
fport=$(free_port)
python3 - "$fport" "$work/fake.ready" <<'EOP' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").close()
c, _ = s.accept()
buf = b""
while b"capa" not in buf or b"rdb-only" not in buf:
    buf += c.recv(4096)
c.sendall(b"+OK\r\n+OK\r\n")
while b"PSYNC" not in buf:
    buf += c.recv(4096)
c.sendall(b"+FULLRESYNC 0000000000000000000000000000000000000000 7\r\n$33554432\r\n")
chunk = b"\x01" * 65536
for _ in range(12 * 16):  # 12 MiB of the promised 32: two 5 MiB parts go up
    c.sendall(chunk)
c.close()
EOP
pids+=($!)
for _ in $(seq 50); do [ -e "$work/fake.ready" ] && break; sleep 0.1; done
broke() {
  if "$bin" take --redis "127.0.0.1:$fport" "${s3[@]}" --key broken/dump.rdb --part-size-mib 5 \
    >"$work/broken.json" 2>"$work/broken.err"; then
    return 1
  fi
  printf '  take: %s\n' "$(cat "$work/broken.err")"
  grep -q "connection closed after 12582912 of 33554432 RDB bytes" "$work/broken.err" &&
    [ ! -e "$S3_DATA/$bucket/broken/dump.rdb" ]
}
check "take fails, says where the stream ended, and leaves no object" broke
# versitygw's POSIX backend keeps an upload in progress under the bucket's .sgwtmp until
# it is completed or aborted.
check "no multipart upload left in progress (the bucket's .sgwtmp is empty)" \
  test -z "$(find "$S3_DATA/$bucket/.sgwtmp" -mindepth 1 -type f 2>/dev/null)"

# ---- 7: scheduled backups: names, retention, list, the termination log ------------------
echo "backup-check: scheduled backups (--prefix, --keep, prune, list, --termination-log)"
sched="$S3_DATA/$bucket/sched/cache"
mkdir -p "$sched"
# Not ours: another name; our name without x-amz-meta-sha256 (what an upload that did not
# finish, or someone else, leaves); a whole backup of a deeper prefix.
printf 'a note\n' >"$sched/notes.txt"
printf 'REDIS0011' >"$sched/20200101T000000Z.rdb"
"$bin" take --redis "127.0.0.1:$rport" --password-file "$work/password" "${s3[@]}" \
  --key sched/cache/sub/20200101T000000Z.rdb >/dev/null 2>"$work/sub.err" || bad "take into sched/cache/sub: $(cat "$work/sub.err")"
sched_take() {  # sched_take N [flags]: take --prefix sched/cache --keep 2, line in sched-N.json
  local n=$1; shift
  "$bin" take --redis "127.0.0.1:$rport" --password-file "$work/password" "${s3[@]}" --list-max-keys 2 \
    --prefix sched/cache/ --keep 2 "$@" >"$work/sched-$n.json" 2>"$work/sched-$n.err" ||
    { cat "$work/sched-$n.err" >&2; return 1; }
  printf '  take %s: %s\n' "$n" "$(cat "$work/sched-$n.json")"
  sleep 1.1  # the name is the start time to the second: the next take's is later
}
printf 'stale\n' >"$work/tl-take"
check "three takes with --prefix sched/cache/ --keep 2" \
  eval 'sched_take 1 && sched_take 2 && sched_take 3 --termination-log "$work/tl-take"'
k1=$(json key <"$work/sched-1.json") k2=$(json key <"$work/sched-2.json") k3=$(json key <"$work/sched-3.json")
named() {  # the key is sched/cache/<start time, basic form>.rdb
  local f=$1 start
  start=$(json startTime <"$f" | tr -d ':-')
  test "$(json key <"$f")" = "sched/cache/${start%Z}Z.rdb"
}
check "each key is sched/cache/<its startTime, basic form>.rdb ($k3)" eval 'named "$work/sched-1.json" && named "$work/sched-3.json"'
retention() {  # retention N FIELD: the take's retention.FIELD as JSON
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["retention"][sys.argv[2]]))' \
    "$work/sched-$1.json" "$2"
}
check "take 2 pruned nothing (2 backups, keep 2)" test "$(retention 2 pruned)" = "[]"
check "take 3 pruned the oldest: $(retention 3 pruned)" test "$(retention 3 pruned)" = "[\"$k1\"]"
check "... kept 2, 3 objects not ours left, no failure" \
  test "$(retention 3 kept) $(retention 3 foreign) $(retention 3 pruneFailed)" = "2 3 []"
remaining() { (cd "$S3_DATA/$bucket" && find sched -type f | sort | tr '\n' ' '); }
want="sched/cache/20200101T000000Z.rdb $k2 $k3 sched/cache/notes.txt sched/cache/sub/20200101T000000Z.rdb "
check "2 backups remain, the newest; the objects not ours survive" test "$(remaining)" = "$want"
"$bin" list "${s3[@]}" --prefix sched/cache --list-max-keys 2 >"$work/list.out" 2>"$work/list.err" ||
  bad "list: $(cat "$work/list.err")"
sed 's/^/  list: /' "$work/list.out"
listed() {  # line N of list's output, FIELD
  sed -n "${1}p" "$work/list.out" | json "$2"
}
check "list prints the 2 backups, newest first" \
  test "$(wc -l <"$work/list.out") $(listed 1 key) $(listed 2 key)" = "2 $k3 $k2"
check "... with the sha256 and size the takes printed, the time of the name" \
  test "$(listed 1 sha256) $(listed 1 size) $(listed 1 time)" = \
  "$(json sha256 <"$work/sched-3.json") $(json size <"$work/sched-3.json") $(json startTime <"$work/sched-3.json")"
check "--termination-log holds take's JSON line (what it held before replaced)" \
  cmp -s "$work/tl-take" "$work/sched-3.json"
tl_failure() {
  printf 'stale\n' >"$work/tl-fail"
  if "$bin" take --redis "127.0.0.1:$rport" --password-file "$work/wrong-password" "${s3[@]}" \
    --prefix sched/cache --keep 1 --termination-log "$work/tl-fail" >"$work/tl-fail.out" 2>"$work/tl-fail.err"; then
    return 1
  fi
  printf '  termination log: %s\n' "$(cat "$work/tl-fail")"
  cmp -s "$work/tl-fail" "$work/tl-fail.err" && grep -q "^rdc-backup take: .*WRONGPASS" "$work/tl-fail" &&
    [ ! -s "$work/tl-fail.out" ] && [ "$(remaining)" = "$want" ]
}
check "--termination-log holds the error line of a failed take; nothing pruned" tl_failure
prune_one() {
  "$bin" prune "${s3[@]}" --prefix sched/cache --keep 1 --termination-log "$work/tl-prune" >"$work/prune.json" ||
    return 1
  printf '  prune: %s\n' "$(cat "$work/prune.json")"
  test "$(json pruned <"$work/prune.json")" = "['$k2']" && cmp -s "$work/tl-prune" "$work/prune.json" &&
    [ ! -e "$S3_DATA/$bucket/$k2" ] && [ -e "$S3_DATA/$bucket/$k3" ]
}
check "prune --keep 1 deletes the older backup, keeps the newest; its line in the termination log" prune_one
failed_delete() {  # the newest's file immutable: the next take cannot delete it
  immutable="$S3_DATA/$bucket/$k3"
  chattr +i "$immutable" 2>/dev/null || { echo "  not run: chattr +i (root on ext4/xfs) failed"; immutable=; return 0; }
  sched_take 4 --keep 1 || return 1
  local f rc=0; f=$(retention 4 pruneFailed)
  # prune alone: the line (with pruneFailed) on stdout and in the termination log, exit 1.
  "$bin" prune "${s3[@]}" --prefix sched/cache --keep 1 --termination-log "$work/tl-prune2" \
    >"$work/prune2.json" 2>"$work/prune2.err" || rc=$?
  printf '  prune: exit %s, %s\n  prune: %s\n' "$rc" "$(cat "$work/prune2.err")" "$(cat "$work/prune2.json")"
  chattr -i "$immutable"; immutable=
  one_failed() {  # one_failed JSON-ARRAY KEY: one entry, for KEY, a DeleteObject error
    python3 -c 'import json,sys; f=json.loads(sys.argv[1]); sys.exit(not(len(f)==1 and f[0]["key"]==sys.argv[2] and f[0]["error"].startswith("DeleteObject")))' "$1" "$2"
  }
  one_failed "$f" "$k3" && test "$(retention 4 pruned)" = "[]" && test "$(json result <"$work/sched-4.json")" = ok &&
    [ "$rc" = 1 ] && grep -q "^rdc-backup prune: 1 of 1 deletes failed (pruneFailed)$" "$work/prune2.err" &&
    one_failed "$(python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["pruneFailed"]))' <"$work/prune2.json")" "$k3" &&
    cmp -s "$work/tl-prune2" "$work/prune2.json"
}
check "a delete that fails is reported in the line (pruneFailed): take still succeeds, prune exits 1" failed_delete
restore_newest() {
  local key; key=$("$bin" list "${s3[@]}" --prefix sched/cache | head -1 | json key)
  mkdir -p "$work/restored-sched"
  "$bin" restore "${s3[@]}" --key "$key" --to "$work/restored-sched/dump.rdb" \
    --termination-log "$work/tl-restore" >"$work/restore-sched.json" || return 1
  test "$(json result <"$work/restore-sched.json")" = restored && cmp -s "$work/tl-restore" "$work/restore-sched.json"
}
check "the newest listed backup restores; restore's line in the termination log" restore_newest

# ---- 8: Cluster mode: take --slots, restore --only-pod ---------------------------------
echo "backup-check: Cluster mode (--slots, --only-pod)"
cport=$(free_port) cbus=$(free_port)
# a diskless sync that waits 3 s before it streams: time to move a slot during the take
start_redis cluster "$cport" "$work/cluster" --cluster-enabled yes --cluster-port "$cbus" \
  --cluster-config-file "$work/cluster/nodes.conf" --requirepass "$password" \
  --repl-diskless-sync yes --repl-diskless-sync-delay 0
redis-cli -p "$cport" cluster addslotsrange 0 16383 >/dev/null
# writes are refused (CLUSTERDOWN) until the node's cron finds every slot served
for _ in $(seq 100); do
  redis-cli -p "$cport" cluster info | grep -q '^cluster_state:ok' && break
  sleep 0.1
done
for i in $(seq 1000); do echo "SET shard:$i value-$i"; done | redis-cli -p "$cport" | grep -v '^OK$' >&2 || true
ctake() {  # ctake NAME --slots S [flags]: take from the cluster node into cluster/NAME.rdb
  local name=$1; shift
  "$bin" take --redis "127.0.0.1:$cport" --password-file "$work/password" "${s3[@]}" \
    --key "cluster/$name.rdb" "$@" >"$work/c-$name.json" 2>"$work/c-$name.err"
}
slots_ok() {
  ctake ok --slots 0-16383 --termination-log "$work/tl-cluster" || { cat "$work/c-ok.err" >&2; return 1; }
  printf '  take: %s\n' "$(cat "$work/c-ok.json")"
  test "$(json slots <"$work/c-ok.json")" = 0-16383 && [ "$(json size <"$work/c-ok.json")" -gt 10000 ] &&
    cmp -s "$work/tl-cluster" "$work/c-ok.json"
}
check "take --slots with the shard master's slots: ok, its line says them" slots_ok
slots_before() {
  if ctake before --slots 0-5460; then return 1; fi
  printf '  take: %s\n' "$(cat "$work/c-before.err")"
  grep -q "before the sync: the shard's master .* serves 0-16383, not 0-5460 (--slots): the slots moved" \
    "$work/c-before.err" && [ ! -e "$S3_DATA/$bucket/cluster/before.rdb" ]
}
check "take --slots with other slots fails before the sync; no object" slots_before
slots_after() {
  redis-cli -p "$cport" config set repl-diskless-sync-delay 3 >/dev/null
  ctake after --slots 0-16383 --part-size-mib 5 &
  local take=$! rc=0
  sleep 1
  redis-cli -p "$cport" cluster delslots 16383 >/dev/null
  wait "$take" || rc=$?
  redis-cli -p "$cport" cluster addslots 16383 >/dev/null
  redis-cli -p "$cport" config set repl-diskless-sync-delay 0 >/dev/null
  printf '  take: exit %s, %s\n' "$rc" "$(cat "$work/c-after.err")"
  [ "$rc" != 0 ] &&
    grep -q "after the RDB: the shard's master .* serves 0-16382, not 0-16383 (--slots).*upload aborted" \
      "$work/c-after.err" && [ ! -e "$S3_DATA/$bucket/cluster/after.rdb" ] &&
    test -z "$(find "$S3_DATA/$bucket/.sgwtmp" -mindepth 1 -type f 2>/dev/null)"
}
check "slots moved while the RDB was read: the take fails after it, no object, no upload in progress" slots_after
only_pod() {
  mkdir -p "$work/pod-other" "$work/pod-this"
  "$bin" restore "${s3[@]}" --key cluster/ok.rdb --to "$work/pod-other/dump.rdb" --only-pod no-such-pod-0 \
    >"$work/pod-other.json" || return 1
  printf '  restore: %s\n' "$(cat "$work/pod-other.json")"
  test "$(json result <"$work/pod-other.json")" = skipped && [ -z "$(ls -A "$work/pod-other")" ] || return 1
  local host; host=$(hostname)
  if ! [[ $host =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]]; then
    echo "  not run: this host's name \"$host\" is not a pod name"; return 0
  fi
  "$bin" restore "${s3[@]}" --key cluster/ok.rdb --to "$work/pod-this/dump.rdb" --only-pod "$host" \
    >"$work/pod-this.json" || return 1
  test "$(json result <"$work/pod-this.json")" = restored &&
    cmp -s "$work/pod-this/dump.rdb" "$S3_DATA/$bucket/cluster/ok.rdb"
}
check "restore --only-pod: skipped on another pod (dir left empty), restored on this one" only_pod

echo "backup-check: $failures failure(s)"
[ "$failures" = 0 ]
