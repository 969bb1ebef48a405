#!/usr/bin/env bash
# End to end: the admission webhooks (build/bin/webhookd) behind the real API server, and
# the deploy/ manifests against it.
#
# webhookd runs on 127.0.0.1:<free port> with a certificate from deploy/gen-certs.sh (a
# temporary CA, SAN IP:127.0.0.1); Validating/MutatingWebhookConfigurations point the API
# server at it by URL with that CA, scoped to this test's namespace only. Then: invalid
# RedisClusters are refused with messages naming the field, size may grow but not shrink
# (also through /scale), storage.size may grow where the StorageClass allows volume
# expansion (webhookd reads the class with this test's kubeconfig: refused on the class
# `fixed` of tests/cluster/cluster.sh, admitted on the default class), never shrink, the
# class is immutable, metadata-only updates pass, defaults appear
# on created objects (also in a server-side dry run), the HTTPS side refuses what it must,
# a rotated certificate is served without a restart, SIGTERM exits 0, and
# `kubectl apply --dry-run=server -k deploy/` succeeds. A second webhookd with a cap of 3
# connections and a 3 s whole-request deadline shows the limits: connection cap+1 is
# refused while the 3 accepted ones are served, accepting resumes when one closes, and a
# slow-loris client (a byte a second) is closed at the deadline.
#
# Cleanup (trap): the webhook configurations FIRST (they fail closed), then webhookd by
# its PID, then the namespaces this script created.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-wh
op_ns=rediscluster-operator-system
vwc=rdc-e2e-webhook-validating
mwc=rdc-e2e-webhook-mutating
work=$(mktemp -d /tmp/rdc-e2e-wh.XXXXXX)
wh_pid=
lim_pid=
lim_clients=()
created_op_ns=0
VPATH=/validate-cache-example-com-v1alpha1-rediscluster
MPATH=/mutate-cache-example-com-v1alpha1-rediscluster

cleanup() {
    kubectl delete validatingwebhookconfiguration "$vwc" --ignore-not-found --wait=false >/dev/null 2>&1
    kubectl delete mutatingwebhookconfiguration "$mwc" --ignore-not-found --wait=false >/dev/null 2>&1
    if [ -n "$wh_pid" ] && kill -0 "$wh_pid" 2>/dev/null; then
        kill -TERM "$wh_pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$wh_pid" 2>/dev/null || break; sleep 0.3; done
        kill -KILL "$wh_pid" 2>/dev/null
    fi
    for p in "${lim_clients[@]}" $lim_pid; do kill "$p" 2>/dev/null; done
    kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
    [ "$created_op_ns" = 1 ] && kubectl delete namespace "$op_ns" --ignore-not-found --wait=false >/dev/null 2>&1
    if [ "${RDC_E2E_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# A RedisCluster in $ns as JSON: rc NAME SPEC-JSON
rc() { printf '{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"%s","namespace":"%s"},"spec":%s}' "$1" "$ns" "$2"; }
create() { rc "$1" "$2" | kubectl create -f - 2>&1; }
field() { kubectl -n "$ns" get rdc "$1" -o jsonpath="{$2}" 2>/dev/null; }
# curl to webhookd, trusting only our CA; prints the HTTP status.
wcurl() { curl -s -o "$work/body" -w '%{http_code}' --max-time 15 --cacert "$work/certs/ca.crt" "$@"; }

# ---- The deploy copy of the CRD ---------------------------------------------------------
check "deploy/base/crd is the same as crds/" cmp -s "$TOP/crds/cache.example.com_redisclusters.yaml" \
    "$TOP/deploy/base/crd/cache.example.com_redisclusters.yaml"

# ---- Certificates and webhookd ----------------------------------------------------------
check "gen-certs.sh makes a CA and a serving certificate for 127.0.0.1" \
    "$TOP/deploy/gen-certs.sh" --certs-only --ip 127.0.0.1 --days 1 -o "$work/certs"
check "the serving certificate verifies against the CA" \
    sh -c "openssl verify -CAfile '$work/certs/ca.crt' '$work/certs/tls.crt' >/dev/null"

# With this test's kubeconfig: it reads StorageClasses when an update grows storage.size.
"$BIN/webhookd" --webhook-bind-address 127.0.0.1 --webhook-port 0 --webhook-cert-dir "$work/certs" \
    --runtime-dir "$work/rt" --log-level debug --kubeconfig "${KUBECONFIG%%:*}" >"$work/webhookd.log" 2>&1 &
wh_pid=$!
port=
listening() {
    port=$(sed -n 's/.*"msg":"webhook server listening".*"port":"\([0-9]*\)".*/\1/p' "$work/webhookd.log" | head -1)
    [ -n "$port" ]
}
if ! wait_until 10 listening || ! listening; then
    not_ok "webhookd started"
    cat "$work/webhookd.log"
    summary
    exit 1
fi
ok "webhookd listening on 127.0.0.1:$port"
check "  ... with the StorageClass check of a growing storage.size on" \
    grep -q '"msg":"a growing spec.storage.size is checked against its StorageClass"' "$work/webhookd.log"
base=https://127.0.0.1:$port
check "/healthz over TLS with our CA" test "$(wcurl "$base/healthz")" = 200

# ---- The HTTPS side ---------------------------------------------------------------------
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"e2e-1","kind":{"group":"cache.example.com","version":"v1","kind":"RedisCluster"},"operation":"CREATE","name":"x","namespace":"d","object":{"metadata":{"name":"x"},"spec":{"size":1,"image":"redis"}}}}'
check "POST review: 200 with the uid echoed" test "$(wcurl -H 'Content-Type: application/json' -d "$review" "$base$VPATH?timeout=10s")" = 200
check "  ... and allowed" grep -q '"uid":"e2e-1","allowed":true' "$work/body"
check "mutate: 200" test "$(wcurl -H 'Content-Type: application/json' -d "$review" "$base$MPATH")" = 200
check "  ... with a JSON Patch" grep -q '"patchType":"JSONPatch","patch":"' "$work/body"
check "GET on a webhook path: 405" test "$(wcurl "$base$VPATH")" = 405
check "text/plain body: 415" test "$(wcurl -H 'Content-Type: text/plain' -d "$review" "$base$VPATH")" = 415
check "not JSON: 400 with a BadRequest review" test "$(wcurl -H 'Content-Type: application/json' -d '{"kind":' "$base$VPATH")" = 400
check "  ... saying why" grep -q '"reason":"BadRequest"' "$work/body"
check "unknown path: 404" test "$(wcurl -H 'Content-Type: application/json' -d "$review" "$base/validate")" = 404
head -c $((4 << 20)) /dev/zero | tr '\0' ' ' >"$work/big.json"
check "4 MiB body: 413" test "$(wcurl -H 'Content-Type: application/json' --data-binary @"$work/big.json" "$base$VPATH")" = 413
# The client may offer old protocols (security level 0), so a refusal is the server's.
old_tls() { curl -s -o /dev/null --cacert "$work/certs/ca.crt" --ciphers 'DEFAULT:@SECLEVEL=0' --tlsv1.1 "$@" "$base/healthz"; }
check "TLS 1.1 refused by the server" sh -c "$(declare -f old_tls); work='$work' base='$base'; ! old_tls --tls-max 1.1"
check "  ... while TLS 1.2 from the same client is served" old_tls --tls-max 1.2
check "plain HTTP gets no answer" sh -c "! curl -s -o /dev/null --max-time 5 'http://127.0.0.1:$port/healthz'"
slow_client() { # a client that connects and says nothing is dropped (evhttp timeout 10 s)
    local start=$SECONDS
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
    timeout 20 cat <&3 >/dev/null
    local rc=$?
    exec 3<&-
    [ "$rc" -ne 124 ] && [ $((SECONDS - start)) -le 15 ]
}
check "a silent client is dropped within the timeout" slow_client
check "webhookd still alive after all that" kill -0 "$wh_pid"

# ---- Connection limits: a second webhookd, cap 3, whole-request deadline 3 s ----------------
"$BIN/webhookd" --webhook-bind-address 127.0.0.1 --webhook-port 0 --webhook-cert-dir "$work/certs" \
    --runtime-dir "$work/rt-lim" --webhook-max-connections 3 --webhook-request-timeout 3s \
    --webhook-idle-timeout 6s >"$work/lim.log" 2>&1 &
lim_pid=$!
lim_port=
lim_listening() {
    lim_port=$(sed -n 's/.*"msg":"webhook server listening".*"port":"\([0-9]*\)".*/\1/p' "$work/lim.log" | head -1)
    [ -n "$lim_port" ]
}
wait_until 10 lim_listening
check "limited webhookd listening, cap and deadline logged" \
    grep -q '"maxConnections":"3","requestTimeout":"3000ms","idleTimeout":"6s"' "$work/lim.log"
# client N: a TLS connection held open by openssl s_client, fed through a fifo on fd 10+N.
client() {
    local n=$1
    mkfifo "$work/in$n"
    openssl s_client -connect "127.0.0.1:$lim_port" -CAfile "$work/certs/ca.crt" -quiet <"$work/in$n" \
        >"$work/out$n" 2>"$work/err$n" &
    lim_clients[$n]=$!
    eval "exec $((10 + n))>\"\$work/in$n\""
}
healthz_on() { # healthz_on N: one more GET /healthz on client N, answered 200 (count them)
    local n=$1 before
    before=$(grep -c '^HTTP/1.1 200' "$work/out$n" 2>/dev/null)
    printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&$((10 + n)) || return 1
    wait_until 5 sh -c "[ \$(grep -c '^HTTP/1.1 200' '$work/out$n') -gt ${before:-0} ]"
}
lim_metric() { awk -v k="$1" '$1 == k { print $2 }' "$work/rt-lim/metrics/webhookd.prom" 2>/dev/null | cut -d. -f1; }
if [ -n "$lim_port" ]; then
    for n in 1 2 3; do client "$n"; done
    for n in 1 2 3; do check "connection $n of 3 accepted and served" healthz_on "$n"; done
    # Connection 4: TCP connects (the kernel's backlog), then webhookd resets it at accept.
    check "connection 4 (cap+1) refused" sh -c "! curl -s -o /dev/null --max-time 5 --cacert '$work/certs/ca.crt' 'https://127.0.0.1:$lim_port/healthz'"
    check "  ... while the accepted ones are still served" healthz_on 1
    refused_counted() { [ "$(lim_metric webhook_connections_refused_total)" -ge 1 ]; }
    check "  ... counted in webhook_connections_refused_total" wait_until 5 refused_counted
    check "  ... open connections 3 in webhook_open_connections" test "$(lim_metric webhook_open_connections)" = 3
    kill "${lim_clients[2]}" 2>/dev/null
    eval "exec 12>&-"
    reaccept() { curl -s -o /dev/null --max-time 3 --cacert "$work/certs/ca.crt" "https://127.0.0.1:$lim_port/healthz"; }
    check "one closes: a new connection is accepted again" wait_until 5 reaccept
    kill "${lim_clients[1]}" "${lim_clients[3]}" 2>/dev/null
    eval "exec 11>&- 13>&-"

    # Slow loris: a byte a second (each read well within the 6 s idle timeout), never a
    # whole request: closed at the 3 s whole-request deadline.
    client 4
    t0=$SECONDS
    ( for c in P O S T ' ' / v a l i d a t e x y z w; do printf '%s' "$c" || exit 0; sleep 1; done ) >&14 2>/dev/null &
    trickle=$!
    s_client_gone() { ! kill -0 "${lim_clients[4]}" 2>/dev/null; }
    wait_until 15 s_client_gone
    took=$((SECONDS - t0))
    check "slow-loris client closed by webhookd (after ${took}s)" s_client_gone
    check "  ... at the whole-request deadline (3 s), not before and long before the trickle ends (16 s)" \
        test "$took" -ge 2 -a "$took" -le 7
    kill "$trickle" 2>/dev/null
    eval "exec 14>&-"
    timed_out_counted() { [ "$(lim_metric webhook_connections_timed_out_total)" -ge 1 ]; }
    check "  ... counted in webhook_connections_timed_out_total" wait_until 5 timed_out_counted
    check "limited webhookd still alive" kill -0 "$lim_pid"
    kill -TERM "$lim_pid"
    wait "$lim_pid"
    check "limited webhookd: SIGTERM exits 0" test $? = 0
    lim_pid=
else
    not_ok "limited webhookd started: $(tail -3 "$work/lim.log")"
fi

# ---- Register the webhooks with the API server ------------------------------------------
kubectl apply -f "$TOP/crds/" >/dev/null
check "CRD established" kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com
kubectl wait --for=delete "namespace/$ns" --timeout=90s >/dev/null 2>&1 # left by an earlier run
kubectl create namespace "$ns" >/dev/null
ca_b64=$(base64 -w0 <"$work/certs/ca.crt")
# webhook_config KIND NAME WEBHOOK PATH RESOURCES CABUNDLE: one webhook configuration
# (KIND Mutating- or ValidatingWebhookConfiguration) calling $base PATH for CREATE and
# UPDATE of RESOURCES (a YAML list body) in $ns only.
webhook_config() {
    cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: $1
metadata: {name: $2}
webhooks:
- name: $3
  admissionReviewVersions: [v1]
  clientConfig: {url: "$base$4", caBundle: "$6"}
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
  rules:
  - {apiGroups: [cache.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [$5], scope: Namespaced}
YAML
}
register() { # the webhook configurations with caBundle $1
    {
        webhook_config MutatingWebhookConfiguration "$mwc" mrediscluster.e2e.cache.example.com "$MPATH" redisclusters "$1"
        echo ---
        webhook_config ValidatingWebhookConfiguration "$vwc" vrediscluster.e2e.cache.example.com "$VPATH" "redisclusters, redisclusters/scale" "$1"
    } | kubectl apply -f - >/dev/null
}
register "$ca_b64"
# The API server picks configurations up through an informer: wait until ours answers.
# (The output is captured first: with pipefail, kubectl's own failure would be the result.)
webhook_active() {
    local out
    out=$(rc probe '{"size":1,"image":"redis","storage":{"storageClass":"Not_A_Class"}}' |
        kubectl create --dry-run=server -f - 2>&1)
    grep -q 'denied the request' <<<"$out"
}
check "webhooks registered and called by the API server" wait_until 30 webhook_active

# ---- Validation on create -----------------------------------------------------------------
refused "bad storageClass refused, field and rule named" \
    'admission webhook "vrediscluster.e2e.cache.example.com" denied the request: RedisCluster.cache.example.com "bad-class" is invalid: spec.storage.storageClass: Invalid value: "Fast_SSD": must be the name of a StorageClass' \
    create bad-class '{"size":1,"image":"redis","storage":{"storageClass":"Fast_SSD"}}'
refused "bad version refused" 'spec.version: Invalid value: "7 2": must be an image tag' \
    create bad-version '{"size":1,"image":"redis","version":"7 2"}'
refused "image with a blank refused" 'spec.image: Invalid value: "re dis": must be an image reference' \
    create bad-image '{"size":1,"image":"re dis"}'
refused "zero storage refused" 'spec.storage.size: Invalid value: "0Gi": must be greater than zero' \
    create bad-storage '{"size":1,"image":"redis","storage":{"size":"0Gi"}}'
refused "name that cannot name a Service refused" 'metadata.name: Invalid value: "bad.name": must be a DNS-1035 label of at most 52 characters' \
    create bad.name '{"size":1,"image":"redis"}'
long=r23456789012345678901234567890123456789012345678901234
refused "53-character name refused" "metadata.name: Invalid value: \"$long\"" create "$long" '{"size":1,"image":"redis"}'
refused "every problem listed at once" 'is invalid: [spec.version: Invalid value: "a b": must be an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}), spec.storage.storageClass: Invalid value' \
    create bad-many '{"size":1,"image":"redis","version":"a b","storage":{"storageClass":"A"}}'
refused "size 11 refused (schema or webhook)" 'spec.size' create bad-size '{"size":11,"image":"redis"}'
check "nothing invalid was stored" sh -c "test -z \"\$(kubectl -n $ns get rdc -o name 2>/dev/null)\""

# ---- Defaults -----------------------------------------------------------------------------
sed -e "s/namespace: default/namespace: $ns/" "$TOP/deploy/samples/rediscluster-minimal.yaml" >"$work/minimal.yaml"
dry=$(kubectl create --dry-run=server -o json -f "$work/minimal.yaml" 2>&1)
check "server-side dry run gets the defaults (dryRun passes through)" \
    sh -c "printf '%s' '$dry' | jq -e '.spec.version == \"7.2\" and .spec.storage.size == \"1Gi\" and .spec.config.maxmemoryPolicy == \"allkeys-lru\"' >/dev/null"
check "minimal sample created" kubectl create -f "$work/minimal.yaml"
check "default version 7.2" test "$(field cache-minimal .spec.version)" = 7.2
check "default storage.size 1Gi" test "$(field cache-minimal .spec.storage.size)" = 1Gi
check "default config.maxmemoryPolicy allkeys-lru" test "$(field cache-minimal .spec.config.maxmemoryPolicy)" = allkeys-lru
check "tagged image gets no default version" sh -c "$(declare -f rc create); ns=$ns; create tagged '{\"size\":1,\"image\":\"redis:7.0\"}' >/dev/null"
check "  ... version left unset" test -z "$(field tagged .spec.version)"
check "  ... storage still defaulted" test "$(field tagged .spec.storage.size)" = 1Gi
check "set values are kept" sh -c "$(declare -f rc create); ns=$ns; create kept '{\"size\":2,\"image\":\"redis\",\"version\":\"7.0\",\"config\":{\"maxmemoryPolicy\":\"noeviction\"},\"storage\":{\"size\":\"2Gi\",\"storageClass\":\"standard\"}}' >/dev/null"
check "  ... as given" test "$(field kept '.spec.version}/{.spec.config.maxmemoryPolicy}/{.spec.storage.size')" = "7.0/noeviction/2Gi"
sed -e "s/namespace: default/namespace: $ns/" "$TOP/deploy/samples/rediscluster-production.yaml" >"$work/production.yaml"
check "production sample created" kubectl create -f "$work/production.yaml"
sed -e "s/namespace: default/namespace: $ns/" "$TOP/deploy/samples/rediscluster.yaml" >"$work/sample.yaml"
check "design sample created" kubectl create -f "$work/sample.yaml"

# ---- Updates --------------------------------------------------------------------------------
# scale-in is allowed unless spec.scaleDownPolicy is Forbid (issue 34; docs/knobs.md "Scale-in")
check "scaleDownPolicy Forbid set" kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"scaleDownPolicy":"Forbid"}}'
refused "size decrease refused (scaleDownPolicy Forbid)" 'spec.size: Forbidden: may not decrease' \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"size":1}}'
refused "scale down through /scale refused (scaleDownPolicy Forbid)" 'may not decrease' kubectl -n "$ns" scale rdc kept --replicas=1
check "scaleDownPolicy Allow: size decrease admitted" kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"scaleDownPolicy":"Allow","size":1}}'
check "  ... size is 1" test "$(field kept .spec.size)" = 1
check "size increase allowed" kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"size":3}}'
check "scale up through /scale allowed" kubectl -n "$ns" scale rdc kept --replicas=4
check "  ... size is 4" test "$(field kept .spec.size)" = 4
check "the same size spelled differently is no change" \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"storage":{"size":"2048Mi"}}}'
refused "storage.size shrink refused" 'spec.storage.size: Forbidden: may not shrink' \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"storage":{"size":"1Gi"}}}'

# ---- Growing storage.size: the StorageClass must allow volume expansion --------------------
# tests/cluster/cluster.sh: "standard" (the default, allowVolumeExpansion: true) and "fixed"
# (allowVolumeExpansion: false). webhookd reads the class (GET, or LIST for the default).
check "storage.size growth on class standard (expandable) admitted" \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"storage":{"size":"5Gi"}}}'
check "  ... size is 5Gi" test "$(field kept .spec.storage.size)" = 5Gi
check "a RedisCluster on class fixed created" \
    sh -c "$(declare -f rc create); ns=$ns; create on-fixed '{\"size\":1,\"image\":\"redis\",\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"fixed\"}}' >/dev/null"
refused "storage.size growth on class fixed refused, class and allowVolumeExpansion named" \
    'admission webhook "vrediscluster.e2e.cache.example.com" denied the request: RedisCluster.cache.example.com "on-fixed" is forbidden: spec.storage.size: Forbidden: cannot grow from "1Gi" to "2Gi": StorageClass "fixed" does not allow volume expansion (allowVolumeExpansion is not true)' \
    kubectl -n "$ns" patch rdc on-fixed --type merge -p '{"spec":{"storage":{"size":"2Gi"}}}'
check "  ... size still 1Gi" test "$(field on-fixed .spec.storage.size)" = 1Gi
check "  ... other changes to it still admitted" kubectl -n "$ns" patch rdc on-fixed --type merge -p '{"spec":{"size":2}}'
check "a RedisCluster on the default class (storageClass unset) created" \
    sh -c "$(declare -f rc create); ns=$ns; create on-default '{\"size\":1,\"image\":\"redis\"}' >/dev/null"
check "storage.size growth on the default class (standard, expandable) admitted" \
    kubectl -n "$ns" patch rdc on-default --type merge -p '{"spec":{"storage":{"size":"2Gi"}}}'
check "  ... size is 2Gi" test "$(field on-default .spec.storage.size)" = 2Gi
check "webhookd read the classes through the API server" wait_until 5 \
    grep -q 'rest_client_requests_total{code="200",method="GET"' "$work/rt/metrics/webhookd.prom"
refused "storageClass change refused" 'spec.storage.storageClass: Forbidden: is immutable' \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"storage":{"storageClass":"fast"}}}'
# The CRD's own CEL rule refuses it now, before the webhook is asked (the fail-closed layer
# under a webhook whose failurePolicy is Ignore); the webhook refuses it too (test_admission).
refused "storageClass set where it was unset refused (CRD rule)" \
    'spec.storage.storageClass: Forbidden: is immutable, also from unset to set' \
    kubectl -n "$ns" patch rdc cache-minimal --type merge -p '{"spec":{"storage":{"storageClass":"fast"}}}'
refused "invalid change on update refused" 'spec.config.maxmemory: Invalid value: "lots"' \
    kubectl -n "$ns" patch rdc kept --type merge -p '{"spec":{"config":{"maxmemory":"lots"}}}'
check "metadata-only update allowed" kubectl -n "$ns" label rdc kept team=cache
check "a finalizer can be added and removed" sh -c "kubectl -n $ns patch rdc kept --type merge -p '{\"metadata\":{\"finalizers\":[\"cache.example.com/finalizer\"]}}' >/dev/null && kubectl -n $ns patch rdc kept --type merge -p '{\"metadata\":{\"finalizers\":null}}' >/dev/null"

# ---- Metrics and logs ----------------------------------------------------------------------
prom=$work/rt/metrics/webhookd.prom
metric() { awk -v k="$1" 'index($0, k) == 1 { print $NF }' "$prom" 2>/dev/null; }
served() { [ "$(metric "controller_runtime_webhook_requests_total{webhook=\"$VPATH\",code=\"200\"}" | cut -d. -f1)" -gt 5 ]; }
check "metrics file: validating requests counted" wait_until 5 served
check "metrics file: mutating requests counted" \
    test "$(metric "controller_runtime_webhook_requests_total{webhook=\"$MPATH\",code=\"200\"}" | cut -d. -f1)" -gt 3
check "metrics file: latency histogram" grep -q "controller_runtime_webhook_latency_seconds_count{webhook=\"$VPATH\"}" "$prom"
check "metrics file: nothing in flight" test "$(metric "controller_runtime_webhook_requests_in_flight{webhook=\"$VPATH\"}")" = 0
check "denials logged with the API server's uid" grep -q '"msg":"denied".*"uid":"[0-9a-f-]\{36\}"' "$work/webhookd.log"

# ---- Certificate rotation without a restart --------------------------------------------------
serial() { openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null | openssl x509 -noout -serial 2>/dev/null; }
before=$(serial)
"$TOP/deploy/gen-certs.sh" --certs-only --ip 127.0.0.1 --days 1 -o "$work/certs2" 2>/dev/null
mv "$work/certs2/tls.key" "$work/certs/tls.key.new" && mv "$work/certs2/tls.crt" "$work/certs/tls.crt.new"
mv "$work/certs/tls.crt.new" "$work/certs/tls.crt" && mv "$work/certs/tls.key.new" "$work/certs/tls.key"
rotated() { s=$(serial); [ -n "$s" ] && [ "$s" != "$before" ]; }
check "rotated certificate served without a restart" wait_until 10 rotated
check "  ... logged" grep -q '"msg":"serving certificate reloaded"' "$work/webhookd.log"
register "$(base64 -w0 <"$work/certs2/ca.crt")"
new_ca_works() {
    local out
    out=$(rc probe2 '{"size":1,"image":"redis","version":"x y"}' | kubectl create --dry-run=server -f - 2>&1)
    grep -q 'spec.version: Invalid value' <<<"$out"
}
check "API server reaches the webhook again with the new CA" wait_until 30 new_ca_works

# ---- The deploy/ manifests against the API server --------------------------------------------
if ! kubectl get namespace "$op_ns" >/dev/null 2>&1; then
    # A server-side dry run cannot create namespaced objects in a namespace that is itself
    # only dry-run created, so the namespace has to exist.
    kubectl create namespace "$op_ns" --save-config >/dev/null && created_op_ns=1
fi
check "kubectl apply --dry-run=server -k deploy/" sh -c "kubectl apply --dry-run=server -k '$TOP/deploy/' >'$work/dryrun.log' 2>&1"
check "  ... with no warnings" sh -c "! grep -v 'last-applied-configuration' '$work/dryrun.log' | grep -qi 'warning'"
grep -v 'server dry run' "$work/dryrun.log" | head -20
"$TOP/deploy/gen-certs.sh" -o "$work/overlay" >/dev/null 2>&1
check "gen-certs.sh overlay (Secret, caBundle) passes a server-side dry run" \
    sh -c "kubectl apply --dry-run=server -k '$work/overlay' >'$work/dryrun2.log' 2>&1"
check "  ... sets the caBundle of both webhooks and of the CRD's conversion webhook" test "$(kubectl kustomize "$work/overlay" | grep -c 'caBundle: ')" = 3
check "  ... the CRD's conversion caBundle is the CA" sh -c "kubectl kustomize '$work/overlay' | grep -A12 '^  conversion:' | grep -q \"caBundle: \$(base64 -w0 <'$work/overlay/ca.crt')\""
check "cert-manager overlay builds with the cainjector annotation (both webhooks and the CRD)" \
    test "$(kubectl kustomize "$TOP/deploy/overlays/cert-manager" | grep -c 'cert-manager.io/inject-ca-from: rediscluster-operator-system/rediscluster-operator-serving-cert')" = 3
metrics_cert_mounted() { # the metrics Certificate, its Secret mounted, metricsd pointed at it
    local all
    all=$(kubectl kustomize "$TOP/deploy/overlays/cert-manager") || return 1
    grep -q 'name: rediscluster-operator-metrics-cert' <<<"$all" &&
        grep -q -- '--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs' <<<"$all" &&
        grep -q 'mountPath: /tmp/k8s-metrics-server/metrics-certs' <<<"$all" &&
        grep -q 'secretName: rediscluster-operator-metrics-cert' <<<"$all" &&
        grep -q 'rediscluster-operator-metrics.rediscluster-operator-system.svc' <<<"$all"
}
check "cert-manager overlay issues the metrics certificate and mounts it for --metrics-cert-path" metrics_cert_mounted
no_wildcard_rbac() { # no "*" among the verbs, resources or apiGroups of any rule
    local all
    all=$(kubectl kustomize "$TOP/deploy/") || return 1
    ! grep -qE "(\"\\*\"|'\\*'|^[[:space:]]*-[[:space:]]+\\*[[:space:]]*$)" <<<"$all"
}
check "no '*' in the operator's RBAC" no_wildcard_rbac

# ---- Shutdown -------------------------------------------------------------------------------
kubectl delete validatingwebhookconfiguration "$vwc" --wait=false >/dev/null 2>&1
kubectl delete mutatingwebhookconfiguration "$mwc" --wait=false >/dev/null 2>&1
kill -TERM "$wh_pid"
wait "$wh_pid"
rc=$?
check "SIGTERM: webhookd exits 0" test "$rc" = 0
check "  ... after saying so" grep -q '"msg":"stopped"' "$work/webhookd.log"
wh_pid=

summary
