#!/usr/bin/env bash
# End to end: credentials as kubectl (issue 22, items 4-6). Every kubeconfig variant goes
# through the pinned kubectl (`kubectl auth whoami`, `kubectl get`) and through the
# operator's own client (`workerd --whoami`, `workerd --once NS/NAME --dry-run`) against
# the real control plane, and the outcomes are compared: the identity the API server saw
# (username, uid, groups, extra), error or not, and allowed or forbidden.
#
#   (a) variants: client certificate, token, tokenFile, exec, cert+exec, token+exec,
#       cert+token, impersonation (a limited user, groups, uid and extra), proxy-url (dead
#       and live), HTTPS_PROXY with a loopback server, a context with a missing or no
#       user, a missing cluster;
#   (b) a 401: an exec plugin whose first token the API server does not know: re-run and
#       retried (workerd), and informerd with a plugin whose token keeps being refused
#       (plugin runs and 401s counted), then accepted;
#   (c) impersonating a limited identity gives 403 where kubectl gets 403.
#
# Needs RDC_CLUSTER_DIR's pki/ (the cluster CA key signs a client certificate for the
# limited user) and python3 for a small CONNECT proxy on 127.0.0.1.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

PKI="${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}/pki"
ns=rdc-e2e-kcfg
work=$(mktemp -d /tmp/rdc-e2e-kcfg.XXXXXX)
proxy_pid=
inf_pid=
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
    [ -n "$inf_pid" ] && kill "$inf_pid" 2>/dev/null
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    kubectl delete clusterrolebinding rdc-e2e-kcfg-sa >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

# ---- inputs: a check that passes on a missing input proves nothing
check "cluster CA key present ($PKI/ca.key)" test -s "$PKI/ca.key"
check "admin client certificate present" test -s "$PKI/admin.crt"
check "workerd built with --whoami" sh -c "'$BIN/workerd' --help 2>&1 | grep -q -- --whoami"
check "python3 present (CONNECT proxy)" command -v python3
[ "$failed" -eq 0 ] || { summary; exit 1; }
echo "# kubectl $(kubectl version --client -o json | jq -r .clientVersion.gitVersion)"

server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
port=${server##*:}

# ---- identities (a namespace left by an earlier run may still be terminating)
kubectl delete namespace "$ns" --ignore-not-found --timeout=90s >/dev/null 2>&1
kubectl delete clusterrolebinding rdc-e2e-kcfg-sa --ignore-not-found >/dev/null 2>&1
kubectl apply -f "$TOP/crds/" >/dev/null
kubectl create namespace "$ns" >/dev/null
kubectl -n "$ns" create serviceaccount kcfg-sa >/dev/null
kubectl -n "$ns" create serviceaccount kcfg-sa2 >/dev/null
kubectl create clusterrolebinding rdc-e2e-kcfg-sa --clusterrole=cluster-admin \
    --serviceaccount="$ns:kcfg-sa" --serviceaccount="$ns:kcfg-sa2" >/dev/null
kubectl -n "$ns" create role kcfg-reader --verb=get,list \
    --resource=redisclusters.cache.example.com,configmaps,services,statefulsets.apps >/dev/null
kubectl -n "$ns" create rolebinding kcfg-reader-user --role=kcfg-reader --user=rdc-e2e-limited >/dev/null
kubectl -n "$ns" create rolebinding kcfg-reader-group --role=kcfg-reader --group=rdc-e2e-readers >/dev/null
sa_token=$(kubectl -n "$ns" create token kcfg-sa --duration=1h)
sa2_token=$(kubectl -n "$ns" create token kcfg-sa2 --duration=1h)
printf '%s\n' "$sa_token" >"$work/sa.token"
printf '%s\n' "$sa2_token" >"$work/sa2.token"
printf 'rdc-e2e-bogus-%s\n' "$RANDOM$RANDOM" >"$work/bogus.token"
check "ServiceAccount tokens issued" test -n "$sa_token" -a -n "$sa2_token"
# a client certificate for the limited user, from the cluster's CA
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$work/limited.key" -out "$work/limited.csr" -subj "/CN=rdc-e2e-limited" 2>/dev/null
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$work/limited.ext"
openssl x509 -req -in "$work/limited.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -CAserial "$work/ca.srl" -out "$work/limited.crt" -days 1 \
    -extfile "$work/limited.ext" 2>/dev/null
check "limited client certificate signed" test -s "$work/limited.crt"

# The exec plugin: logs each run to $1, prints the token in $2 on its first run and the one
# in $3 afterwards.
cat >"$work/plugin.sh" <<'SH'
#!/bin/sh
echo run >>"$1"
n=$(wc -l <"$1")
if [ "$n" -le 1 ]; then tok=$(cat "$2"); else tok=$(cat "$3"); fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$tok"
SH
chmod 755 "$work/plugin.sh"

# A CONNECT proxy on 127.0.0.1 that logs each request line (proxy-url that works).
cat >"$work/proxy.py" <<'PY'
import socket, sys, threading
port_file, log_file = sys.argv[1], sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def handle(c):
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(4096)
        if not d:
            c.close()
            return
        head += d
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    with open(log_file, "a") as f:
        f.write(line + "\n")
    parts = line.split(" ")
    if len(parts) < 2 or parts[0] != "CONNECT":
        c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    host, port = parts[1].rsplit(":", 1)
    try:
        u = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
    except OSError:
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    u.settimeout(None)
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    pump(u, c)
with open(port_file + ".new", "w") as f:
    f.write(str(srv.getsockname()[1]))
import os
os.rename(port_file + ".new", port_file)
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
PY
python3 "$work/proxy.py" "$work/proxy.port" "$work/proxy.log" 2>"$work/proxy.err" &
proxy_pid=$!
wait_until 10 test -s "$work/proxy.port"
proxy_port=$(cat "$work/proxy.port" 2>/dev/null)
check "CONNECT proxy listening on 127.0.0.1:$proxy_port" test -n "$proxy_port"
# a port where nothing listens: a dead proxy
dead_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# ---- kubeconfig variants
# kc NAME USER_LINES [CLUSTER_LINES] [CONTEXT_USER ("-" = none)] [CONTEXT_CLUSTER] [SERVER]
kc() {
    local f="$work/$1.kubeconfig" user_line="    user: ${4:-u}"
    [ "${4:-u}" = - ] && user_line=""
    {
        echo "apiVersion: v1"
        echo "kind: Config"
        echo "clusters:"
        echo "- name: c"
        echo "  cluster:"
        echo "    server: ${6:-$server}"
        echo "    certificate-authority-data: $ca"
        [ -n "${3:-}" ] && printf '%s\n' "$3"
        echo "users:"
        echo "- name: u"
        echo "  user:"
        printf '%s\n' "$2"
        echo "contexts:"
        echo "- name: x"
        echo "  context:"
        echo "    cluster: ${5:-c}"
        [ -n "$user_line" ] && echo "$user_line"
        echo "current-context: x"
    } >"$f"
    chmod 600 "$f"
}
CERT_ADMIN="    client-certificate: $PKI/admin.crt
    client-key: $PKI/admin.key"
CERT_LIMITED="    client-certificate: $work/limited.crt
    client-key: $work/limited.key"
TOKEN="    token: $sa_token"
TOKENFILE="    tokenFile: $work/sa.token"
exec_user() { # exec_user RUNS_FILE FIRST_TOKEN_FILE LATER_TOKEN_FILE
    printf '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: %s\n      args: [%s, %s, %s]\n      interactiveMode: Never\n' \
        "$work/plugin.sh" "$1" "$2" "$3"
}

kc cert "$CERT_ADMIN"
kc token "$TOKEN"
kc tokenfile "$TOKENFILE"
kc token-tokenfile "    token: rdc-e2e-bogus-static
$TOKENFILE"
kc exec "$(exec_user "$work/runs.X" "$work/sa2.token" "$work/sa2.token")"
kc cert-exec "$CERT_ADMIN
$(exec_user "$work/runs.X" "$work/sa2.token" "$work/sa2.token")"
kc token-exec "$TOKEN
$(exec_user "$work/runs.X" "$work/sa2.token" "$work/sa2.token")"
kc cert-token "$CERT_LIMITED
$TOKEN"
kc as-limited "$CERT_ADMIN
    as: rdc-e2e-limited"
kc as-groups "$CERT_ADMIN
    as: rdc-e2e-nobody
    as-groups: [rdc-e2e-readers, rdc-e2e-other]"
kc as-nobody "$CERT_ADMIN
    as: rdc-e2e-nobody"
kc as-uid-extra "$CERT_ADMIN
    as: rdc-e2e-limited
    as-uid: '4242'
    as-user-extra:
      example.com/team: [blue, green]
      scopes: [read]"
kc groups-only "$CERT_ADMIN
    as-groups: [rdc-e2e-readers]"
kc proxy-dead "$TOKEN" "    proxy-url: http://127.0.0.1:$dead_port"
kc proxy-live "$TOKEN" "    proxy-url: http://127.0.0.1:$proxy_port"
kc env-proxy-loopback "$TOKEN"
kc env-proxy-localhost "$TOKEN" "" "" "" "https://localhost:$port"
kc missing-user "$TOKEN" "" ghost
kc no-user "$TOKEN" "" -
kc missing-cluster "$TOKEN" "" "" nowhere

# Identity as one line: username uid groups extra (sorted), or "error: <reason>".
ident() { jq -S -c '.status.userInfo | {username, uid, groups: ((.groups // []) | sort), extra}' 2>/dev/null; }
who_kubectl() { # who_kubectl FILE [env...]
    local f=$1 out; shift
    if out=$(env "$@" kubectl --kubeconfig "$f" --request-timeout=15s auth whoami -o json 2>"$work/k.err"); then
        echo "$out" | ident
    else
        echo "error: $(tr '\n' ' ' <"$work/k.err" | cut -c1-160)"
    fi
}
who_operator() {
    local f=$1 out; shift
    if out=$(env "$@" "$BIN/workerd" --kubeconfig "$f" --log-level error --whoami 2>"$work/o.err"); then
        echo "$out" | ident
    else
        echo "error: $(grep -v '^workerd: server ' "$work/o.err" | tr '\n' ' ' | cut -c1-160)"
    fi
}
# Read access to namespace $2: allowed, forbidden or error.
read_kubectl() {
    local f=$1 n=$2
    if kubectl --kubeconfig "$f" --request-timeout=15s get redisclusters,configmaps -n "$n" -o name >/dev/null 2>"$work/k.err"; then
        echo allowed
    elif grep -qi forbidden "$work/k.err"; then echo forbidden
    else echo "error"; fi
}
read_operator() {
    local f=$1 n=$2
    if "$BIN/workerd" --kubeconfig "$f" --log-level error --once "$n/rdc-e2e-none" --dry-run >/dev/null 2>"$work/o.err"; then
        echo allowed
    elif grep -qi forbidden "$work/o.err"; then echo forbidden
    else echo "error"; fi
}
kind_of() { case "$1" in error:*) echo error ;; *) echo "$1" ;; esac; }
runs() { [ -f "$1" ] && wc -l <"$1" | tr -d ' ' || echo 0; }

# compare NAME EXPECTED_USER|error|- [env...]: same outcome from both; EXPECTED_USER is a
# substring the identity must contain, "error" an error, "-" only kubectl's outcome.
compare() {
    local name=$1 want=$2 f="$work/$1.kubeconfig"; shift 2
    sed -i "s#$work/runs\.[A-Za-z0-9-]*#$work/runs.$name#g" "$f"
    rm -f "$work/runs.$name"
    local k o kr
    k=$(who_kubectl "$f" "$@")
    kr=$(runs "$work/runs.$name")
    rm -f "$work/runs.$name"
    o=$(who_operator "$f" "$@")
    local orun
    orun=$(runs "$work/runs.$name")
    echo "#   $name: kubectl: $k [plugin runs $kr]"
    echo "#   $name: operator: $o [plugin runs $orun]"
    if [ "$(kind_of "$k")" = error ] && [ "$(kind_of "$o")" = error ]; then
        ok "$name: both refuse"
    elif [ "$k" = "$o" ]; then
        ok "$name: same identity as kubectl"
    else
        not_ok "$name: kubectl and operator differ"
    fi
    if [ "$want" = - ]; then
        :
    elif [ "$want" = error ]; then
        check "$name: an error, as expected" test "$(kind_of "$o")" = error
    else
        check "$name: identity has $want" sh -c "printf '%s' '$o' | grep -qF -- '$want'"
    fi
    check "$name: plugin runs as kubectl ($kr)" test "$kr" = "$orun"
    last_k=$k last_o=$o
}

echo "# (a) kubeconfig variants through kubectl and the operator"
compare cert '"username":"kubernetes-admin"'
compare token "\"username\":\"system:serviceaccount:$ns:kcfg-sa\""
compare tokenfile "\"username\":\"system:serviceaccount:$ns:kcfg-sa\""
compare token-tokenfile "\"username\":\"system:serviceaccount:$ns:kcfg-sa\""
compare exec "\"username\":\"system:serviceaccount:$ns:kcfg-sa2\""
compare cert-exec '"username":"kubernetes-admin"'
compare token-exec "\"username\":\"system:serviceaccount:$ns:kcfg-sa\""
compare cert-token '"username":"rdc-e2e-limited"'
compare as-limited '"username":"rdc-e2e-limited"'
compare as-groups '"groups":["rdc-e2e-other","rdc-e2e-readers","system:authenticated"]'
compare as-uid-extra '"uid":"4242"'
check "as-uid-extra: extra key with '/' arrives intact" sh -c "printf '%s' '$last_o' | grep -qF '\"example.com/team\":[\"blue\",\"green\"]'"
compare groups-only error
compare proxy-dead error
: >"$work/proxy.log"
compare proxy-live "\"username\":\"system:serviceaccount:$ns:kcfg-sa\""
check "proxy-live: kubectl and the operator both went through the proxy (CONNECTs: $(wc -l <"$work/proxy.log"))" \
    test "$(grep -c "^CONNECT 127.0.0.1:$port " "$work/proxy.log")" -ge 2
compare env-proxy-loopback "\"username\":\"system:serviceaccount:$ns:kcfg-sa\"" \
    HTTPS_PROXY="http://127.0.0.1:$dead_port" https_proxy="http://127.0.0.1:$dead_port"
compare env-proxy-localhost "\"username\":\"system:serviceaccount:$ns:kcfg-sa\"" \
    HTTPS_PROXY="http://127.0.0.1:$dead_port" NO_PROXY=
compare missing-cluster error

# A context whose user is missing, or that names none: kubectl has no credential and
# prompts for a username (basic auth), which without a terminal ends in "error: EOF";
# the operator refuses at load, naming the context.
for v in missing-user no-user; do
    f="$work/$v.kubeconfig"
    k=$(who_kubectl "$f")
    o=$(who_operator "$f")
    echo "#   $v: kubectl: $k"
    echo "#   $v: operator: $o"
    check "$v: the operator refuses at load, naming the context" \
        grep -qF 'context \"x\": user' "$work/o.err"
    check "$v: kubectl fails too (no credential: it prompts for a username)" \
        sh -c "printf '%s' '$k' | grep -q '^error'"
done

echo "# (c) impersonation: read access as kubectl has it"
for v in cert as-limited as-groups as-nobody cert-token; do
    for n in "$ns" default; do
        k=$(read_kubectl "$work/$v.kubeconfig" "$n")
        o=$(read_operator "$work/$v.kubeconfig" "$n")
        echo "#   $v in $n: kubectl $k, operator $o"
        check "$v reading $n: operator $o as kubectl" test "$k" = "$o"
    done
done
check "as-limited: 403 outside its namespace (kubectl and operator)" \
    test "$(read_operator "$work/as-limited.kubeconfig" default)" = forbidden
check "as-limited: allowed in $ns" test "$(read_operator "$work/as-limited.kubeconfig" "$ns")" = allowed
check "as-nobody: 403 without the group" test "$(read_operator "$work/as-nobody.kubeconfig" "$ns")" = forbidden
check "cert (admin, no impersonation) may read default" test "$(read_operator "$work/cert.kubeconfig" default)" = allowed

echo "# (b) 401: the plugin's first token is unknown to the API server"
kc exec-401 "$(exec_user "$work/runs.X" "$work/bogus.token" "$work/sa2.token")"
f="$work/exec-401.kubeconfig"
sed -i "s#$work/runs\.X#$work/runs.k401#" "$f"
k=$(who_kubectl "$f")
kr=$(runs "$work/runs.k401")
sed -i "s#$work/runs\.k401#$work/runs.o401#" "$f"
o=$(who_operator "$f")
orun=$(runs "$work/runs.o401")
echo "#   kubectl: $k [plugin runs $kr]"
echo "#   operator: $o [plugin runs $orun]"
check "operator: after the 401 the plugin ran again and the request succeeded" \
    sh -c "printf '%s' '$o' | grep -qF 'system:serviceaccount:$ns:kcfg-sa2'"
check "operator: the plugin ran exactly twice (kubectl: $kr)" test "$orun" = 2

# informerd with a plugin whose token keeps being refused: the plugin is re-run with the
# backoff (1, 2, 4 s ...) instead of once, the refused token is not resent in a loop, and
# once the plugin hands out a good token informerd lists.
unauthorized() { kubectl get --raw /metrics | awk '/^authentication_attempts\{/ && !/result="success"/ { s += $NF } END { printf "%d\n", s }'; }
cp "$work/bogus.token" "$work/later.token"
kc inf "$(exec_user "$work/runs.inf" "$work/bogus.token" "$work/later.token")"
rt="$work/rt"; mkdir -p "$rt"; chmod 700 "$rt"
before=$(unauthorized)
"$BIN/informerd" --kubeconfig "$work/inf.kubeconfig" --tail --runtime-dir "$rt" \
    --namespace "$ns" --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    >"$work/inf.out" 2>"$work/inf.err" &
inf_pid=$!
sleep 12
r12=$(runs "$work/runs.inf")
u12=$(( $(unauthorized) - before ))
echo "#   informerd, 12 s of refused tokens: plugin runs $r12, 401s at the API server $u12"
check "informerd re-runs the plugin after 401s (runs $r12 > 1)" test "$r12" -gt 1
check "informerd backs off: at most 8 plugin runs in 12 s (runs $r12)" test "$r12" -le 8
# The refused requests are paced by informerd's relist backoff, each watched kind's own
# (client-go's reflectors back off one by one: 0.8 s doubling, 4 or 5 LISTs a kind in
# 12 s), not by the plugin: bounded, not zero. The bound follows the kinds informerd
# watches (its "relisting" lines name them: 7 kinds made it 40, 10 since the backups).
kinds=$(grep '"msg":"relisting"' "$work/inf.err" | grep -o '"kind":"[^"]*"' | sort -u | wc -l)
check "informerd relisted every watched kind after its 401s ($kinds kinds)" test "$kinds" -ge 7
check "refused requests stay paced: at most 6 a kind in 12 s ($u12 for $kinds kinds)" test "$u12" -le $((6 * kinds))
check "informerd still running" kill -0 "$inf_pid"
cp "$work/sa2.token" "$work/later.token"
kubectl -n "$ns" create configmap rdc-e2e-probe --from-literal=a=b >/dev/null
kubectl -n "$ns" label configmap rdc-e2e-probe app.kubernetes.io/managed-by=rediscluster-operator >/dev/null
t0=$SECONDS
wait_until 45 grep -q '"type"' "$work/inf.out"
echo "#   informerd listed $((SECONDS - t0)) s after the plugin's token became valid; plugin runs $(runs "$work/runs.inf")"
check "informerd lists once the plugin's token is accepted" grep -q '"type"' "$work/inf.out"
kill "$inf_pid" 2>/dev/null; wait "$inf_pid" 2>/dev/null; inf_pid=
summary
