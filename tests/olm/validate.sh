#!/usr/bin/env bash
# The OLM bundle's checks (make unit runs them; make bundle-validate alone):
#  1. bundle/ and bundle.Dockerfile are what scripts/bundle.py generates from deploy/ and
#     crds/ now (a change to deploy/ without `make bundle` fails here);
#  2. the bundle passes operator-framework/api's validators, the default ones and the
#     operatorframework suite of `operator-sdk bundle validate --select-optional
#     suite=operatorframework`, with zero errors and zero warnings;
#  3. controls, so that neither check passes vacuously: a copy of deploy/ with one more
#     flag in the Deployment fails check 1, and a copy of the bundle without icon and
#     maintainers and with an unknown category fails check 2.
# The validator (tests/olm/validate, Go, operator-framework/api v0.34.0) is built once per
# version of its sources and of Go into ~/.cache/rdc-operator/olm-validate/<key>/ (about
# 2 minutes on 2 cores), like tests/cluster/build.sh.
#
#   tests/olm/validate.sh [BUNDLE_DIR]          prints "olm: N passed, M failed"
#   tests/olm/validate.sh --build               only builds the validator, prints its path
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
bundle=${1:-bundle}
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" GOWORK=off CGO_ENABLED=0
NAME=olm
. tests/lib_checks.sh

src=tests/olm/validate
key=$( { cat "$src/go.mod" "$src/go.sum" "$src"/*.go; go version; } | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/olm-validate/$key"
validator="$cache/validate"
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9
if [ ! -x "$validator" ]; then
    echo "# building the bundle validator (operator-framework/api $(sed -n 's#.*github.com/operator-framework/api \(v[^ ]*\).*#\1#p' "$src/go.mod")) into $cache"
    start=$SECONDS
    if (cd "$src" && go build -trimpath -o "$validator.tmp" .) >"$tmp/build.log" 2>&1; then
        mv "$validator.tmp" "$validator"; echo "# built in $((SECONDS - start)) s"
    else
        sed 's/^/#   /' "$tmp/build.log" | tail -20; not_ok "the validator builds"; finish
    fi
fi
flock -u 9
if [ "$bundle" = --build ]; then echo "$validator"; exit 0; fi   # for tests/olm/catalog.sh

if python3 scripts/bundle.py --check >"$tmp/check.log" 2>&1; then
    ok "bundle/ is what make bundle generates from deploy/ and crds/"
else
    sed 's/^/#   /' "$tmp/check.log" | head -40; not_ok "bundle/ is what make bundle generates from deploy/ and crds/"
fi
"$validator" "$bundle" >"$tmp/val.log" 2>&1; rc=$?
sed 's/^/#   /' "$tmp/val.log"
ran=$(grep -c '^ran ' "$tmp/val.log")
if [ "$rc" -eq 0 ] && [ "$ran" -eq 6 ] && grep -q ': 0 errors, 0 warnings$' "$tmp/val.log"; then
    ok "the bundle validates: default validators and the operatorframework suite ($ran sets), 0 errors, 0 warnings"
else
    not_ok "the bundle validates with 0 errors and 0 warnings (exit $rc, $ran validator sets ran)"
fi

# Control 1: deploy/ changed, bundle/ not regenerated.
control_changed_deploy "make bundle" 's/^        - --log-level=info$/        - --log-level=debug/' \
    python3 scripts/bundle.py --check
# Control 2: a bundle OperatorHub would refuse.
cp -r "$bundle" "$tmp/bad"
python3 - "$tmp/bad/manifests/rediscluster-operator.clusterserviceversion.yaml" <<'PY'
import sys, yaml
p = sys.argv[1]
text = open(p).read()
csv = yaml.safe_load(text)
del csv["spec"]["icon"], csv["spec"]["maintainers"]
csv["metadata"]["annotations"]["categories"] = "Not A Category"
open(p, "w").write(yaml.safe_dump(csv, sort_keys=False))
PY
"$validator" "$tmp/bad" >"$tmp/c2.log" 2>&1; rc=$?
n=$(grep -cE '^(ERROR|WARNING)' "$tmp/c2.log")
if [ "$rc" -ne 0 ] && [ "$n" -ge 2 ]; then
    ok "control: a CSV without icon and maintainers, with an unknown category, fails validation ($n findings)"
else
    sed 's/^/#   /' "$tmp/c2.log"; not_ok "control: a broken CSV fails validation (exit $rc, $n findings)"
fi
finish
