#!/usr/bin/env bash
# End to end: TLS and ACL users (issue 31, docs/tls-and-acl.md) on the pod runtime (real
# redis-server processes), with certificates made by the openssl CLI in the test: a CA, the
# pods' certificate for *.cache.<ns>.svc (serial 1001), a renewal (1002), a client
# certificate, and an expired one (openssl ca with dates in the past). One Replication
# RedisCluster "cache" of 3 pods with spec.auth, spec.tls (clientAuth) and two ACL users.
#   1. TLS: redis-cli --tls --cacert (and the client certificate) works; a plain-text
#      connection is refused; a client without a certificate is refused; no plain-text
#      port (CONFIG GET port = 0); the replicas are linked over TLS (master_link_status:up,
#      tls-replication yes); TLSReady True; rdc_redis_tls_cert_expiry_seconds on /metrics.
#   2. ACL: the read-only user GETs and is refused SET (NOPERM); the other user SETs; the
#      ACL file's Secret holds hashes, no password.
#   3. Failover by SIGKILL of the primary's redis-server while a TLS client writes (SET +
#      WAIT 1 100 to the pod labelled primary): a new primary, no acknowledged write lost.
#   4. The certificate replaced in the Secret (same CA): every pod serves the new serial
#      (openssl s_client), no pod restarted (same uids and restartCounts), no client
#      refused meanwhile (a new TLS connection and a PING to every pod every 200 ms);
#      TLSReady names the new serial; Events TLSReloaded.
#   5. A user removed from spec.acl: refused (WRONGPASS) on every pod within a reconcile,
#      no restart; Event ACLApplied "removed".
#   6. An expired certificate in the Secret: TLSReady False TLSCertificateExpired, Degraded
#      of the same reason, the metric negative; the pods keep serving the valid one
#      (clients still served); the valid one back: TLSReady True.
#   7. No password (the default user's, an ACL user's) in any ConfigMap, Event, the
#      RedisCluster (status included) or the operator's log; the hash of one only in the
#      ACL file's Secret.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_failover.sh"
. "$(dirname "$0")/lib_replset.sh"

rs_require_process_nodes || exit 0

ns=rdc-e2e-tls-$$
e2e_setup tls "$ns"
TC=(python3 "$TOP/tests/e2e/tls_client.py")
cleanup_more() {
    _fo_stop "$work/writer.pid"
    _fo_stop "$work/probe.pid"
    fo_label_sampler_stop "$work/w" >/dev/null
}
for t in openssl python3 redis-cli jq; do
    check "$t is installed" command -v "$t"
done

# ---- certificates (openssl CLI) --------------------------------------------------------
pki=$work/pki
mkdir -p "$pki/newcerts"
cat >"$pki/ext.cnf" <<EOF
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:*.cache.$ns.svc, DNS:cache.$ns.svc
EOF
cat >"$pki/client.cnf" <<EOF
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
EOF
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/$1.key" 2>/dev/null; }
csr() { openssl req -new -key "$pki/$1.key" -subj "/CN=$2" -out "$pki/$1.csr" 2>/dev/null; }
# sign NAME SERIAL EXTFILE DAYS: NAME.crt signed by the CA.
sign() {
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$2" -days "$4" \
        -extfile "$3" -out "$pki/$1.crt" 2>/dev/null
}
newkey ca
openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=rdc e2e CA" -days 30 -out "$pki/ca.crt" 2>/dev/null
newkey pods1 && csr pods1 cache && sign pods1 1001 "$pki/ext.cnf" 20
newkey pods2 && csr pods2 cache && sign pods2 1002 "$pki/ext.cnf" 25
newkey client && csr client rdc-e2e-client && sign client 2001 "$pki/client.cnf" 20
# an expired one: openssl ca takes dates in the past
newkey old && csr old cache
touch "$pki/index.txt"
echo 1003 >"$pki/serial"
cat >"$pki/ca.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $pki/index.txt
serial = $pki/serial
new_certs_dir = $pki/newcerts
certificate = $pki/ca.crt
private_key = $pki/ca.key
default_md = sha256
policy = p
x509_extensions = e
[p]
commonName = supplied
[e]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:*.cache.$ns.svc, DNS:cache.$ns.svc
EOF
openssl ca -batch -config "$pki/ca.cnf" -startdate 20200101000000Z -enddate 20200201000000Z -notext \
    -in "$pki/old.csr" -out "$pki/old.crt" >/dev/null 2>&1
for c in pods1 pods2 client old; do
    check "openssl made $c.crt" openssl verify -no_check_time -CAfile "$pki/ca.crt" "$pki/$c.crt"
done
check "old.crt is expired" sh -c "! openssl x509 -checkend 0 -noout -in $pki/old.crt"

# tls_secret NAME: the Secret cache-tls with NAME.crt/.key and the CA (created or replaced).
tls_secret() {
    kubectl -n "$ns" create secret generic cache-tls --from-file=tls.crt="$pki/$1.crt" \
        --from-file=tls.key="$pki/$1.key" --from-file=ca.crt="$pki/ca.crt" --dry-run=client -o yaml |
        kubectl apply -f - >/dev/null
}
PW=e2e-default-$$-pw
READER_PW=e2e-reader-$$-pw
APP_PW=e2e-app-$$-pw
printf '%s' "$PW" >"$work/pw"
kubectl -n "$ns" create secret generic cache-password --from-literal=password="$PW" >/dev/null
kubectl -n "$ns" create secret generic reader-pw --from-literal=password="$READER_PW" >/dev/null
kubectl -n "$ns" create secret generic app-pw --from-literal=pw="$APP_PW" >/dev/null
tls_secret pods1

ACL_USERS='  acl:
    users:
    - {name: reader, rules: "~* +@read +ping", passwordSecretRef: {name: reader-pw}}
    - {name: app, rules: "~* +@all -@dangerous", passwordSecretRef: {name: app-pw, key: pw}}'
rs_start "  auth: {secretRef: {name: cache-password}}
  tls: {secretRef: {name: cache-tls}, clientAuth: true}
$ACL_USERS"

# cli IP [redis-cli args...]: over TLS with the client certificate, as the default user.
cli() {
    local ip=$1; shift
    timeout 5 redis-cli -h "$ip" -p 6379 --tls --cacert "$pki/ca.crt" --cert "$pki/client.crt" \
        --key "$pki/client.key" --no-auth-warning -a "$PW" "$@" 2>&1 | tr -d '\r'
}
# as USER PASSWORD IP args...: the same as an ACL user.
as() {
    local user=$1 pw=$2 ip=$3; shift 3
    timeout 5 redis-cli -h "$ip" -p 6379 --tls --cacert "$pki/ca.crt" --cert "$pki/client.crt" \
        --key "$pki/client.key" --no-auth-warning --user "$user" --pass "$pw" "$@" 2>&1 | tr -d '\r'
}
field() { cli "$(rs_ip "$1")" info replication | sed -n "s/^$2://p"; }
cond() { kubectl -n "$ns" get rdc cache -o json | jq -r --arg t "$1" '.status.conditions[] | select(.type == $t) | .'"$2"; }
# tls_settled: status.primary is a master over TLS, the only pod labelled primary, the
# other two linked to it.
tls_settled() { rs_linked field; }
# The checks of section 1, each a function of this shell.
plain_refused() { ! timeout 5 redis-cli -h "$1" -p 6379 -a "$PW" --no-auth-warning ping 2>&1 | grep -q PONG; }
no_cert_refused() {
    ! timeout 5 redis-cli -h "$1" -p 6379 --tls --cacert "$pki/ca.crt" -a "$PW" --no-auth-warning ping 2>&1 |
        grep -q PONG
}
no_plain_port() {
    [ "$(cli "$1" config get port | sed -n 2p)" = 0 ] && [ "$(cli "$1" config get tls-replication | sed -n 2p)" = yes ]
}
tls_ready() { # STATUS REASON [MESSAGE-SUBSTRING]
    [ "$(cond TLSReady status)" = "$1" ] && [ "$(cond TLSReady reason)" = "$2" ] &&
        { [ -z "${3:-}" ] || cond TLSReady message | grep -qF -- "$3"; }
}
metric_expiry() { # (the supervisor's merge adds a child label: match the two we mean)
    curl -sf "http://127.0.0.1:$metrics/metrics" | grep '^rdc_redis_tls_cert_expiry_seconds{' |
        grep -F "namespace=\"$ns\"" | grep -F 'rediscluster="cache"' | awk '{print $NF}' | head -1
}
expiry_in() { # LOW HIGH: the metric is within (LOW, HIGH]
    local v; v=$(metric_expiry)
    [ -n "$v" ] && awk -v v="$v" -v lo="$1" -v hi="$2" 'BEGIN { exit !(v > lo && v <= hi) }'
}

check "3 pods Ready" wait_until 180 sh -c "kubectl -n $ns get pods -l app.kubernetes.io/instance=cache -o json | jq -e '[.items[] | select(.status.conditions[]? | select(.type==\"Ready\" and .status==\"True\"))] | length == 3'"
check "settled over TLS: one primary, two replicas linked" wait_until 120 tls_settled

# ---- 1. TLS ---------------------------------------------------------------------------
p=$(rs_primary)
pip=$(rs_ip "$p")
check "redis-cli --tls --cacert --cert answers PONG" test "$(cli "$pip" ping)" = PONG
check "a plain-text connection is refused" plain_refused "$pip"
check "a client without a certificate is refused (clientAuth)" no_cert_refused "$pip"
for n in cache-0 cache-1 cache-2; do
    check "$n: no plain-text port (CONFIG GET port = 0), tls-replication yes" no_plain_port "$(rs_ip "$n")"
done
check "the primary has 2 replicas connected over TLS" test "$(field "$p" connected_slaves)" = 2
check "TLSReady True TLSCertificateValid, serial 1001" wait_until 30 tls_ready True TLSCertificateValid "serial 1001"
check "rdc_redis_tls_cert_expiry_seconds is about 20 days" wait_until 30 expiry_in $((19 * 86400)) $((20 * 86400))
echo "# expiry metric: $(metric_expiry) s"

# ---- 2. ACL ---------------------------------------------------------------------------
check "the app user SETs" test "$(as app "$APP_PW" "$pip" set acl:key v)" = OK
check "the read-only user GETs" test "$(as reader "$READER_PW" "$pip" get acl:key)" = v
refused_set() { as reader "$READER_PW" "$1" set acl:key w | grep -q NOPERM; }
check "the read-only user is refused SET (NOPERM)" refused_set "$pip"
acl_file=$(kubectl -n "$ns" get secret cache-redis-acl -o json | jq -r '.data["users.acl"]' | base64 -d)
check "the ACL file's Secret names the users with hashes" sh -c "printf '%s\n' \"\$1\" | grep -q '^user reader on #[0-9a-f]\{64\} ~\* +@read +ping$'" _ "$acl_file"
check "the ACL file's Secret holds no password" sh -c "! printf '%s' \"\$1\" | grep -qe '$PW' -e '$READER_PW' -e '$APP_PW'" _ "$acl_file"

# ---- 3. Failover by SIGKILL, writes over TLS -------------------------------------------
fo_label_sampler_start "$work/w" "$ns"
check "the label sampler names the primary" wait_until 10 test -s "$work/w/primary.addr"
_fo_start "$work/writer.pid" "$work/writer.out" "$work/writer.err" "${TC[@]}" write --addr-file "$work/w/primary.addr" \
    --acks "$work/acks.txt" --ca "$pki/ca.crt" --cert "$pki/client.crt" --key "$pki/client.key" --password-file "$work/pw"
check "the TLS writer's writes are acknowledged" wait_until 20 sh -c "test \"\$(wc -l <$work/acks.txt 2>/dev/null)\" -ge 100"
old=$(rs_primary)
"$TOP/tests/cluster/cluster.sh" pod-kill "$ns/$old" >/dev/null
check "SIGKILL: another pod is status.primary" wait_until 60 sh -c "p=\$(kubectl -n $ns get rdc cache -o jsonpath='{.status.primary}'); [ -n \"\$p\" ] && [ \"\$p\" != $old ]"
n0=$(wc -l <"$work/acks.txt")
check "SIGKILL: writes acknowledged again" wait_until 60 sh -c "test \"\$(wc -l <$work/acks.txt)\" -gt $((n0 + 50))"
check "SIGKILL: settled again over TLS" wait_until 120 tls_settled
_fo_stop "$work/writer.pid"
echo "# writer: $(cat "$work/writer.out")"
labels=$(fo_label_sampler_stop "$work/w")
check "never two pods labelled primary at once ($labels)" sh -c "echo '$labels' | grep -q ' max=1 .*two_events=0'"
new=$(rs_primary)
out=$("${TC[@]}" verify --addr "$(rs_ip "$new"):6379" --acks "$work/acks.txt" --ca "$pki/ca.crt" \
    --cert "$pki/client.crt" --key "$pki/client.key" --password-file "$work/pw")
check "SIGKILL: every acknowledged write is on the new primary $new ($out)" test $? = 0

# ---- 4. The certificate renewed in the Secret ------------------------------------------
pods_state() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=cache -o json | jq -r '[.items[] | .metadata.name + "=" + .metadata.uid + "/" + ((.status.containerStatuses[0].restartCount // 0) | tostring)] | sort | join(" ")'; }
before=$(pods_state)
addrs=$(for n in cache-0 cache-1 cache-2; do printf '%s:6379,' "$(rs_ip "$n")"; done)
addrs=${addrs%,}
_fo_start "$work/probe.pid" "$work/probe.out" "$work/probe.err" "${TC[@]}" probe --addrs "$addrs" --out "$work/probe.txt" \
    --ca "$pki/ca.crt" --cert "$pki/client.crt" --key "$pki/client.key" --password-file "$work/pw"
check "the prober runs" wait_until 10 test -s "$work/probe.txt"
serial_of() { "${TC[@]}" serial --addr "$1:6379" --ca "$pki/ca.crt" --cert "$pki/client.crt" --key "$pki/client.key"; }
all_serial() {
    local n
    for n in cache-0 cache-1 cache-2; do [ "$(serial_of "$(rs_ip "$n")")" = "$1" ] || return 1; done
}
check "every pod serves serial 1001 before (Python's ssl)" all_serial 1001
t_renew=$SECONDS
tls_secret pods2
all_serve() {
    local n ip s
    for n in cache-0 cache-1 cache-2; do
        ip=$(rs_ip "$n")
        s=$(openssl s_client -connect "$ip:6379" -CAfile "$pki/ca.crt" -cert "$pki/client.crt" -key "$pki/client.key" \
            </dev/null 2>/dev/null | openssl x509 -noout -serial 2>/dev/null | sed 's/^serial=//')
        [ "$s" = "$1" ] || return 1
    done
}
check "renewal: every pod serves the new serial 1002 (openssl s_client), no restart" wait_until 180 all_serve 1002
echo "# renewal: served by every pod $((SECONDS - t_renew)) s after the Secret changed"
check "renewal: no pod restarted or was replaced" test "$(pods_state)" = "$before"
_fo_stop "$work/probe.pid"
echo "# prober: $(cat "$work/probe.out")"
check "renewal: no client refused meanwhile ($(cat "$work/probe.out"))" grep -q 'failures=0$' "$work/probe.out"
check "renewal: the prober ran through it" sh -c "test \"\$(wc -l <$work/probe.txt)\" -ge 10"
check "renewal: TLSReady names serial 1002" wait_until 60 tls_ready True TLSCertificateValid "serial 1002"
check "renewal: Event TLSReloaded" test "$(rs_events TLSReloaded)" -ge 1
check "renewal: the replicas are still linked" wait_until 60 tls_settled

# ---- 5. A user removed from spec.acl ----------------------------------------------------
before=$(pods_state)
kubectl -n "$ns" patch rdc cache --type=json -p '[{"op":"replace","path":"/spec/acl/users","value":[{"name":"app","rules":"~* +@all -@dangerous","passwordSecretRef":{"name":"app-pw","key":"pw"}}]}]' >/dev/null
reader_refused() {
    local n
    for n in cache-0 cache-1 cache-2; do
        as reader "$READER_PW" "$(rs_ip "$n")" ping | grep -q WRONGPASS || return 1
    done
}
check "ACL: the removed user is refused (WRONGPASS) on every pod" wait_until 60 reader_refused
check "ACL: the other user still works" test "$(as app "$APP_PW" "$(rs_ip "$(rs_primary)")" ping)" = PONG
check "ACL: no pod restarted" test "$(pods_state)" = "$before"
check "ACL: Event ACLApplied says the user was removed" wait_until 30 sh -c "[ \"\$(kubectl -n $ns get events --field-selector reason=ACLApplied -o json | jq -r '.items[].message' | grep -c 'removed reader')\" -ge 1 ]"
check "ACL: the file no longer names it" wait_until 30 sh -c "! kubectl -n $ns get secret cache-redis-acl -o json | jq -r '.data[\"users.acl\"]' | base64 -d | grep -q '^user reader '"

# ---- 6. An expired certificate in the Secret ------------------------------------------
tls_secret old
check "expired: TLSReady False TLSCertificateExpired" wait_until 60 tls_ready False TLSCertificateExpired
check "expired: Degraded TLSCertificateExpired" test "$(cond Degraded reason)" = TLSCertificateExpired
check "expired: rdc_redis_tls_cert_expiry_seconds is negative" wait_until 30 expiry_in -1e12 0
sleep 40 # the kubelet's refresh of the mounted files (30 s on the pod runtime) and a reconcile
check "expired: the pods still serve the valid certificate (1002)" all_serve 1002
check "expired: clients still served" test "$(cli "$(rs_ip "$(rs_primary)")" ping)" = PONG
tls_secret pods2
check "the valid certificate back: TLSReady True" wait_until 60 tls_ready True TLSCertificateValid "serial 1002"

# ---- 7. No password anywhere it must not be --------------------------------------------
hash_of() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
check "no password in a ConfigMap" sh -c "! kubectl -n $ns get configmaps -o yaml | grep -qe '$PW' -e '$READER_PW' -e '$APP_PW'"
check "no password in an Event" sh -c "! kubectl -n $ns get events -o yaml | grep -qe '$PW' -e '$READER_PW' -e '$APP_PW'"
check "no password in the RedisCluster (status included)" sh -c "! kubectl -n $ns get rdc cache -o yaml | grep -qe '$PW' -e '$READER_PW' -e '$APP_PW'"
check "no password in the operator's log" sh -c "! grep -qe '$PW' -e '$READER_PW' -e '$APP_PW' $work/operator.log"
check "no password hash in the operator's log, Events or ConfigMaps" sh -c "! { cat $work/operator.log; kubectl -n $ns get events -o yaml; kubectl -n $ns get configmaps -o yaml; } | grep -qe $(hash_of "$PW") -e $(hash_of "$APP_PW")"
check "workerd --dry-run shows tokens, no password or hash" sh -c "out=\$($BIN/workerd --once $ns/cache --dry-run --kubeconfig $KUBECONFIG 2>/dev/null); ! printf '%s' \"\$out\" | grep -qe '$PW' -e '$APP_PW' -e $(hash_of "$APP_PW")"

summary
