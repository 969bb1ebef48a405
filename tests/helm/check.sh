#!/usr/bin/env bash
# The Helm chart's checks (make unit runs them; make helm-check alone), no cluster needed:
#  1. charts/rdc-operator/ is what scripts/helm_chart.py generates from deploy/ now (a
#     change to deploy/ without `make helm-chart` fails here), and the other generated
#     manifests are current (make manifests-check: the CRD's copy in deploy/base/crd/,
#     bundle/);
#  2. a control: a copy of deploy/ with one flag changed fails check 1;
#  3. helm lint --strict is clean, with the default values and with cert-manager and
#     monitoring on;
#  4. helm template with the default values renders deploy/'s objects (modulo the
#     chart's labels and its certificate: scripts/helm_chart.py --compare), and a control:
#     a chart whose Deployment differs fails that comparison;
#  5. values.schema.json refuses bad values (workers 0, an unknown key, a bad pull policy).
# Helm is the pinned one (tests/cluster/build-helm.sh: built once into the control
# plane's cache, ~4 min cold). The server-side validation of the rendered objects
# (kubectl apply --dry-run=server) needs the control plane: tests/e2e/test_helm.sh.
#
#   tests/helm/check.sh          prints "helm: N passed, M failed"
set -uo pipefail
cd "$(dirname "$0")/../.."
chart=charts/rdc-operator
NAME=helm
. tests/lib_checks.sh

check "charts/rdc-operator/ is what make helm-chart generates from deploy/" python3 scripts/helm_chart.py --check
check "the CRDs' copies in deploy/base/crd/ are crds/'s (make manifests)" \
    sh -c 'for f in crds/*.yaml; do cmp "$f" "deploy/base/crd/${f#crds/}" || exit 1; done'
check "bundle/ is what make bundle generates from deploy/ and crds/" python3 scripts/bundle.py --check

# Control 1: deploy/ changed, the chart not regenerated.
control_changed_deploy "make helm-chart" 's/^        - --health-probe-bind-address=:8081$/        - --health-probe-bind-address=:8082/' \
    python3 scripts/helm_chart.py --check

helm=$(tests/cluster/build-helm.sh 2>"$tmp/build.log" | tail -1)
if [ ! -x "$helm" ]; then
    sed 's/^/#   /' "$tmp/build.log" | tail -20; not_ok "the pinned helm builds (tests/cluster/build-helm.sh)"; finish
fi
echo "# $("$helm" version --short) ($helm)"
on=(--set certManager.enabled=true --set serviceMonitor.enabled=true --set prometheusRule.enabled=true)
check "helm lint --strict: default values" "$helm" lint --strict "$chart"
check "helm lint --strict: cert-manager, ServiceMonitor and PrometheusRule on" "$helm" lint --strict "$chart" "${on[@]}"
render() { "$helm" template rediscluster-operator "$chart" --namespace rediscluster-operator-system "$@"; }
check "helm template: default values" eval 'render >"$tmp/default.yaml"'
check "helm template: cert-manager, monitoring, watched namespaces, QPS, placement" eval \
    'render "${on[@]}" --set "watchNamespaces={a,b}" --set kubeApi.qps=50 --set kubeApi.burst=100 \
     --set nodeSelector.disk=ssd --set-json "tolerations=[{\"key\":\"k\",\"operator\":\"Exists\"}]" >"$tmp/all.yaml"'
check "... which has the Issuer, both Certificates, the ServiceMonitor, the PrometheusRule and no generated Secret" eval \
    '[ "$(grep -cE "^kind: (Issuer|Certificate|ServiceMonitor|PrometheusRule)$" "$tmp/all.yaml")" = 5 ] && ! grep -q "^kind: Secret$" "$tmp/all.yaml"'
check "... and the flags --namespace=a --namespace=b --kube-api-qps=50 --kube-api-burst=100 --metrics-cert-path" eval \
    'grep -q -- "- --namespace=a$" "$tmp/all.yaml" && grep -q -- "- --namespace=b$" "$tmp/all.yaml" &&
     grep -q -- "- --kube-api-qps=50$" "$tmp/all.yaml" && grep -q -- "- --kube-api-burst=100$" "$tmp/all.yaml" &&
     grep -q -- "- --metrics-cert-path=" "$tmp/all.yaml"'
check "helm template (default values) renders deploy/'s objects, modulo the chart's labels and certificate" \
    python3 scripts/helm_chart.py --compare "$tmp/default.yaml"
# The one CA: the Secret's ca.crt is the caBundle of both webhook configurations and of the
# RedisCluster CRD (RedisBackup's has no conversion webhook).
same_ca() {
    python3 - "$tmp/default.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ca = [d for d in docs if d["kind"] == "Secret"][0]["data"]["ca.crt"]
bundles = [w["clientConfig"]["caBundle"] for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
bundles += [d["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] for d in docs if d["kind"] == "CustomResourceDefinition" and "conversion" in d["spec"]]
print("%d caBundles" % len(bundles))
sys.exit(0 if len(bundles) == 3 and all(b == ca for b in bundles) else 1)
PY
}
check "the generated certificate's CA is the caBundle of the two webhook configurations and the CRD" same_ca
# The Secret's certificate through files, not pipes: openssl x509 reads one PEM block and
# exits, and under pipefail the writer's broken pipe failed the check now and then.
cert_names_service() {
    python3 - "$tmp/default.yaml" "$tmp/tls.crt" <<'PY' &&
import base64, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
open(sys.argv[2], "wb").write(base64.b64decode([d for d in docs if d["kind"] == "Secret"][0]["data"]["tls.crt"]))
PY
        openssl x509 -in "$tmp/tls.crt" -noout -ext subjectAltName >"$tmp/san.txt" &&
        grep -q "DNS:rediscluster-operator-webhook.rediscluster-operator-system.svc," "$tmp/san.txt"
}
check "the certificate names the webhook Service (rediscluster-operator-webhook.rediscluster-operator-system.svc)" \
    cert_names_service
# Control 2: a chart whose Deployment differs from deploy/'s fails the comparison.
cp -r "$chart" "$tmp/chart"
sed -i 's/^        - --health-probe-bind-address=:8081$/        - --health-probe-bind-address=:8082/' "$tmp/chart/templates/deployment.yaml"
"$helm" template rediscluster-operator "$tmp/chart" --namespace rediscluster-operator-system >"$tmp/c2.yaml" 2>&1
if python3 scripts/helm_chart.py --compare "$tmp/c2.yaml" >"$tmp/c2.log" 2>&1; then
    not_ok "control: a chart whose Deployment differs from deploy/'s fails the comparison"
else
    ok "control: a chart whose Deployment differs from deploy/'s fails the comparison ($(grep -c 'differs:$' "$tmp/c2.log") object differs)"
fi
check "values.schema.json refuses workers: 0" fails "$helm" template x "$chart" --set workers=0
check "values.schema.json refuses an unknown value (wrokers: 3)" fails "$helm" template x "$chart" --set wrokers=3
check "values.schema.json refuses image.pullPolicy: Sometimes" fails "$helm" template x "$chart" --set image.pullPolicy=Sometimes
finish
