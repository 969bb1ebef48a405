#!/usr/bin/env bash
# Secure metrics as controller-runtime serves them since 0.16 (--metrics-secure): HTTPS on
# --metrics-bind-address, a scraper authenticated by TokenReview and authorized by
# SubjectAccessReview (get on the non-resource URL /metrics). No token -> 401, a token
# without the role -> 403, with the metrics-reader ClusterRole (deploy/) -> 200 and the
# exposition; the probe port serves /healthz and /readyz only. The certificate: a
# self-signed one when none is given, else tls.crt/tls.key from --metrics-cert-path.
set -uo pipefail
TOP=${RDC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TOP/tests/e2e/lib.sh"
ns=e2e-metrics-$$
e2e_setup metrics "$ns"
cleanup_more() {
    kubectl delete clusterrolebinding "e2e-metrics-reader-$$" --ignore-not-found >/dev/null 2>&1
    kubectl delete -f "$TOP/deploy/base/rbac/metrics_reader_role.yaml" --ignore-not-found >/dev/null 2>&1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

kubectl apply -f "$TOP/deploy/base/rbac/metrics_reader_role.yaml" >/dev/null
kubectl -n "$ns" create serviceaccount reader >/dev/null
kubectl -n "$ns" create serviceaccount stranger >/dev/null
kubectl create clusterrolebinding "e2e-metrics-reader-$$" --clusterrole=rediscluster-operator-metrics-reader \
    --serviceaccount="$ns:reader" >/dev/null
t_reader=$(kubectl -n "$ns" create token reader)
t_stranger=$(kubectl -n "$ns" create token stranger)
check "tokens were issued" test -n "$t_reader" -a -n "$t_stranger"

# One pass per certificate source: self-signed, then the webhook's mechanism (a directory
# holding tls.crt and tls.key, as the mounted Secret).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=metrics-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
mkdir -p "$work/certs"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$work/certs/tls.key" -out "$work/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/ext"
openssl x509 -req -in "$work/srv.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
    -extfile "$work/ext" -out "$work/certs/tls.crt" 2>/dev/null

for mode in self-signed cert-path; do
    port=$(free_port)
    extra=() curl_ca=(-k)
    if [ "$mode" = cert-path ]; then
        extra=(--metrics-cert-path "$work/certs"); curl_ca=(--cacert "$work/ca.crt")
    fi
    rt="$work/rt-$mode"
    "$BIN/supervisor" --runtime-dir "$rt" --namespace "$ns" --workers 1 --redis-observer=false \
        --metrics-secure --metrics-bind-address "127.0.0.1:$port" "${extra[@]}" \
        --health-probe-bind-address 127.0.0.1:0 >"$work/sup-$mode.log" 2>&1 &
    sup_pid=$!
    wait_until 10 test -s "$rt/endpoints"
    health=$(sed -n 's/^health=//p' "$rt/endpoints")
    url="https://127.0.0.1:$port/metrics"
    code() { curl -s -o "$work/body" -w '%{http_code}' "${curl_ca[@]}" "$@" "$url"; }
    check "$mode: the secure port answers over TLS" wait_until 15 eval "curl -s ${curl_ca[*]} -o /dev/null $url"
    check "$mode: the endpoints file names the secure port" output_is "$port" sed -n 's/^metrics=//p' "$rt/endpoints"
    check "$mode: plain HTTP on the secure port is refused" eval "! curl -sf -o /dev/null http://127.0.0.1:$port/metrics"
    check "$mode: no token -> 401" output_is 401 code
    check "$mode: a token the API server does not know -> 401" output_is 401 code -H "Authorization: Bearer not-a-token"
    check "$mode: a token without the role -> 403" output_is 403 code -H "Authorization: Bearer $t_stranger"
    check "$mode: a token with metrics-reader -> 200" output_is 200 code -H "Authorization: Bearer $t_reader"
    check "$mode: ... and the exposition has controller-runtime's families" \
        grep -q '^# TYPE workqueue_depth gauge' "$work/body"
    check "$mode: ... and metricsd's own rest_client calls (the reviews; its file every 2 s)" wait_until 6 eval \
        "curl -s ${curl_ca[*]} -H 'Authorization: Bearer $t_reader' $url | grep -q 'rest_client_requests_total{.*child=\"metricsd\"'"
    if [ "$mode" = cert-path ]; then
        check "cert-path: the served certificate is the one of --metrics-cert-path" eval \
            "openssl s_client -connect 127.0.0.1:$port -CAfile $work/ca.crt </dev/null 2>/dev/null | grep -q 'Verify return code: 0'"
        # A rotation as the kubelet makes it (new files renamed into place): metricsd
        # serves the new certificate without a restart (it looks every 2 s).
        served_cn() { openssl s_client -connect "127.0.0.1:$port" -CAfile "$work/ca.crt" </dev/null 2>/dev/null |
            openssl x509 -noout -subject 2>/dev/null; }
        check "cert-path: before the rotation the subject is CN=localhost ($(served_cn))" eval "served_cn | grep -q 'CN *= *localhost'"
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=rotated \
            -keyout "$work/certs/tls.key.new" -out "$work/srv2.csr" 2>/dev/null
        openssl x509 -req -in "$work/srv2.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
            -extfile "$work/ext" -out "$work/certs/tls.crt.new" 2>/dev/null
        mv "$work/certs/tls.key.new" "$work/certs/tls.key" && mv "$work/certs/tls.crt.new" "$work/certs/tls.crt"
        check "cert-path: a rotated certificate is served within 6 s, no restart" wait_until 6 eval \
            "served_cn | grep -q 'CN *= *rotated'"
        check "cert-path: ... metricsd logged the reload" grep -q 'serving certificate reloaded' "$work/sup-$mode.log"
        check "cert-path: ... and a scrape with the new certificate is answered (200)" output_is 200 code \
            -H "Authorization: Bearer $t_reader"
    else
        check "self-signed: the certificate is not one a CA signed (curl without -k refuses it)" \
            eval "! curl -sf -o /dev/null -H 'Authorization: Bearer $t_reader' $url"
    fi
    check "$mode: the probe port serves /healthz" output_is 200 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/healthz"
    check "$mode: the probe port serves /readyz" wait_output 20 200 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/readyz"
    check "$mode: the probe port has no /metrics" output_is 404 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/metrics"
    upstream=$(sed -n 's/^metrics_upstream=//p' "$rt/endpoints")
    check "$mode: the supervisor's own metrics server listens on loopback only" \
        eval "ss -ltn | grep -q '127.0.0.1:$upstream '"
    sup_stop 10
    check "$mode: the supervisor exits 0 on SIGTERM" wait "$sup_pid"
    sup_pid=
done

# The decisions are cached: a burst of 20 scrapes makes no more reviews than one.
port=$(free_port); rt="$work/rt-cache"
"$BIN/supervisor" --runtime-dir "$rt" --namespace "$ns" --workers 1 --redis-observer=false \
    --metrics-secure --metrics-bind-address "127.0.0.1:$port" --health-probe-bind-address 127.0.0.1:0 \
    >"$work/sup-cache.log" 2>&1 &
sup_pid=$!
url="https://127.0.0.1:$port/metrics"
wait_until 15 eval "curl -sk -o /dev/null $url"
reviews() { curl -sk -H "Authorization: Bearer $t_reader" "$url" |
    awk '/^rest_client_requests_total\{/ && /child="metricsd"/ && /method="POST"/ {s += $NF} END {print s + 0}'; }
reviews >/dev/null
sleep 2.5 # metricsd publishes its metrics file every 2 s
r1=$(reviews)
for _ in $(seq 20); do curl -sk -o /dev/null -H "Authorization: Bearer $t_reader" "$url"; done
for _ in $(seq 5); do curl -sk -o /dev/null -H "Authorization: Bearer $t_stranger" "$url"; done
sleep 2.5 # metricsd publishes its metrics file every 2 s
r2=$(reviews)
check "reviews are cached: $r1 POSTs after the first scrapes, $r2 after 25 more (the stranger's pair = 2 more)" \
    test "$r1" -ge 2 -a "$((r2 - r1))" -eq 2
summary
