# tests/e2e/lib_failover.sh: the pieces of a failover test or benchmark, to source (after
# lib.sh, or alone: it needs only TOP, kubectl on PATH and KUBECONFIG). Every process is
# started in the background with its pid in a file of the caller's directory and stopped
# by that pid (TERM, bounded wait, KILL), never by name.
#
#   fo_build                             build bench/ackwriter if needed; sets FO_ACKWRITER
#   fo_writer_start DIR TARGET-ARGS...   start `ackwriter write` (acks in DIR/acks.txt, events
#                                        in DIR/events.jsonl); TARGET-ARGS as ackwriter takes
#                                        them (--sentinels H:P,.. --master NAME | --candidates ..
#                                        | --resolve-cmd CMD | --resolve-file F | --addr H:P) plus
#                                        any other write option (--rate, --prefix, --password-file)
#   fo_writer_stop DIR                   stop it; prints its "stop" event (acked, failed)
#   fo_acked DIR                         how many writes were acknowledged so far
#   fo_verify DIR H:P [ackwriter verify options]
#                                        read every acknowledged key back from H:P; prints
#                                        "acked=.. present=.. missing=.. wrong=..";
#                                        returns 0 only when none is missing or wrong and
#                                        there was at least one
#   fo_label_sampler_start DIR NS [SELECTOR]   every 100 ms which pods carry SELECTOR
#                                        (default cache.example.com/role=primary), from one
#                                        watch; lines in DIR/labels.txt; DIR/primary.addr
#                                        holds "<ip>:6379" of the one labelled pod (empty
#                                        when none or several): ackwriter --resolve-file
#   fo_label_sampler_stop DIR            stop it; prints "samples=.. max=.. two_ms=.. ..."
#   fo_role_sampler_start DIR H:P,H:P..  every 100 ms which of them answer ROLE master
#                                        (DIR/roles.txt, appended); 1 (and a message) when
#                                        a candidate is malformed (a pod without an IP) or
#                                        no first sample is written within 5 s
#   fo_role_sampler_alive DIR            it still runs
#   fo_role_sampler_stop DIR             stop it; prints "samples=.. max_masters=.. two_master_ms=.."
#   fo_label_primary_addr NS [SELECTOR]  H:P (port 6379) of the one pod carrying SELECTOR,
#                                        nothing and status 1 unless exactly one does (the
#                                        ackwriter's --resolve-cmd for a labelling operator)
#   fo_sentinels_start DIR NAME H P [DOWN_AFTER_MS] [FAILOVER_TIMEOUT_MS]
#                                        three `redis-server --sentinel` on free 127.0.0.1
#                                        ports, quorum 2, monitoring H:P as NAME; sets
#                                        FO_SENTINELS (H:P,H:P,H:P)
#   fo_sentinels_stop DIR                stop the three
#   fo_sentinel_master DIR NAME          H:P that the first sentinel answering names for NAME
#   fo_events_after DIR EV T_MS [NOT_ADDR]   the first event EV (fail|accept|ack|target) of
#                                        the writer at or after T_MS, whose addr is not NOT_ADDR:
#                                        prints "<t> <addr>"
FO_TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FO_ACKWRITER=${ACKWRITER:-$FO_TOP/${BUILD:-build}/bench/ackwriter}

fo_build() {
    if [ ! -x "$FO_ACKWRITER" ] || [ "$FO_TOP/bench/ackwriter.c" -nt "$FO_ACKWRITER" ]; then
        make -s -C "$FO_TOP" BUILD="${BUILD:-build}" bench-ackwriter >&2 || return 1
    fi
    test -x "$FO_ACKWRITER"
}

# _fo_start PIDFILE OUT ERR CMD...: CMD in the background, in a session of its own, with
# its pid in PIDFILE.
_fo_start() {
    local pidf=$1 out=$2 err=$3; shift 3
    setsid "$@" >"$out" 2>"$err" </dev/null &
    echo $! >"$pidf"
}
# _fo_stop PIDFILE [SECONDS]: TERM the pid of PIDFILE, wait up to SECONDS (default 5),
# then KILL its process group; 0 when nothing was running.
_fo_stop() {
    local pidf=$1 limit=${2:-5} pid
    [ -s "$pidf" ] || return 0
    pid=$(cat "$pidf")
    rm -f "$pidf"
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    local end=$((SECONDS + limit))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    return 0
}

fo_writer_start() {
    local dir=$1; shift
    mkdir -p "$dir"
    _fo_start "$dir/writer.pid" "$dir/writer.out" "$dir/writer.err" \
        "$FO_ACKWRITER" write "$@" --acks "$dir/acks.txt" --events "$dir/events.jsonl"
}
fo_writer_stop() {
    _fo_stop "$1/writer.pid" 5
    grep '"ev":"stop"' "$1/events.jsonl" 2>/dev/null | tail -1
}
fo_acked() { if [ -f "$1/acks.txt" ]; then wc -l <"$1/acks.txt"; else echo 0; fi; }
fo_verify() {
    local dir=$1 addr=$2; shift 2
    "$FO_ACKWRITER" verify --addr "$addr" --acks "$dir/acks.txt" "$@"
}

fo_label_sampler_start() {
    local dir=$1 ns=$2 sel=${3:-cache.example.com/role=primary}
    mkdir -p "$dir"
    _fo_start "$dir/labels.pid" "$dir/labels.sum" "$dir/labels.err" \
        python3 "$FO_TOP/bench/labelsampler.py" --namespace "$ns" --selector "$sel" --out "$dir/labels.txt" \
        --primary-file "$dir/primary.addr"
}
fo_label_sampler_stop() {
    _fo_stop "$1/labels.pid" 5
    cat "$1/labels.sum" 2>/dev/null
}

fo_role_sampler_start() {
    local dir=$1 addrs=$2 a lines0=0 end
    mkdir -p "$dir"
    # every candidate a non-empty host and a port: a pod without an IP yet gives ":6379",
    # which the sampler refused with its usage (and a bench once reported that as "0")
    [ -n "$addrs" ] || { echo "fo_role_sampler_start: no candidates" >&2; return 1; }
    for a in ${addrs//,/ }; do
        case $a in [!:]*:[0-9]*) ;; *) echo "fo_role_sampler_start: bad candidate '$a' in '$addrs'" >&2; return 1 ;; esac
    done
    [ -f "$dir/roles.txt" ] && lines0=$(wc -l <"$dir/roles.txt")
    # a restarted sampler keeps the summaries of the earlier ones (roles.sum.N)
    [ -s "$dir/roles.sum" ] && mv "$dir/roles.sum" "$dir/roles.sum.$(date +%s%N)"
    echo "$addrs" >"$dir/roles.candidates"
    _fo_start "$dir/roles.pid" "$dir/roles.sum" "$dir/roles.err" \
        "$FO_ACKWRITER" roles --candidates "$addrs" --out "$dir/roles.txt"
    # its first sample always writes a line: wait for it (bounded), so a sampler that
    # exited or never sampled fails here, loudly, instead of reporting nothing as 0
    end=$((SECONDS + 5))
    while [ "$(cat "$dir/roles.txt" 2>/dev/null | wc -l)" -le "$lines0" ]; do
        if [ "$SECONDS" -ge "$end" ] || ! kill -0 "$(cat "$dir/roles.pid")" 2>/dev/null; then
            echo "fo_role_sampler_start: no ROLE sample of $addrs within 5 s: $(head -c 300 "$dir/roles.err" 2>/dev/null)" >&2
            return 1
        fi
        sleep 0.1
    done
}
# fo_role_sampler_alive DIR: the sampler started by fo_role_sampler_start still runs.
fo_role_sampler_alive() { [ -s "$1/roles.pid" ] && kill -0 "$(cat "$1/roles.pid")" 2>/dev/null; }
fo_role_sampler_stop() {
    _fo_stop "$1/roles.pid" 5
    cat "$1/roles.sum" 2>/dev/null
}

fo_label_primary_addr() {
    local ns=$1 sel=${2:-cache.example.com/role=primary} ips
    ips=$(kubectl -n "$ns" get pods -l "$sel" -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' 2>/dev/null | grep -v '^$')
    [ "$(printf '%s\n' "$ips" | grep -c .)" = 1 ] || return 1
    echo "$ips:6379"
}

# _fo_free_port: a TCP port nobody listens on at 127.0.0.1 right now.
_fo_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

fo_sentinels_start() {
    local dir=$1 name=$2 host=$3 port=$4 down=${5:-3000} fot=${6:-10000} i p addrs=
    mkdir -p "$dir"
    for i in 0 1 2; do
        p=$(_fo_free_port)
        mkdir -p "$dir/sentinel-$i"
        cat >"$dir/sentinel-$i/sentinel.conf" <<EOF
port $p
bind 127.0.0.1
daemonize no
dir $dir/sentinel-$i
logfile ""
sentinel announce-ip 127.0.0.1
sentinel monitor $name $host $port 2
sentinel down-after-milliseconds $name $down
sentinel failover-timeout $name $fot
sentinel parallel-syncs $name 1
EOF
        _fo_start "$dir/sentinel-$i.pid" "$dir/sentinel-$i.log" "$dir/sentinel-$i.err" \
            /usr/bin/redis-server "$dir/sentinel-$i/sentinel.conf" --sentinel
        addrs="$addrs${addrs:+,}127.0.0.1:$p"
    done
    FO_SENTINELS=$addrs
    echo "$addrs" >"$dir/sentinels"
    # up when each answers PING
    local end=$((SECONDS + 10)) a
    for a in ${addrs//,/ }; do
        while [ "$(redis-cli -h "${a%:*}" -p "${a##*:}" ping 2>/dev/null)" != PONG ]; do
            [ "$SECONDS" -lt "$end" ] || return 1
            sleep 0.1
        done
    done
}
fo_sentinels_stop() {
    local i
    for i in 0 1 2; do _fo_stop "$1/sentinel-$i.pid" 3; done
}
fo_sentinel_master() {
    local dir=$1 name=$2 a r
    for a in $(tr ',' ' ' <"$dir/sentinels"); do
        r=$(redis-cli -h "${a%:*}" -p "${a##*:}" sentinel get-master-addr-by-name "$name" 2>/dev/null | tr '\n' ':')
        r=${r%:}
        case $r in *.*:[0-9]*) echo "$r"; return 0 ;; esac
    done
    return 1
}

fo_events_after() {
    local dir=$1 ev=$2 t=$3 not=${4:-}
    python3 - "$dir/events.jsonl" "$ev" "$t" "$not" <<'PY'
import json, sys
path, ev, t, not_addr = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("ev") == ev and e["t"] >= t and (not not_addr or e.get("addr") != not_addr):
        print(e["t"], e.get("addr", ""))
        sys.exit(0)
sys.exit(1)
PY
}

# fo_redis_statefulset NS NAME [SIZE]: a StatefulSet of SIZE (default 3) redis:7.2 pods with
# the operator's default Redis settings (AOF every second + RDB snapshots into a 1Gi claim
# at /data, protected mode off, redis-cli ping readiness every 5 s and liveness every 10 s),
# Parallel start; plus replica-announce-ip = the pod IP (on the pod runtime every pod's
# outgoing connections come from 127.0.0.1, so a primary would list its replicas as
# 127.0.0.1:6379 and Sentinel could never reach them); NS must be pinned to the process nodes. Waits (bounded, 180 s) until every
# pod answers PING on its pod IP. The pods carry app=NAME.
fo_redis_statefulset() {
    local ns=$1 name=$2 size=${3:-3} i ip
    kubectl apply -f - >/dev/null <<YAML || return 1
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $name, namespace: $ns}
spec:
  serviceName: $name
  replicas: $size
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: $name}}
  template:
    metadata: {labels: {app: $name}}
    spec:
      containers:
      - name: redis
        image: redis:7.2
        env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]
        args: ["--port", "6379", "--protected-mode", "no", "--dir", "/data", "--appendonly", "yes",
               "--appendfsync", "everysec", "--save", "900 1 300 10 60 10000",
               "--replica-announce-ip", "\$(POD_IP)"]
        volumeMounts: [{name: data, mountPath: /data}]
        readinessProbe: {exec: {command: [redis-cli, ping]}, periodSeconds: 5}
        livenessProbe: {exec: {command: [redis-cli, ping]}, periodSeconds: 10}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
    local end=$((SECONDS + 180)) pv
    for ((i = 0; i < size; i++)); do
        while :; do
            ip=$(kubectl -n "$ns" get pod "$name-$i" -o jsonpath='{.status.podIP}' 2>/dev/null)
            pv=$(kubectl -n "$ns" get pvc "data-$name-$i" -o jsonpath='{.spec.volumeName}' 2>/dev/null)
            [ -n "$ip" ] && [ -n "$pv" ] && fo_is_pod_redis "$ip" "$pv" && break
            [ "$SECONDS" -lt "$end" ] || return 1
            sleep 0.5
        done
    done
}
# fo_is_pod_redis IP PV: the Redis answering on IP keeps its data in PV's directory, i.e. it
# is this cluster's pod and not another cluster's on the same address (two clusters with
# process nodes on one machine hand out the same pod IPs unless their RDC_POD_CIDR differ).
fo_is_pod_redis() {
    local dir
    dir=$(redis-cli -h "$1" config get dir 2>/dev/null | sed -n 2p)
    [ -n "$dir" ] && [ "${dir##*/}" = "$2" ]
}
# fo_pod_ips NS NAME [SIZE]: the pod IPs of NAME-0..SIZE-1, space separated, in order.
fo_pod_ips() {
    local ns=$1 name=$2 size=${3:-3} i out=
    for ((i = 0; i < size; i++)); do
        out="$out${out:+ }$(kubectl -n "$ns" get pod "$name-$i" -o jsonpath='{.status.podIP}' 2>/dev/null)"
    done
    echo "$out"
}
# fo_link_replicas PRIMARY_IP IP...: REPLICAOF PRIMARY for each IP, then waits (bounded,
# 60 s) until the primary sees every one of them online.
fo_link_replicas() {
    local p=$1 h; shift
    redis-cli -h "$p" replicaof no one >/dev/null || return 1
    for h in "$@"; do redis-cli -h "$h" replicaof "$p" 6379 >/dev/null || return 1; done
    fo_wait_replicas "$p" "$#" 60
}
# fo_wait_replicas PRIMARY_IP N SECONDS: until PRIMARY_IP is a master that sees N replicas
# in state online; 1 when that did not happen in SECONDS.
fo_wait_replicas() {
    local p=$1 n=$2 end=$((SECONDS + $3))
    while :; do
        [ "$(redis-cli -h "$p" info replication 2>/dev/null | grep -c '^slave[0-9]*:.*state=online')" -ge "$n" ] && return 0
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.2
    done
}
