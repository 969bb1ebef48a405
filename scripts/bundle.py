#!/usr/bin/env python3
"""Generate the OLM bundle (bundle/ and bundle.Dockerfile) from deploy/ and crds/.

    scripts/bundle.py [--img IMG] [--deploy DIR] [--out DIR] [--check]

The ClusterServiceVersion is deploy/olm/rediscluster-operator.clusterserviceversion.yaml
(what OperatorHub shows, the descriptors) completed from the manifests, so that the two
cannot drift:
  - spec.install (strategy deployment): the Deployment of deploy/ (image IMG; without its
    webhook-certificate volume, which OLM mounts itself at the same path), permissions from
    the Roles bound to its ServiceAccount, clusterPermissions from the ClusterRoles bound to
    it;
  - spec.webhookdefinitions: one per webhook of deploy/'s Validating/Mutating
    configurations, and the conversion webhook of the CRD (conversionCRDs);
  - spec.customresourcedefinitions.owned: every served version of crds/' two CRDs, with
    the descriptors of the base and the kinds the operator creates (ConfigMap, Service,
    StatefulSet for a RedisCluster; Job for a RedisBackup);
  - alm-examples from deploy/samples/rediscluster.yaml and redisbackup.yaml, containerImage, the icon.
The other objects OLM installs from a bundle go to bundle/manifests as files: the CRD, the
metrics Service, the metrics-reader ClusterRole (bound by users to their Prometheus) and
the PodDisruptionBudget. The namespace, the webhook Service and configurations and the
bindings are OLM's to make.

deploy/ is read as its kustomization says (resources and labels), without kustomize, so
the output does not depend on a kustomize version. --check writes into a temporary
directory and exits 1 with a diff when bundle/ or bundle.Dockerfile differ from it.
"""
import argparse
import base64
import copy
import difflib
import json
import os
import sys
import tempfile

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "rediscluster-operator"
CHANNEL = "alpha"
WEBHOOK_CERT_PATH = "/tmp/k8s-webhook-server/serving-certs"


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def load_kustomization(d):
    """The objects of the kustomization in directory d: resources (files or directories
    with a kustomization, recursively) with its `labels` added to metadata.labels."""
    with open(os.path.join(d, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    objs = []
    for r in k.get("resources", []):
        p = os.path.normpath(os.path.join(d, r))
        objs += load_kustomization(p) if os.path.isdir(p) else load_all(p)
    unknown = set(k) - {"apiVersion", "kind", "resources", "labels"}
    if unknown:
        sys.exit("bundle.py: %s/kustomization.yaml uses %s, which this generator does not apply"
                 % (d, ", ".join(sorted(unknown))))
    for lab in k.get("labels", []):
        if lab.get("includeSelectors") or lab.get("includeTemplates"):
            sys.exit("bundle.py: labels with includeSelectors/includeTemplates are not applied")
        for o in objs:
            o.setdefault("metadata", {}).setdefault("labels", {}).update(lab["pairs"])
    return objs


def by_kind(objs, kind):
    return [o for o in objs if o["kind"] == kind]


def one(objs, kind, name=None):
    found = [o for o in by_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    if len(found) != 1:
        sys.exit("bundle.py: expected one %s%s in deploy/, found %d" % (kind, " " + name if name else "", len(found)))
    return found[0]


def strip_ns(o):
    o = copy.deepcopy(o)
    o["metadata"].pop("namespace", None)
    return o


def subject_is(binding, sa, ns):
    return any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and s.get("namespace", ns) == ns
               for s in binding.get("subjects", []))


def install_strategy(objs, img):
    dep = copy.deepcopy(one(objs, "Deployment"))
    ns = dep["metadata"]["namespace"]
    pod = dep["spec"]["template"]["spec"]
    sa = pod["serviceAccountName"]
    # OLM mounts the webhook serving certificate at the same path itself.
    cert_vols = {v["name"] for v in pod.get("volumes", [])
                 if any(m["name"] == v["name"] and m["mountPath"] == WEBHOOK_CERT_PATH
                        for c in pod["containers"] for m in c.get("volumeMounts", []))}
    pod["volumes"] = [v for v in pod.get("volumes", []) if v["name"] not in cert_vols]
    for c in pod["containers"]:
        c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] not in cert_vols]
        if c["name"] == "manager":
            c["image"] = img
    roles = {r["metadata"]["name"]: r for r in by_kind(objs, "Role")}
    croles = {r["metadata"]["name"]: r for r in by_kind(objs, "ClusterRole")}
    perms, cperms = [], []
    for b in sorted(by_kind(objs, "RoleBinding"), key=lambda b: b["metadata"]["name"]):
        if subject_is(b, sa, ns):
            perms.append({"serviceAccountName": sa, "rules": roles[b["roleRef"]["name"]]["rules"]})
    for b in sorted(by_kind(objs, "ClusterRoleBinding"), key=lambda b: b["metadata"]["name"]):
        if subject_is(b, sa, ns):
            cperms.append({"serviceAccountName": sa, "rules": croles[b["roleRef"]["name"]]["rules"]})
    # One entry per service account, as operator-sdk writes it.
    def merge(entries):
        out = {}
        for e in entries:
            out.setdefault(e["serviceAccountName"], []).extend(e["rules"])
        return [{"serviceAccountName": k, "rules": v} for k, v in out.items()]
    spec = {"deployments": [{"name": dep["metadata"]["name"], "label": dep["metadata"].get("labels", {}),
                             "spec": dep["spec"]}]}
    if perms:
        spec["permissions"] = merge(perms)
    if cperms:
        spec["clusterPermissions"] = merge(cperms)
    return dep, {"strategy": "deployment", "spec": spec}


def webhook_definitions(objs, dep, crd):
    name = dep["metadata"]["name"]
    pod = dep["spec"]["template"]["spec"]
    port = next(p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])
                if p["name"] == "webhook-server")
    defs = []
    for kind, typ in (("MutatingWebhookConfiguration", "MutatingAdmissionWebhook"),
                      ("ValidatingWebhookConfiguration", "ValidatingAdmissionWebhook")):
        for cfg in by_kind(objs, kind):
            for w in cfg["webhooks"]:
                d = {"type": typ, "generateName": w["name"], "deploymentName": name,
                     "containerPort": 443, "targetPort": port,
                     "webhookPath": w["clientConfig"]["service"]["path"],
                     "admissionReviewVersions": w["admissionReviewVersions"],
                     "sideEffects": w["sideEffects"], "failurePolicy": w["failurePolicy"],
                     "rules": w["rules"]}
                for k in ("matchPolicy", "timeoutSeconds", "reinvocationPolicy", "objectSelector"):
                    if k in w:
                        d[k] = w[k]
                defs.append(d)
    conv = crd["spec"].get("conversion", {})
    if conv.get("strategy") == "Webhook":
        defs.append({"type": "ConversionWebhook", "generateName": "c" + crd["metadata"]["name"],
                     "deploymentName": name, "containerPort": 443, "targetPort": port,
                     "webhookPath": conv["webhook"]["clientConfig"]["service"]["path"],
                     "admissionReviewVersions": conv["webhook"]["conversionReviewVersions"],
                     "sideEffects": "None", "conversionCRDs": [crd["metadata"]["name"]]})
    return defs


# The base CSV's owned entries carry the descriptors of each served version; an entry
# without a kind is RedisCluster's. The children listed are those the operator creates
# for an object of the kind.
CHILDREN = {"RedisCluster": ["ConfigMap", "Service", "StatefulSet"], "RedisBackup": ["Job"]}


def owned_crds(base, crds):
    desc = {(o.get("kind", "RedisCluster"), o["version"]): o for o in base["spec"]["customresourcedefinitions"]["owned"]}
    out = []
    for crd in crds:
        kind = crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if not v.get("served"):
                continue
            if (kind, v["name"]) not in desc:
                sys.exit("bundle.py: no descriptors for %s %s in the base CSV" % (kind, v["name"]))
            o = {"name": crd["metadata"]["name"], "version": v["name"], "kind": kind}
            o.update({k: x for k, x in desc[(kind, v["name"])].items() if k not in ("version", "kind")})
            o["resources"] = [{"kind": k, "name": "", "version": "v1"} for k in CHILDREN[kind]]
            out.append(o)
    return out


def manifest_name(o):
    api = o["apiVersion"]
    group, _, ver = api.rpartition("/")
    return "%s_%s%s_%s.yaml" % (o["metadata"]["name"], group + "_" if group else "", ver, o["kind"].lower())


def dump(o):
    return yaml.safe_dump(o, sort_keys=False, default_flow_style=False, width=1000)


def generate(deploy, img, out):
    objs = load_kustomization(os.path.join(deploy, "base"))
    crd = load_all(os.path.join(TOP, "crds", "cache.example.com_redisclusters.yaml"))[0]
    backup_crd = load_all(os.path.join(TOP, "crds", "cache.example.com_redisbackups.yaml"))[0]
    base = load_all(os.path.join(deploy, "olm", "rediscluster-operator.clusterserviceversion.yaml"))[0]
    with open(os.path.join(deploy, "olm", "icon.svg"), "rb") as f:
        icon = base64.b64encode(f.read()).decode()
    sample = load_all(os.path.join(deploy, "samples", "rediscluster.yaml"))
    for s in sample:
        s["metadata"].pop("namespace", None)
    dep, install = install_strategy(objs, img)

    csv = copy.deepcopy(base)
    ann = csv["metadata"]["annotations"]
    # An example per served version: the sample, and the same as v1alpha1 (its fields
    # are a subset of v1's).
    examples = []
    for v in crd["spec"]["versions"]:
        if v.get("served"):
            for s in sample:
                e = copy.deepcopy(s)
                e["apiVersion"] = "%s/%s" % (crd["spec"]["group"], v["name"])
                examples.append(e)
    # RedisBackup is served as v1 only.
    for s in load_all(os.path.join(deploy, "samples", "redisbackup.yaml")):
        s["metadata"].pop("namespace", None)
        examples.append(s)
    ann["alm-examples"] = json.dumps(examples, indent=2)
    ann["containerImage"] = img
    ann["operators.operatorframework.io/suggested-namespace"] = dep["metadata"]["namespace"]
    ann = dict(sorted(ann.items()))
    csv["metadata"]["annotations"] = ann
    spec = csv["spec"]
    spec["customresourcedefinitions"] = {"owned": owned_crds(base, [crd, backup_crd])}
    spec["icon"] = [{"base64data": icon, "mediatype": "image/svg+xml"}]
    spec["install"] = install
    spec["webhookdefinitions"] = webhook_definitions(objs, dep, crd)

    files = {"manifests/%s.clusterserviceversion.yaml" % PACKAGE: csv,
             "manifests/cache.example.com_redisclusters.yaml": crd,
             "manifests/cache.example.com_redisbackups.yaml": backup_crd}
    for o in [one(objs, "Service", "rediscluster-operator-metrics"),
              one(objs, "ClusterRole", "rediscluster-operator-metrics-reader"),
              one(objs, "PodDisruptionBudget")]:
        files["manifests/" + manifest_name(o)] = strip_ns(o)
    annotations = {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": PACKAGE,
        "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
        "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
    }
    files["metadata/annotations.yaml"] = {"annotations": annotations}
    header = "# Generated by scripts/bundle.py from deploy/ and crds/ (make bundle); do not edit.\n"
    os.makedirs(os.path.join(out, "bundle", "manifests"), exist_ok=True)
    os.makedirs(os.path.join(out, "bundle", "metadata"), exist_ok=True)
    for rel, o in files.items():
        with open(os.path.join(out, "bundle", rel), "w") as f:
            f.write(header + dump(o))
    with open(os.path.join(out, "bundle.Dockerfile"), "w") as f:
        f.write("# Generated by scripts/bundle.py (make bundle); do not edit. Build: make bundle-build\n")
        f.write("FROM scratch\n\n")
        for k, v in annotations.items():
            f.write("LABEL %s=%s\n" % (k, v))
        f.write("\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n")
    return sorted(["bundle/" + r for r in files] + ["bundle.Dockerfile"])


def tree(root):
    out = {}
    for sub in ("bundle",):
        for d, _, fs in os.walk(os.path.join(root, sub)):
            for f in fs:
                p = os.path.join(d, f)
                out[os.path.relpath(p, root)] = open(p).read()
    p = os.path.join(root, "bundle.Dockerfile")
    if os.path.exists(p):
        out["bundle.Dockerfile"] = open(p).read()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--img", default=os.environ.get("IMG", "rediscluster-operator:0.1.0"))
    ap.add_argument("--deploy", default=os.path.join(TOP, "deploy"))
    ap.add_argument("--out", default=TOP, help="where bundle/ and bundle.Dockerfile go")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if not a.check:
        generate(a.deploy, a.img, a.out)
        print("bundle: wrote %s/bundle and %s/bundle.Dockerfile" % (a.out, a.out))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(a.deploy, a.img, tmp)
        want, have = tree(tmp), tree(a.out)
        bad = 0
        for f in sorted(set(want) | set(have)):
            if want.get(f) != have.get(f):
                bad += 1
                sys.stdout.writelines(difflib.unified_diff(
                    (have.get(f) or "").splitlines(True), (want.get(f) or "").splitlines(True),
                    "committed/" + f, "generated/" + f, n=1))
        if bad:
            print("bundle: %d file(s) of bundle/ differ from what deploy/ and crds/ generate: run make bundle" % bad)
            return 1
        print("bundle: bundle/ is what deploy/ and crds/ generate (%d files)" % len(want))
        return 0


if __name__ == "__main__":
    sys.exit(main())
