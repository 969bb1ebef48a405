#!/usr/bin/env bash
# End to end: deploy/overlays/cert-manager against a control plane that serves
# cert-manager's CRDs (issue 37: the overlay was only ever built, never applied).
#
# The CRDs are cert-manager's own (the pinned release's deploy/crds, fetched by
# tests/cluster/certmanager-crds.sh); no cert-manager controller runs here, so the test
# does what it would: it provides the two Secrets the overlay's Certificates name (signed
# by a CA of its own, the Certificates' DNS names), and injects the CA into the CRD's
# conversion webhook as cainjector does from the annotation. Then:
#   1. the overlay applies: the API server validates its Issuer and Certificates against
#      cert-manager's schemas (a misspelt field would be refused here, not in a user's
#      cluster);
#   2. each cert-manager.io/inject-ca-from annotation names a Certificate that exists,
#      whose secretName is a Secret the Deployment mounts;
#   3. the operator's pod (on a process node, as in test_runtime.sh) becomes Ready with
#      both Secrets mounted; webhookd serves the webhook Certificate's key pair on 9443 and
#      metricsd the metrics Certificate's on 8443 (--metrics-cert-path), each verified
#      by the CA with the Service's DNS name, as the API server and Prometheus verify them;
#   4. a renewal (the Secret's key pair replaced, as cert-manager's rotationPolicy Always
#      does) is served without a restart of the pod.
# Like test_runtime.sh: one replica, and no webhook configurations (the API server reaches
# webhooks through Service IPs, which do not route here); the CRD is restored from crds/
# at the end and the cert-manager CRDs removed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cluster=$TOP/tests/cluster/cluster.sh
OPNS=rediscluster-operator-system
work=$(mktemp -d /tmp/rdc-e2e-certmanager.XXXXXX)
cm_crds=
cleanup() {
    kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=rediscluster-operator --wait=false >/dev/null 2>&1
    kubectl delete namespace "$OPNS" --ignore-not-found --wait=false >/dev/null 2>&1
    kubectl apply -f "$TOP/crds/" >/dev/null 2>&1
    [ -n "$cm_crds" ] && kubectl delete -f "$cm_crds" --ignore-not-found --wait=false >/dev/null 2>&1
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

if ! has_process_nodes; then
    echo "# SKIP: the cluster in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} has no process nodes (the operator runs as a pod on one)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
check "the daemons are built (make)" test -x "$TOP/build/bin/supervisor"
# An earlier script's installation may still be going away (a namespace Terminating).
ns_absent() { ! kubectl get namespace "$OPNS" >/dev/null 2>&1; }
check "no other installation in $OPNS" wait_until 120 ns_absent

# ---- cert-manager's CRDs ----------------------------------------------------------------------
cm_crds=$("$TOP/tests/cluster/certmanager-crds.sh" 2>"$work/crds.err" | tail -1)
check "cert-manager's CRDs fetched ($(. "$TOP/tests/cluster/certmanager.env"; echo "$CERT_MANAGER_VERSION"))" test -s "$cm_crds/cert-manager.io_certificates.yaml"
[ -s "$cm_crds/cert-manager.io_certificates.yaml" ] || { cat "$work/crds.err"; cm_crds=; summary; exit 1; }
check "cert-manager's CRDs applied" kubectl apply --server-side -f "$cm_crds"
check "  ... and Established" kubectl wait --for=condition=Established --timeout=60s \
    crd/certificates.cert-manager.io crd/issuers.cert-manager.io

# ---- the key pairs cert-manager would issue -----------------------------------------------------------
# issue NAME DNS...: NAME.crt and NAME.key (ECDSA P-256, as the Certificates ask), signed by ca
issue() {
    local name=$1 san="" d; shift
    for d in "$@"; do san="$san${san:+,}DNS:$d"; done
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
        -keyout "$work/$name.key" -out "$work/$name.csr" 2>/dev/null &&
        openssl x509 -req -in "$work/$name.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
            -days 30 -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san") \
            -out "$work/$name.crt" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=rdc-e2e-cert-manager-ca" \
    -days 30 -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
WH_DNS=rediscluster-operator-webhook.$OPNS.svc
MET_DNS=rediscluster-operator-metrics.$OPNS.svc
check "a CA and the two key pairs made" bash -c "$(declare -f issue); work=$work; issue webhook $WH_DNS $WH_DNS.cluster.local && issue metrics $MET_DNS $MET_DNS.cluster.local"
# secret NAME CERT: the Secret cert-manager writes for a Certificate (kubernetes.io/tls + ca.crt)
secret() {
    kubectl -n "$OPNS" create secret tls "$1" --cert "$work/$2.crt" --key "$work/$2.key" \
        --dry-run=client -o json | jq --arg ca "$(base64 -w0 <"$work/ca.crt")" '.data["ca.crt"] = $ca' |
        kubectl apply -f - >/dev/null
}

# ---- the overlay -------------------------------------------------------------------------------------
mkdir -p "$work/op"
rel=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$TOP/deploy/overlays/cert-manager" "$work/op")
cat >"$work/op/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $rel
patches:
- target: {kind: Deployment, name: rediscluster-operator}
  patch: |
    - {op: replace, path: /spec/replicas, value: 1}
# Both webhook configurations deleted: a target's kind is a regular expression, and a
# patch with a target is applied to each object it selects, whatever kind and name it says.
- target: {kind: (Validating|Mutating)WebhookConfiguration}
  patch: |
    \$patch: delete
    apiVersion: admissionregistration.k8s.io/v1
    kind: WebhookConfiguration
    metadata: {name: any}
EOF
check "the overlay builds" sh -c "kubectl kustomize '$work/op' >'$work/all.yaml' && kubectl kustomize '$TOP/deploy/overlays/cert-manager' >'$work/overlay.yaml'"
kubectl create namespace "$OPNS" >/dev/null 2>&1
"$cluster" pin-namespace "$OPNS" >/dev/null 2>&1
check "the Secrets the Certificates name, provided (as cert-manager would write them)" \
    bash -c "$(declare -f secret); work=$work OPNS=$OPNS; secret rediscluster-operator-webhook-cert webhook && secret rediscluster-operator-metrics-cert metrics"
if kubectl apply -k "$work/op" >"$work/apply.log" 2>&1; then ok "kubectl apply -k: the Issuer and both Certificates accepted by cert-manager's schemas"
else not_ok "kubectl apply -k: the Issuer and both Certificates accepted by cert-manager's schemas"; sed 's/^/#   /' "$work/apply.log" | tail -10; fi
check "  ... the Issuer and two Certificates are stored" test "$(kubectl -n "$OPNS" get issuers.cert-manager.io,certificates.cert-manager.io -o name | wc -l)" = 3
# A field cert-manager's schema does not know is refused: the check above means something.
bad() {
    kubectl apply --dry-run=server -f - 2>&1 <<EOF
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: bad, namespace: $OPNS}
spec: {secretName: x, dnsName: [a], issuerRef: {name: i}}
EOF
}
check "  (a control: a Certificate with a misspelt field, dnsName, is refused)" sh -c "$(declare -f bad); OPNS=$OPNS; bad | grep -q 'unknown field \"spec.dnsName\"'"

# ---- cainjector's part: every inject-ca-from of the overlay (the webhook configurations' too, which
# this test leaves out) names a Certificate whose Secret the pod mounts ----------------------------------
injected_ok() {
    local refs ref secret
    refs=$(python3 - "$work/overlay.yaml" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    a = ((d or {}).get("metadata") or {}).get("annotations") or {}
    if "cert-manager.io/inject-ca-from" in a:
        print(d["kind"], a["cert-manager.io/inject-ca-from"])
PY
)
    [ "$(wc -l <<<"$refs")" = 3 ] || return 1
    while read -r _ ref; do
        secret=$(kubectl -n "${ref%%/*}" get certificates.cert-manager.io "${ref#*/}" -o jsonpath='{.spec.secretName}') || return 1
        [ -n "$secret" ] && grep -q "secretName: $secret" "$work/all.yaml" || return 1
    done <<<"$refs"
}
check "each inject-ca-from (CRD and both webhooks) names a stored Certificate whose Secret the Deployment mounts" injected_ok
ref=$(kubectl get crd redisclusters.cache.example.com -o jsonpath='{.metadata.annotations.cert-manager\.io/inject-ca-from}')
sname=$(kubectl -n "${ref%%/*}" get certificates.cert-manager.io "${ref#*/}" -o jsonpath='{.spec.secretName}' 2>/dev/null)
ca=$(kubectl -n "$OPNS" get secret "$sname" -o jsonpath='{.data.ca\.crt}' 2>/dev/null)
check "the CRD's conversion caBundle injected from that Secret's ca.crt (cainjector's work)" \
    kubectl patch crd redisclusters.cache.example.com --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/spec/conversion/webhook/clientConfig/caBundle\",\"value\":\"$ca\"}]"

# ---- the operator's pod serves the provided certificates ------------------------------------------------
op_ready() { [ "$(kubectl get deploy -n "$OPNS" rediscluster-operator -o jsonpath='{.status.readyReplicas}')" = 1 ]; }
check "the operator's pod becomes Ready with both Secrets mounted" wait_until 120 op_ready
opod=$(kubectl get pods -n "$OPNS" -l app.kubernetes.io/name=rediscluster-operator -o jsonpath='{.items[0].metadata.name}')
opip=$(kubectl get pod -n "$OPNS" "$opod" -o jsonpath='{.status.podIP}')
# served PORT DNS: the leaf certificate served on opip:PORT (PEM), verified by the CA for DNS
served() {
    openssl s_client -connect "$opip:$1" -servername "$2" -CAfile "$work/ca.crt" -verify_hostname "$2" \
        -verify_return_error </dev/null 2>/dev/null | openssl x509 2>/dev/null
}
same_cert() { [ "$(served "$1" "$2" | openssl x509 -noout -fingerprint -sha256 2>/dev/null)" = "$(openssl x509 -in "$3" -noout -fingerprint -sha256)" ]; }
check "webhookd (9443) serves the webhook Certificate's key pair, verified by the CA as $WH_DNS" wait_until 30 same_cert 9443 "$WH_DNS" "$work/webhook.crt"
check "metricsd (8443) serves the metrics Certificate's key pair (--metrics-cert-path), verified as $MET_DNS" wait_until 30 same_cert 8443 "$MET_DNS" "$work/metrics.crt"
check "  (a control: the webhook's certificate does not verify for the metrics name)" bash -c "! openssl s_client -connect $opip:9443 -CAfile $work/ca.crt -verify_hostname $MET_DNS -verify_return_error </dev/null >/dev/null 2>&1"

# ---- a renewal: new key pairs in the Secrets, served without a restart ---------------------------------------
restarts0=$(kubectl get pod -n "$OPNS" "$opod" -o jsonpath='{.status.containerStatuses[0].restartCount}')
mkdir -p "$work/old"; cp "$work"/webhook.* "$work"/metrics.* "$work/old/"
bash -c "$(declare -f issue); work=$work; issue webhook $WH_DNS $WH_DNS.cluster.local && issue metrics $MET_DNS $MET_DNS.cluster.local"
check "the renewed key pairs differ from the first" bash -c "! cmp -s $work/webhook.crt $work/old/webhook.crt && ! cmp -s $work/metrics.crt $work/old/metrics.crt"
secret rediscluster-operator-webhook-cert webhook
secret rediscluster-operator-metrics-cert metrics
check "after the renewal webhookd serves the new webhook certificate" wait_until 120 same_cert 9443 "$WH_DNS" "$work/webhook.crt"
check "  ... and metricsd the new metrics certificate" wait_until 120 same_cert 8443 "$MET_DNS" "$work/metrics.crt"
check "  ... with no restart of the pod" test "$(kubectl get pod -n "$OPNS" "$opod" -o jsonpath='{.status.containerStatuses[0].restartCount}')" = "$restarts0"

# ---- uninstall ---------------------------------------------------------------------------------------------
kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=rediscluster-operator --wait=false >/dev/null 2>&1
kubectl delete namespace "$OPNS" --wait=false >/dev/null 2>&1
check "uninstalled (its namespace is gone)" wait_until 120 ns_absent
summary
