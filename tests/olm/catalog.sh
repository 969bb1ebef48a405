#!/usr/bin/env bash
# The file-based catalog of the bundle (make catalog-build writes it, then runs this):
#  1. catalog/rediscluster-operator/catalog.yaml is what scripts/catalog.py generates from
#     bundle/ (and bundle/ what deploy/ generates: scripts/bundle.py --check);
#  2. it validates (tests/olm/validate -catalog, catalog.go): the olm.package,
#     olm.channel and olm.bundle rules of `opm validate`, the bundle is bundle/'s (name,
#     version, CRD versions), operator-framework/api's PackageManifestValidator on its
#     package and channels: zero findings;
#  3. controls, so that the validation does not pass vacuously: a catalog whose channel
#     names a bundle that is not there, one whose default channel does not exist, and
#     one whose olm.gvk misses a served version each fail.
# No opm: operator-framework/operator-registry is not served by the Go module proxy here;
# the validator is operator-framework/api v0.34.0's (tests/olm/validate.sh builds it).
#
#   tests/olm/catalog.sh      prints "catalog: N passed, M failed"
set -uo pipefail
cd "$(dirname "$0")/../.."
cat=catalog/rediscluster-operator/catalog.yaml
NAME=catalog
. tests/lib_checks.sh

check "$cat is what scripts/catalog.py generates from bundle/" python3 scripts/catalog.py --check
check "bundle/ is what scripts/bundle.py generates from deploy/ and crds/" python3 scripts/bundle.py --check
validator=$(tests/olm/validate.sh --build 2>"$tmp/build.log" | tail -1)
if [ ! -x "$validator" ]; then sed 's/^/#   /' "$tmp/build.log" | tail -20; not_ok "the validator builds"; finish; fi
"$validator" -catalog "$cat" bundle >"$tmp/val.log" 2>&1; rc=$?
sed 's/^/#   /' "$tmp/val.log"
check "the catalog validates: package, channel, bundle rules, bundle/ matches, PackageManifestValidator, 0 findings" \
    eval "[ $rc = 0 ] && grep -q '(1 packages, 1 channels, 1 bundles): 0 findings$' '$tmp/val.log'"
# Controls.
sed 's/^- name: rediscluster-operator.v0.1.0$/- name: rediscluster-operator.v9.9.9/' "$cat" >"$tmp/c1.yaml"
check "control: a channel entry that names no bundle fails" fails "$validator" -catalog "$tmp/c1.yaml" bundle
sed 's/^defaultChannel: alpha$/defaultChannel: stable/' "$cat" >"$tmp/c2.yaml"
check "control: a default channel that does not exist fails (PackageManifestValidator)" fails "$validator" -catalog "$tmp/c2.yaml" bundle
python3 - "$cat" "$tmp/c3.yaml" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
for d in docs:
    if d and d["schema"] == "olm.bundle":
        gvk = [p for p in d["properties"] if p["type"] == "olm.gvk"]
        d["properties"].remove(gvk[-1])
yaml.safe_dump_all(docs, open(sys.argv[2], "w"), sort_keys=False)
PY
check "control: an olm.bundle without one of the CRD's served versions fails" fails "$validator" -catalog "$tmp/c3.yaml" bundle
for c in c1 c2 c3; do cmp -s "$cat" "$tmp/$c.yaml" && not_ok "control $c: the copy was changed (the edit matched nothing)"; done
finish
