#!/usr/bin/env python3
"""idlemem: each daemon's memory (RSS, PSS, USS from /proc/<pid>/smaps_rollup) with the
whole operator running against a fake API server, no control plane needed.

    python3 bench/idlemem.py [--n N] [--workers W] [--settle S] [--bin DIR] [--json FILE]

The fake API (this file, standard library only) serves N copies of one converged
Standalone RedisCluster and its children (bench/fixtures/world-standalone.json: the
objects tests/unit/test_projection.c builds as the API server and kwok hand them out,
managedFields included) to LIST, holds WATCHes open without events, and accepts every
write. The pods' IPs are in TEST-NET-1 (192.0.2.0/24): observerd's probes go nowhere,
as with kwok's pods. The supervisor runs with --workers W on a runtime dir of its own,
health and metrics on free loopback ports, no leader election; after it is ready and S
seconds have passed, each process's smaps_rollup is read. N=0 is the idle baseline.
Every process started here is stopped by its pid. Prints a markdown table; --json
writes the figures.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (its /proc readers: smaps, proc_name, descendants)
TOP = os.path.dirname(HERE)
NS = "bench"

# resource -> (kind, apiVersion)
RESOURCES = {
    "redisclusters": ("RedisCluster", "cache.example.com/v1"),
    "configmaps": ("ConfigMap", "v1"),
    "services": ("Service", "v1"),
    "statefulsets": ("StatefulSet", "apps/v1"),
    "poddisruptionbudgets": ("PodDisruptionBudget", "policy/v1"),
    "pods": ("Pod", "v1"),
    "secrets": ("Secret", "v1"),
    "events": ("Event", "v1"),
    "leases": ("Lease", "coordination.k8s.io/v1"),
}


def world_objects(n):
    """resource -> list of objects: n renamed copies of the fixture's cluster."""
    with open(os.path.join(HERE, "fixtures", "world-standalone.json")) as f:
        world = json.load(f)
    text = json.dumps(world, separators=(",", ":"))
    text = text.replace('"namespace":"ns"', '"namespace":"%s"' % NS).replace('"10.0.0.', '"192.0.2.')
    by = {r: [] for r in RESOURCES}
    where = {"RedisCluster": "redisclusters", "ConfigMap": "configmaps", "Service": "services",
             "ServicePrimary": "services", "ServiceReplicas": "services", "StatefulSet": "statefulsets",
             "PodDisruptionBudget": "poddisruptionbudgets"}
    for i in range(n):
        name = "rc-%d" % i
        t = re.sub(r'(?<![\w.])cache(?=[-"])', name, text)
        t = re.sub(r'"uid-([^"]*)"', lambda m: '"uid-%s-%d"' % (m.group(1), i), t)
        w = json.loads(t)
        for k, obj in w.items():
            # The spec hash covers the name (labels, selector): a renamed copy has none, so
            # the field comparison decides and finds the renamed children as rendered.
            if isinstance(obj, dict):
                obj["metadata"].get("annotations", {}).pop("cache.example.com/spec-hash", None)
            if k == "Pods":
                by["pods"].extend(obj)
            else:
                by[where[k]].append(obj)
    return by


class Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    objects = {}
    stop = threading.Event()

    def log_message(self, *_):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route(self):
        u = urllib.parse.urlsplit(self.path)
        parts = [p for p in u.path.split("/") if p]
        q = urllib.parse.parse_qs(u.query)
        # /api/v1/... or /apis/<group>/<version>/...
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]
        resource = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else None
        return resource, name, q

    def do_GET(self):
        resource, name, q = self.route()
        if resource not in RESOURCES:
            return self.reply(404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"})
        kind, api = RESOURCES[resource]
        items = self.objects.get(resource, [])
        if name:
            for o in items:
                if o["metadata"]["name"] == name:
                    return self.reply(200, o)
            return self.reply(404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"})
        if q.get("watch", ["0"])[0] in ("1", "true"):
            return self.watch(int(q.get("timeoutSeconds", ["300"])[0]))
        limit = int(q.get("limit", ["0"])[0] or 0)
        start = int(q.get("continue", ["0"])[0] or 0)
        page = items[start:start + limit] if limit else items[start:]
        more = limit and start + limit < len(items)
        meta = {"resourceVersion": "1000"}
        if more:
            meta["continue"] = str(start + limit)
        self.reply(200, {"kind": kind + "List", "apiVersion": api, "metadata": meta, "items": page})

    def watch(self, timeout):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.stop.wait(min(timeout, 600))
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        self.close_connection = True

    def write(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b"{}"
        try:
            obj = json.loads(raw or b"{}")
        except ValueError:
            obj = {}
        if isinstance(obj, dict):
            obj.setdefault("metadata", {})["resourceVersion"] = "1001"
        self.reply(201 if self.command == "POST" else 200, obj)

    do_POST = do_PUT = do_PATCH = write

    def do_DELETE(self):
        self.reply(200, {"kind": "Status", "status": "Success"})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def usage(pid, root):
    """RSS, PSS and USS (kB) and the name of one process, or None when it is gone."""
    m = bench.smaps(pid)
    if not m:
        return None
    return {"pid": pid, "name": "supervisor" if pid == root else bench.proc_name(pid), "rss_kb": m.get("rss"),
            "pss_kb": m.get("pss"), "uss_kb": m.get("private_dirty", 0) + m.get("private_clean", 0)}


def ready(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def run(args):
    Api.objects = world_objects(args.n)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="rdc-idlemem-")
    os.chmod(work, 0o700)
    kc = os.path.join(work, "kubeconfig")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:%d\n"
                "users:\n- name: u\n  user:\n    token: fake\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n"
                "    user: u\ncurrent-context: fake\n" % srv.server_address[1])
    rt = os.path.join(work, "rt")
    os.mkdir(rt, 0o700)
    health, metrics = free_port(), free_port()
    log = open(os.path.join(work, "operator.log"), "w")
    cmd = [os.path.join(args.bin, "supervisor"), "--kubeconfig", kc, "--runtime-dir", rt, "--bindir", args.bin,
           "--workers", str(args.workers), "--namespace", NS, "--health-probe-bind-address",
           "127.0.0.1:%d" % health, "--metrics-bind-address", "127.0.0.1:%d" % metrics, "--kube-api-qps", "-1"]
    sup = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not ready(health):
            if sup.poll() is not None:
                sys.exit("supervisor exited %s; see %s" % (sup.returncode, log.name))
            time.sleep(0.2)
        if not ready(health):
            sys.exit("not ready after 60 s; see %s" % log.name)
        time.sleep(args.settle)
        procs = [u for u in (usage(pid, sup.pid) for pid in bench.descendants(sup.pid)) if u]
        procs.sort(key=lambda p: p["name"])
        return {"n": args.n, "workers": args.workers, "settle_s": args.settle, "processes": procs,
                "totals": {k: sum(p[k] or 0 for p in procs) for k in ("rss_kb", "pss_kb", "uss_kb")}}
    finally:
        try:
            os.kill(sup.pid, signal.SIGTERM)
            sup.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(sup.pid, signal.SIGKILL)
            sup.wait()
        Api.stop.set()
        srv.shutdown()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=0, help="RedisClusters served (0: the idle baseline)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--settle", type=float, default=10.0, help="seconds after ready before measuring")
    ap.add_argument("--bin", default=os.path.join(TOP, "build", "bin"))
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    r = run(args)
    print("N=%d, %d workers, measured %.0f s after ready (MiB)\n" % (r["n"], r["workers"], r["settle_s"]))
    print("| process | RSS | PSS | USS |\n|---|---|---|---|")
    for p in r["processes"] + [dict(r["totals"], name="**total**")]:
        print("| %s | %.1f | %.1f | %.1f |" % (p["name"], p["rss_kb"] / 1024, p["pss_kb"] / 1024, p["uss_kb"] / 1024))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
