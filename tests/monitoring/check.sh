#!/usr/bin/env bash
# The monitoring overlay's checks (make unit runs this; make monitoring-check alone):
#  - deploy/overlays/monitoring builds with kubectl's kustomize and holds the PrometheusRule;
#  - its rules pass `promtool check rules` and the unit tests of rules_test.yaml
#    (`promtool test rules`: each alert fires on its series, near misses do not);
#  - every metric the rules and the Grafana dashboard query is one the operator exports
#    (its name appears in the C sources) or one kube-state-metrics / Prometheus makes;
#  - the ServiceMonitor selects the metrics Service and scrapes it as the manager serves
#    (servicemonitor.py), and the check refuses deliberate mistakes.
# Prints "monitoring: N passed, M failed" like the other runners.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=deploy/overlays/monitoring
tmp=$(mktemp -d /tmp/rdc-monitoring.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
check() { local d=$1; shift; if "$@" >"$tmp/out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/#   /' "$tmp/out"; fi; }

command -v promtool >/dev/null || { not_ok "promtool is installed (Debian package prometheus; make deps)"; echo "monitoring: $passed passed, $failed failed"; exit 1; }
check "the overlay builds (kubectl kustomize $dir)" kubectl kustomize "$dir" -o "$tmp/built.yaml"
check "it holds the PrometheusRule, the dashboard ConfigMap and the kube-state-metrics config" \
    python3 - "$tmp/built.yaml" <<'PY'
import sys, yaml
kinds = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(open(sys.argv[1])) if d}
want = {("PrometheusRule", "rediscluster-operator-alerts"),
        ("ConfigMap", "rediscluster-operator-dashboard"),
        ("ConfigMap", "rediscluster-operator-kube-state-metrics")}
missing = want - kinds
sys.exit("missing: %s" % sorted(missing) if missing else 0)
PY
python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
yaml.safe_dump(d["spec"], open(sys.argv[2], "w"), sort_keys=False)' "$dir/prometheusrule.yaml" "$tmp/rules.yaml"
n=$(grep -c '^ *- alert:' "$tmp/rules.yaml")
check "the PrometheusRule has the 10 alerts (found $n)" test "$n" -eq 10
check "promtool check rules" promtool check rules "$tmp/rules.yaml"
cp tests/monitoring/rules_test.yaml "$tmp/"
check "promtool test rules (tests/monitoring/rules_test.yaml)" promtool test rules "$tmp/rules_test.yaml"
# Every alert has a test that expects it to fire.
missing=$(for a in $(sed -n 's/^ *- alert: //p' "$tmp/rules.yaml"); do
    grep -q "alertname: $a\$" tests/monitoring/rules_test.yaml && grep -A3 "alertname: $a\$" tests/monitoring/rules_test.yaml | grep -q exp_labels || echo "$a"; done)
check "every alert has a test where it fires (missing: ${missing:-none})" test -z "$missing"
# The ServiceMonitor against the metrics Service and the manager it fronts (servicemonitor.py
# says what), and the checker itself against deliberate mistakes.
check "the ServiceMonitor scrapes the metrics Service's https port as the operator serves it (port, scheme, token, TLS)" \
    python3 tests/monitoring/servicemonitor.py "$tmp/built.yaml"
for bad in 's/^\(    \)port: https$/\1port: metrics/' 's/scheme: https/scheme: http/' \
    's/--metrics-bind-address=:8443/--metrics-bind-address=:9999/' '/bearerTokenFile:/d' '/insecureSkipVerify: true/d'; do
    sed "$bad" "$tmp/built.yaml" >"$tmp/bad.yaml"
    check "  ... and refuses the overlay edited with sed '$bad'" \
        sh -c "! cmp -s '$tmp/built.yaml' '$tmp/bad.yaml' && ! python3 tests/monitoring/servicemonitor.py '$tmp/bad.yaml'"
done
check "the dashboard is valid JSON with panels" jq -e '.panels | length > 5' "$dir/grafana-dashboard.json"
# The metric names queried, against what exists.
{ python3 -c '
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]: print(r["expr"])' "$tmp/rules.yaml"
  jq -r '.. | .expr? // empty' "$dir/grafana-dashboard.json"; } |
    grep -oE '\b[a-z_]+(_total|_seconds|_bytes|_status|_depth|_up|_role|_condition|_objects|_running|_synced|_bucket|_count|_sum|_clients)\b|\bup\b' |
    sed -E 's/_(bucket|count|sum)$//' | sort -u >"$tmp/used"
check "the rules and the dashboard query metrics ($(wc -l <"$tmp/used") names)" test -s "$tmp/used"
unknown=$(while read -r m; do
    case $m in up|rdc_rediscluster_status_condition) continue ;; esac
    grep -rqF "\"$m\"" common supervisor informerd workerd electord webhookd observerd metricsd || echo "$m"
done <"$tmp/used")
check "each is exported by the operator (unknown: ${unknown:-none})" test -z "$unknown"
echo "monitoring: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
