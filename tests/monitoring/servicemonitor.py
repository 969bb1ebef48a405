#!/usr/bin/env python3
"""Assert that the ServiceMonitor of a built overlay scrapes the operator's metrics
endpoint as the operator serves it (issue 37: the ServiceMonitor was built, never
checked). Reads `kubectl kustomize` output (a file, or - for stdin); exits 1 naming each
mismatch:
  - it selects exactly one Service (matchLabels within its labels, its namespace in
    namespaceSelector), the operator's metrics Service;
  - each endpoint's port is a named port of that Service, whose targetPort is a named
    container port of the manager Deployment, whose number is the port of the
    container's --metrics-bind-address;
  - scheme https unless the container says --metrics-secure=false, path /metrics;
  - a bearer token is sent (metricsd authenticates it by TokenReview: docs/metrics.md),
    and tlsConfig either names a CA or skips verification knowingly; with
    --metrics-cert-path the serverName must be one of the Service's DNS names.
"""
import sys
import yaml


def load(path):
    f = sys.stdin if path == "-" else open(path)
    return [d for d in yaml.safe_load_all(f) if d]


def arg_value(args, name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def check(docs):
    errs = []
    mons = [d for d in docs if d["kind"] == "ServiceMonitor"]
    if len(mons) != 1:
        return ["want one ServiceMonitor, found %d" % len(mons)]
    mon = mons[0]
    spec = mon["spec"]
    match = spec.get("selector", {}).get("matchLabels", {})
    nss = spec.get("namespaceSelector", {}).get("matchNames", [mon["metadata"].get("namespace")])
    svcs = [d for d in docs if d["kind"] == "Service" and d["metadata"].get("namespace") in nss and
            match and all(d["metadata"].get("labels", {}).get(k) == v for k, v in match.items())]
    if len(svcs) != 1:
        return ["the selector %s in %s picks %d Services (%s), want exactly the metrics Service" %
                (match, nss, len(svcs), [s["metadata"]["name"] for s in svcs])]
    svc = svcs[0]
    deps = [d for d in docs if d["kind"] == "Deployment" and d["metadata"].get("namespace") ==
            svc["metadata"].get("namespace") and all(
                d["spec"]["template"]["metadata"].get("labels", {}).get(k) == v
                for k, v in svc["spec"]["selector"].items())]
    if len(deps) != 1:
        return ["the metrics Service's selector picks %d Deployments, want the manager's" % len(deps)]
    cont = deps[0]["spec"]["template"]["spec"]["containers"][0]
    args = cont.get("args", []) + cont.get("command", [])
    bind = arg_value(args, "--metrics-bind-address")
    secure = arg_value(args, "--metrics-secure") != "false"
    certpath = arg_value(args, "--metrics-cert-path")
    if not bind or bind == "0":
        errs.append("the manager serves no metrics (--metrics-bind-address %r)" % bind)
    for ep in spec.get("endpoints", []):
        sp = [p for p in svc["spec"].get("ports", []) if p.get("name") == ep.get("port")]
        if not sp:
            errs.append("endpoint port %r is not a named port of Service %s" % (ep.get("port"), svc["metadata"]["name"]))
            continue
        tp = sp[0].get("targetPort")
        cp = [p for p in cont.get("ports", []) if p.get("name") == tp or p.get("containerPort") == tp]
        if not cp:
            errs.append("the Service's targetPort %r is no container port of the manager" % tp)
        elif bind and str(cp[0]["containerPort"]) != bind.rsplit(":", 1)[-1]:
            errs.append("container port %s is not --metrics-bind-address %s" % (cp[0]["containerPort"], bind))
        want = "https" if secure else "http"
        if ep.get("scheme", "http") != want:
            errs.append("scheme %r, the operator serves %s" % (ep.get("scheme", "http"), want))
        if ep.get("path", "/metrics") != "/metrics":
            errs.append("path %r, the operator serves /metrics" % ep.get("path"))
        if secure and not (ep.get("bearerTokenFile") or ep.get("authorization") or ep.get("bearerTokenSecret")):
            errs.append("no bearer token: the operator authenticates every scrape (TokenReview)")
        tls = ep.get("tlsConfig", {})
        if secure and not (tls.get("insecureSkipVerify") is True or tls.get("ca") or tls.get("caFile")):
            errs.append("tlsConfig names no CA and does not skip verification: every scrape would fail")
        if certpath and tls.get("serverName"):
            ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
            names = {name, "%s.%s" % (name, ns), "%s.%s.svc" % (name, ns), "%s.%s.svc.cluster.local" % (name, ns)}
            if tls["serverName"] not in names:
                errs.append("tlsConfig.serverName %r is not a DNS name of the metrics Service" % tls["serverName"])
    if not spec.get("endpoints"):
        errs.append("no endpoints")
    return errs


if __name__ == "__main__":
    errs = check(load(sys.argv[1] if len(sys.argv) > 1 else "-"))
    for e in errs:
        print(e)
    sys.exit(1 if errs else 0)
