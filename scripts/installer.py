#!/usr/bin/env python3
"""Write one install.yaml of the operator, as kubebuilder's `make build-installer` does
(`kustomize edit set image controller=IMG; kustomize build config/default`).

    scripts/installer.py [--img IMG] [--deploy DIR] [--out FILE]

The objects are deploy/'s (read as its kustomization says, with scripts/bundle.py's
reader, so no kustomize is needed), in the kustomization's order (the Namespace and the
CRD first), the Deployment's image replaced by IMG. It is `kubectl apply -k deploy/` as
one file: a working operator whose webhooks (fail open) wait for a serving certificate
(deploy/gen-certs.sh, cert-manager: docs/webhooks-and-deploy.md).
"""
import argparse
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle import load_kustomization  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--img", default=os.environ.get("IMG", "rediscluster-operator:0.1.0"))
    ap.add_argument("--deploy", default=os.path.join(TOP, "deploy"))
    ap.add_argument("--out", default=os.path.join(TOP, "dist/install.yaml"))
    a = ap.parse_args()
    objs = load_kustomization(a.deploy)
    n = 0
    for o in objs:
        if o["kind"] == "Deployment":
            for c in o["spec"]["template"]["spec"]["containers"]:
                if c["image"].rpartition(":")[0] == "rediscluster-operator" or c["image"] == "rediscluster-operator":
                    c["image"] = a.img
                    n += 1
    if n != 1:
        sys.exit("installer.py: expected one container of image rediscluster-operator in deploy/, found %d" % n)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out + ".tmp", "w") as f:
        f.write("# rdc-operator %s: kubectl apply --server-side -f install.yaml (make build-installer; from deploy/)\n"
                % a.img)
        yaml.safe_dump_all(objs, f, sort_keys=False, explicit_start=True, width=4096)
    os.replace(a.out + ".tmp", a.out)
    print("build-installer: wrote %s (%d objects, image %s)" % (a.out, len(objs), a.img))
    return 0


if __name__ == "__main__":
    sys.exit(main())
