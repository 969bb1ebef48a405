#!/usr/bin/env python3
"""Benchmark harness of the rdc-operator on the local control plane (see bench/README.md).

    bench.py run              every scenario the environment asks for (run.sh sets it up)
    bench.py watch ...        internal: the watch process (list + watch of one namespace,
                              one JSON line per change with the local receive time)

Python 3 standard library only. Every wait is bounded in time, every load loop in count;
every process this script starts is started in a session of its own and stopped by its
pid (TERM, bounded wait, then KILL of that process group only).
"""
import base64
import concurrent.futures as cf
import datetime
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

GROUP = "cache.example.com"
RDC_PATH = "/apis/cache.example.com/v1/namespaces/{ns}/redisclusters"
FINALIZER = "cache.example.com/finalizer"
HASH_ANNOTATION = "cache.example.com/config-hash"
LEASE_ID = "rdc-bench"
STATIC_SC = "rdc-bench-static"

KIND_PATHS = {
    "rdc": RDC_PATH,
    "sts": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "cm": "/api/v1/namespaces/{ns}/configmaps",
    "svc": "/api/v1/namespaces/{ns}/services",
    "pvc": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "pod": "/api/v1/namespaces/{ns}/pods",
    "lease": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
}
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def log(*a):
    print("bench: " + " ".join(str(x) for x in a), file=sys.stderr, flush=True)


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def env_float(name, default):
    v = os.environ.get(name, "")
    return float(v) if v.strip() else default


def env_str(name, default):
    v = os.environ.get(name, "")
    return v if v.strip() else default


def pct(xs, p):
    """Percentile with linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def dist(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "p50": r3(pct(xs, 50)), "p95": r3(pct(xs, 95)), "p99": r3(pct(xs, 99)),
            "max": r3(max(xs)), "min": r3(min(xs))}


def r3(x):
    return None if x is None else round(x, 3)


# ------------------------------------------------------------------ API client

class Kube:
    """A minimal Kubernetes REST client: client-certificate TLS from the kubeconfig (read
    through `kubectl config view --raw`), one keep-alive connection per thread."""

    def __init__(self, kubeconfig, secret_dir):
        raw = subprocess.check_output(
            ["kubectl", "--kubeconfig", kubeconfig, "config", "view", "--raw", "--minify", "-o", "json"])
        cfg = json.loads(raw)
        cl = cfg["clusters"][0]["cluster"]
        us = cfg["users"][0]["user"]
        u = urllib.parse.urlsplit(cl["server"])
        self.host, self.port = u.hostname, u.port or 443
        self.server = cl["server"]
        os.makedirs(secret_dir, mode=0o700, exist_ok=True)

        def blob(d, key, name):
            if key + "-data" in d:
                path = os.path.join(secret_dir, name)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(base64.b64decode(d[key + "-data"]))
                return path
            return d.get(key)

        ca = blob(cl, "certificate-authority", "ca.crt")
        cert = blob(us, "client-certificate", "client.crt")
        key = blob(us, "client-key", "client.key")
        self.ctx = ssl.create_default_context(cafile=ca)
        if cert and key:
            self.ctx.load_cert_chain(cert, key)
        self.token = us.get("token")
        self.local = threading.local()

    def connection(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def headers(self, ctype):
        h = {"Accept": "application/json", "User-Agent": "rdc-bench/1", "Content-Type": ctype}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def req(self, method, path, body=None, ctype="application/json", tries=4):
        """One request; retries transport errors, 429 and 5xx (bounded). Returns
        (status, parsed body or None)."""
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
        status, out = 0, None
        for attempt in range(tries):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = self.connection()
            try:
                c.request(method, path, body=data, headers=self.headers(ctype))
                r = c.getresponse()
                raw = r.read()
                status = r.status
                try:
                    out = json.loads(raw) if raw else None
                except ValueError:
                    out = None
                if (status == 429 or status >= 500) and attempt + 1 < tries:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return status, out
            except (OSError, http.client.HTTPException):
                try:
                    c.close()
                except Exception:
                    pass
                self.local.c = None
                if attempt + 1 >= tries:
                    return 0, None
                time.sleep(0.2 * (attempt + 1))
        return status, out

    def many(self, items, fn, threads=8):
        """fn(item) for every item on a bounded pool; returns the results in order."""
        with cf.ThreadPoolExecutor(max_workers=threads) as ex:
            return list(ex.map(fn, items))


# ------------------------------------------------------------------ watch process

def fields(kind, o):
    md = o.get("metadata", {})
    st = o.get("status") or {}
    sp = o.get("spec") or {}
    f = {"n": md.get("name"), "rv": md.get("resourceVersion")}
    if md.get("deletionTimestamp"):
        f["del"] = 1
    if kind == "rdc":
        f.update(gen=md.get("generation"), ph=st.get("phase"), og=st.get("observedGeneration"),
                 rr=st.get("readyReplicas"), fin=int(FINALIZER in (md.get("finalizers") or [])),
                 mm=((sp.get("config") or {}).get("maxmemory")))
    elif kind == "sts":
        ann = ((sp.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        f.update(h=ann.get(HASH_ANNOTATION), rr=st.get("readyReplicas"), ur=st.get("updatedReplicas"),
                 rev=int(st.get("currentRevision") == st.get("updateRevision")),
                 gen=md.get("generation"), og=st.get("observedGeneration"))
    elif kind == "pvc":
        f.update(ph=st.get("phase"))
    elif kind == "pod":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
        f.update(ph=st.get("phase"), ready=int(ready), node=(sp.get("nodeName") or ""))
    elif kind == "lease":
        f.update(holder=sp.get("holderIdentity") or "", tr=sp.get("leaseTransitions"))
    return f


def watch_main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--ns", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kinds", default="rdc,sts,cm,svc,pvc,pod,lease")
    ap.add_argument("--max-seconds", type=float, default=3600)
    ap.add_argument("--secret-dir", required=True)
    a = ap.parse_args(argv)
    kube = Kube(a.kubeconfig, a.secret_dir)
    out = open(a.out, "a", buffering=1)
    lock = threading.Lock()
    parent = os.getppid()
    deadline = time.time() + a.max_seconds

    def emit(kind, typ, o, t):
        rec = {"t": round(t, 4), "k": kind, "e": typ}
        rec.update(fields(kind, o))
        line = json.dumps(rec, separators=(",", ":"))
        with lock:
            out.write(line + "\n")

    def run(kind):
        path = KIND_PATHS[kind].format(ns=a.ns)
        rv = None
        failures = 0
        while time.time() < deadline and failures < 100:
            try:
                if rv is None:
                    st, lst = kube.req("GET", path)
                    if st != 200 or not lst:
                        failures += 1
                        time.sleep(1)
                        continue
                    t = time.time()
                    rv = lst["metadata"]["resourceVersion"]
                    for o in lst.get("items") or []:
                        emit(kind, "LISTED", o, t)
                    with lock:
                        out.write(json.dumps({"t": round(t, 4), "k": kind, "e": "SYNCED"}) + "\n")
                c = kube.connection(timeout=400)
                q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                                            "timeoutSeconds": "300"})
                c.request("GET", path + "?" + q, headers=kube.headers("application/json"))
                r = c.getresponse()
                if r.status == 410:
                    rv = None
                    c.close()
                    continue
                if r.status != 200:
                    failures += 1
                    c.close()
                    time.sleep(1)
                    continue
                while time.time() < deadline:
                    line = r.readline()
                    if not line:
                        break
                    t = time.time()
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    typ, o = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if o.get("code") == 410:
                            rv = None
                        break
                    nrv = (o.get("metadata") or {}).get("resourceVersion")
                    if nrv:
                        rv = nrv
                    if typ == "BOOKMARK":
                        continue
                    emit(kind, typ, o, t)
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                failures += 1
                time.sleep(0.5)

    for k in a.kinds.split(","):
        threading.Thread(target=run, args=(k,), daemon=True).start()
    while time.time() < deadline and os.getppid() == parent:
        time.sleep(0.5)
    return 0


class Tracker:
    """Reads the watch process' JSON lines and keeps, per object, the milestones the
    figures are made of (first seen, finalizer, Running per generation, hash, Bound...)."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.partial = ""
        self.obj = {k: {} for k in KIND_PATHS}
        self.synced = set()
        self.lease_hist = []   # (t, holder)

    def poll(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        for line in lines:
            if line:
                try:
                    self.apply(json.loads(line))
                except ValueError:
                    pass

    def apply(self, ev):
        k, t, typ = ev["k"], ev["t"], ev["e"]
        if typ == "SYNCED":
            self.synced.add(k)
            return
        n = ev.get("n")
        o = self.obj[k].get(n)
        if o is None:
            o = self.obj[k][n] = {"first": t, "listed": typ == "LISTED"}
        if typ == "DELETED":
            o.setdefault("gone", t)
            return
        o.pop("gone", None)
        o["cur"] = ev
        if k == "rdc":
            if ev.get("fin") and "fin" not in o:
                o["fin"] = t
            if ev.get("ph") == "Running" and ev.get("og") == ev.get("gen"):
                o.setdefault("run", {}).setdefault(str(ev.get("gen")), t)
        elif k == "sts":
            if ev.get("h"):
                o.setdefault("hash", {}).setdefault(ev["h"], t)
        elif k == "pvc":
            if ev.get("ph") == "Bound":
                o.setdefault("bound", t)
        elif k == "pod":
            if ev.get("node"):
                o.setdefault("sched", t)
            if ev.get("ready"):
                o.setdefault("ready", t)
        elif k == "lease":
            h = ev.get("holder")
            if not self.lease_hist or self.lease_hist[-1][1] != h:
                self.lease_hist.append((t, h))


class Watch:
    """The watch process of one namespace and its tracker."""

    def __init__(self, ctx, ns, max_seconds, kinds="rdc,sts,cm,svc,pvc,pod,lease"):
        self.out = os.path.join(ctx.work, "watch-%s.jsonl" % ns)
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "watch", "--kubeconfig", ctx.kubeconfig, "--ns", ns,
             "--out", self.out, "--kinds", kinds, "--max-seconds", str(int(max_seconds)),
             "--secret-dir", ctx.secret_dir], start_new_session=True, stdin=subprocess.DEVNULL)
        ctx.procs.append(self.p)
        self.tr = Tracker(self.out)
        self.kinds = set(kinds.split(","))
        self.ctx = ctx

    def wait_synced(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            self.tr.poll()
            if self.kinds <= self.tr.synced:
                return True
            time.sleep(0.2)
        return False

    def stop(self):
        self.tr.poll()
        stop_proc(self.p, 5)
        self.tr.poll()


# ------------------------------------------------------------------ processes

def stop_proc(p, grace):
    """TERM the process p (ours, started with start_new_session), wait up to grace s, then
    KILL its process group. Returns (exit code or None, seconds it took)."""
    t0 = time.time()
    for kill, sig, wait_s in ((os.kill, signal.SIGTERM, grace), (os.killpg, signal.SIGKILL, 5)):
        if p.poll() is not None:
            break
        try:
            kill(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass
    # leftovers of the group (children that outlived their parent)
    try:
        os.killpg(p.pid, 0)
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return p.returncode, time.time() - t0


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (which is in parentheses and
    may hold spaces): v[0] is field 3, the state. None when the process is gone."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            s = f.read()
        return s[s.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return None


def all_stats():
    """(pid, proc_stat(pid)) of every process that is still there."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            v = proc_stat(d)
            if v:
                yield int(d), v


def proc_children():
    kids = {}
    for pid, v in all_stats():
        kids.setdefault(int(v[1]), []).append(pid)
    return kids


def descendants(pid):
    kids = proc_children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def proc_cpu(pid):
    v = proc_stat(pid)
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK") if v else None


def proc_name(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"RDC_CHILD_NAME="):
                    return kv.split(b"=", 1)[1].decode()
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


def smaps(pid):
    out = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[0] in ("Rss:", "Pss:", "Private_Dirty:", "Private_Clean:"):
                    out[parts[0][:-1].lower()] = int(parts[1])  # kB
    except OSError:
        return None
    return out


def memory_of(root_pid):
    """RSS and PSS (kB) of every process in the tree under root_pid, named by child."""
    procs = []
    for p in descendants(root_pid):
        m = smaps(p)
        if m:
            # USS: the pages only this process maps (private clean + dirty), what it alone costs.
            procs.append({"pid": p, "name": "supervisor" if p == root_pid else proc_name(p),
                          "rss_kb": m.get("rss"), "pss_kb": m.get("pss"),
                          "uss_kb": m.get("private_dirty", 0) + m.get("private_clean", 0)})
    procs.sort(key=lambda x: x["name"])
    return {"processes": procs, "rss_kb_total": sum(x["rss_kb"] or 0 for x in procs),
            "pss_kb_total": sum(x["pss_kb"] or 0 for x in procs),
            "uss_kb_total": sum(x["uss_kb"] or 0 for x in procs)}


def cluster_pids(cluster_dir):
    """The control plane's components (pid files of tests/cluster/cluster.sh), each with the
    pids of its session (the provisioner runs kubectl/jq children)."""
    out = {}
    pdir = os.path.join(cluster_dir, "pids")
    for fn in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
        try:
            with open(os.path.join(pdir, fn)) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[fn[:-4]] = pid
    return out


def session_cpu(sid):
    """CPU seconds of session sid: every live process' own time plus what its reaped
    children used (cutime/cstime), so the provisioner's short-lived kubectl and jq count."""
    total = 0.0
    tck = os.sysconf("SC_CLK_TCK")
    for _, v in all_stats():
        if int(v[3]) == sid:
            total += (int(v[11]) + int(v[12]) + int(v[13]) + int(v[14])) / tck
    return total


class ClusterCPU:
    def __init__(self, cluster_dir):
        self.pids = cluster_pids(cluster_dir)

    def sample(self):
        return {name: session_cpu(pid) for name, pid in self.pids.items()}

    @staticmethod
    def delta(a, b):
        return {k: round(b[k] - a.get(k, 0), 2) for k in b}


# ------------------------------------------------------------------ metrics

METRIC_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    out = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = METRIC_RE.match(line)
        if not m:
            continue
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        out.append((m.group(1), dict(LABEL_RE.findall(m.group(2) or "")), v))
    return out


def child_class(child):
    c = child or ""
    for base in ("workerd", "informerd", "electord", "supervisor", "webhook"):
        if c.startswith(base) or base in c:
            return base
    return c


def msum(ms, name, pred=None):
    return sum(v for n, lab, v in ms if n == name and (pred is None or pred(lab)))


def requests_by(ms, key=lambda lab: (child_class(lab.get("child")), lab.get("method"))):
    out = {}
    for n, lab, v in ms:
        if n == "rest_client_requests_total":
            k = key(lab)
            out[k] = out.get(k, 0) + v
    return out


def writes(ms, include_electord=False):
    return msum(ms, "rest_client_requests_total",
                lambda lab: lab.get("method") in WRITE_METHODS and
                (include_electord or child_class(lab.get("child")) != "electord"))


def event_writes(ms):
    """The workers' Event requests (POST, PATCH), or None when no worker exports the
    recorder's counters (an older operator, the peer): never read as 0."""
    if not any(n == "event_recorder_total" for n, _, _ in ms):
        return None
    return msum(ms, "event_recorder_total", lambda lab: lab.get("result") in ("posted", "patched"))


def cpu_by_child(ms):
    return {lab.get("child"): v for n, lab, v in ms if n == "process_cpu_seconds_total"}


def rss_by_child(ms):
    return {lab.get("child"): v for n, lab, v in ms if n == "process_resident_memory_bytes"}


def delta_dict(a, b):
    keys = set(a) | set(b)
    return {k: b.get(k, 0) - a.get(k, 0) for k in keys}


QUEUE_ADD_RESULTS = ("queued", "merged", "dropped")


def queue_adds(m0, m1, n):
    """informerd's work queue adds by cause between two scrapes, per cluster, each as what
    it became (informer_queue_adds_total{cause,result}, docs/informerd.md): queued (a
    reconcile), merged (into a key already due), dropped (a wait a hand-out overtook).
    {} for an operator without the counter (the peer, an older build)."""
    def by(ms):
        out = {}
        for name, lab, v in ms:
            if name == "informer_queue_adds_total":
                k = (lab.get("cause"), lab.get("result"))
                out[k] = out.get(k, 0) + v
        return out
    d = delta_dict(by(m0), by(m1))
    out = {}
    for (cause, result), v in d.items():
        if v and n:
            out.setdefault(cause, {r: 0.0 for r in QUEUE_ADD_RESULTS})[result] = r3(v / n)
    return dict(sorted(out.items(), key=lambda kv: -sum(kv[1].values())))


# ------------------------------------------------------------------ operator

class Operator:
    def __init__(self, ctx, name, ns, workers, extra=(), leader_elect=True):
        self.ctx, self.name, self.ns, self.workers = ctx, name, ns, workers
        self.rt = os.path.join(ctx.rt_base, "rt-" + name)
        self.logpath = os.path.join(ctx.work, "operator-%s.log" % name)
        args = [os.path.join(ctx.bindir, "supervisor"), "--kubeconfig", ctx.kubeconfig,
                "--workers", str(workers), "--namespace", ns, "--runtime-dir", self.rt,
                "--sync-period", ctx.sync_period, "--metrics-bind-address", "127.0.0.1:0",
                "--health-probe-bind-address", "127.0.0.1:0", "--log-level", "info"]
        if leader_elect:
            args += ["--leader-elect", "--leader-election-namespace", ns, "--leader-election-id", LEASE_ID]
        if ctx.qps:
            args += ["--kube-api-qps", ctx.qps]
        if ctx.burst:
            args += ["--kube-api-burst", ctx.burst]
        self.metrics_port = self.health_port = None
        self._start(args + list(extra))

    def _start(self, args):
        """Run args as this operator: output appended to its log, in a session of its own,
        in ctx.procs for the cleanup; no samples yet."""
        self.args = args
        self.logf = open(self.logpath, "ab")
        self.t_start = time.time()
        self.p = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        self.ctx.procs.append(self.p)
        self.samples = []
        self.sampling = False

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def wait_endpoints(self, timeout=20):
        end = time.time() + timeout
        ep = os.path.join(self.rt, "endpoints")
        while time.time() < end and self.alive():
            try:
                with open(ep) as f:
                    kv = dict(line.strip().split("=", 1) for line in f if "=" in line)
                self.metrics_port, self.health_port = int(kv["metrics"]), int(kv["health"])
                return True
            except (OSError, KeyError, ValueError):
                time.sleep(0.1)
        return False

    def http(self, port, path, timeout=5):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace")
        except Exception as e:  # noqa: BLE001 - any failure is "not yet"
            return 0, str(e)

    def metrics(self):
        st, body = self.http(self.metrics_port, "/metrics")
        return parse_metrics(body) if st == 200 else []

    def ready(self):
        return self.http(self.health_port, "/readyz")[0] == 200

    def is_leader(self, ms=None):
        ms = ms if ms is not None else self.metrics()
        return msum(ms, "leader_election_master_status") >= 1

    def wait_ready(self, timeout=60, leader=True):
        if not self.wait_endpoints(20):
            return False
        end = time.time() + timeout
        while time.time() < end and self.alive():
            if self.ready() and (not leader or self.is_leader()):
                return True
            time.sleep(0.2)
        return False

    def sampler(self, every=1.0, limit=36000):
        """Sample workqueue_depth, CPU and RSS per child every second (bounded count)."""
        self.sampling = True

        def loop():
            n = 0
            while self.sampling and n < limit and self.alive():
                t = time.time()
                ms = self.metrics()
                if ms:
                    self.samples.append({"t": t, "depth": msum(ms, "workqueue_depth"),
                                         "cpu": round(sum(cpu_by_child(ms).values()), 3),
                                         "rss": sum(rss_by_child(ms).values()),
                                         "reconciles": msum(ms, "controller_runtime_reconcile_total"),
                                         "writes": writes(ms), "events": event_writes(ms)})
                n += 1
                time.sleep(max(0.0, every - (time.time() - t)))
        th = threading.Thread(target=loop, daemon=True)
        th.start()
        return th

    def stop(self, grace=40):
        self.sampling = False
        rc, secs = stop_proc(self.p, grace)
        self.logf.close()
        return rc, secs


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Peer(Operator):
    """The controller-runtime operator (bench/peer, rdc-peer) in the Operator's shape: same
    namespace flag, workers (MaxConcurrentReconciles), QPS/burst, metrics and readiness.
    Its metrics carry no child label; they are given child="workerd" (its reconciles and
    requests are what our workers do) so that every figure reads the same."""

    def __init__(self, ctx, name, ns, workers, extra=(), leader_elect=False):
        self.ctx, self.name, self.ns, self.workers = ctx, name, ns, workers
        self.logpath = os.path.join(ctx.work, "peer-%s.log" % name)
        self.metrics_port, self.health_port = free_port(), free_port()
        args = [ctx.peer_bin, "--kubeconfig", ctx.kubeconfig, "--namespace", ns,
                "--workers", str(workers),
                "--metrics-bind-address", "127.0.0.1:%d" % self.metrics_port,
                "--health-probe-bind-address", "127.0.0.1:%d" % self.health_port,
                "--kube-api-qps", ctx.qps or "20", "--kube-api-burst", ctx.burst or "30",
                "--rate-limiter", env_str("VS_PEER_LIMITER", "shared"),
                "--sync-period", ctx.sync_period]
        self._start(args + list(extra))

    def wait_endpoints(self, timeout=20):
        end = time.time() + timeout
        while time.time() < end and self.alive():
            if self.http(self.metrics_port, "/metrics")[0] == 200:
                return True
            time.sleep(0.1)
        return False

    def metrics(self):
        st, body = self.http(self.metrics_port, "/metrics")
        if st != 200:
            return []
        return [(n, dict(lab, child="workerd"), v) for n, lab, v in parse_metrics(body)]

    def is_leader(self, ms=None):
        return True


# ------------------------------------------------------------------ scenario helpers

def rdc_manifest(name, ns, storage_class=None, maxmemory="256mb", mode=None):
    storage = {"size": "1Gi"}
    if storage_class:
        storage["storageClass"] = storage_class
    spec = {"size": 3, "image": "redis", "version": "7.2",
            "config": {"maxmemory": maxmemory, "maxmemoryPolicy": "allkeys-lru"}, "storage": storage}
    mode = env_str("MODE", "") if mode is None else mode
    if mode:  # Standalone | Replication; unset: the CRD's default (Replication)
        spec["mode"] = mode
    return {"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
            "metadata": {"name": name, "namespace": ns, "labels": {"rdc-bench": "1"}},
            "spec": spec}


class Ctx:
    def __init__(self):
        self.top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.kubeconfig = os.environ["KUBECONFIG"]
        self.cluster_dir = env_str("RDC_CLUSTER_DIR", "/tmp/rdc-cluster-bench")
        self.bindir = env_str("RDC_BIN", os.path.join(self.top, "build", "bin"))
        self.work = env_str("BENCH_WORK", "") or tempfile.mkdtemp(prefix="rdc-bench.")
        os.makedirs(self.work, exist_ok=True)
        # The operator's runtime directory (sockets, metrics and key files) on a tmpfs, as
        # deploy/ mounts it (an emptyDir with medium Memory): on the disk, every worker's
        # key file rewrite (two a reconcile) costs an ext4 create, rename and writeback
        # that a pod does not pay. BENCH_RUNTIME_BASE=<dir> puts it elsewhere.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else self.work
        self.rt_base = tempfile.mkdtemp(prefix="rdc-bench-rt.", dir=env_str("BENCH_RUNTIME_BASE", shm))
        self.secret_dir = os.path.join(self.work, "secrets")
        self.kube = Kube(self.kubeconfig, self.secret_dir)
        self.procs = []
        self.sync_period = env_str("SYNC_PERIOD", "30s")
        self.peer_bin = env_str("PEER_BIN", "")
        self.qps = env_str("QPS", "")
        self.burst = env_str("BURST", "")
        self.storage = env_str("STORAGE", "static")
        self.threads = env_int("BENCH_CLIENT_THREADS", 8)
        self.run_id = "%x" % (int(time.time()) & 0xffffff)
        self.cpu = ClusterCPU(self.cluster_dir)
        self.namespaces = []
        self.nodes = []
        self.static_pvs = False
        self.interrupted = False

    def ns(self, what):
        return "rdc-bench-%s-%s" % (what, self.run_id)


def sync_seconds(s):
    m = re.match(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$", s.strip())
    if not m:
        return 30.0
    v = float(m.group(1))
    return v * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def create_namespace(ctx, ns):
    st, _ = ctx.kube.req("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"rdc-bench": "1"}}})
    if st not in (200, 201, 409):
        raise RuntimeError("cannot create namespace %s: HTTP %s" % (ns, st))
    ctx.namespaces.append(ns)
    # pods need the default ServiceAccount (made by the serviceaccount controller)
    end = time.time() + 30
    while time.time() < end:
        if ctx.kube.req("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns)[0] == 200:
            return
        time.sleep(0.2)


def delete_namespace(ctx, ns, wait=120):
    """Delete ns and wait (bounded) until it is gone; returns seconds or None on timeout."""
    t0 = time.time()
    ctx.kube.req("DELETE", "/api/v1/namespaces/%s" % ns)
    end = t0 + wait
    while time.time() < end:
        if ctx.kube.req("GET", "/api/v1/namespaces/%s" % ns)[0] == 404:
            if ns in ctx.namespaces:
                ctx.namespaces.remove(ns)
            return time.time() - t0
        time.sleep(0.5)
    return None


def force_cleanup(ctx, ns):
    """After an interruption, with no operator left to run the finalizers: take them off
    every RedisCluster of ns, then delete the namespace (not waited for)."""
    path = RDC_PATH.format(ns=ns)
    st, lst = ctx.kube.req("GET", path)
    names = [o["metadata"]["name"] for o in (lst or {}).get("items", [])] if st == 200 else []
    ctx.kube.many(names, lambda x: ctx.kube.req("PATCH", "%s/%s" % (path, x), {"metadata": {"finalizers": None}},
                                               "application/merge-patch+json")[0], ctx.threads)
    ctx.kube.req("DELETE", "/api/v1/namespaces/%s" % ns)
    if ctx.static_pvs:
        delete_static_pvs(ctx, ns)


def ensure_static_storage(ctx, ns, names):
    """STORAGE=static: a StorageClass without provisioner and, per cluster, 3 PVs
    pre-bound (claimRef) to the claims the StatefulSet will make. The PV controller binds
    them; the fake provisioner never runs."""
    ctx.kube.req("POST", "/apis/storage.k8s.io/v1/storageclasses",
                 {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": STATIC_SC},
                  "provisioner": "kubernetes.io/no-provisioner", "reclaimPolicy": "Retain",
                  "volumeBindingMode": "Immediate"})
    pvs = []
    for n in names:
        for i in range(3):
            claim = "data-%s-%d" % (n, i)
            pvs.append({"apiVersion": "v1", "kind": "PersistentVolume",
                        "metadata": {"name": "rdc-bench-%s-%s" % (ns, claim)[:250],
                                     "labels": {"rdc-bench-pv": ns}},
                        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": STATIC_SC,
                                 "hostPath": {"path": "/tmp/rdc-fake-pv/bench/" + claim, "type": ""},
                                 "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                              "namespace": ns, "name": claim}}})
    t0 = time.time()
    res = ctx.kube.many(pvs, lambda pv: ctx.kube.req("POST", "/api/v1/persistentvolumes", pv)[0], ctx.threads)
    ctx.static_pvs = True
    bad = [s for s in res if s not in (200, 201, 409)]
    if bad:
        raise RuntimeError("static PVs: %d creates failed (%s)" % (len(bad), bad[:3]))
    return time.time() - t0


def delete_static_pvs(ctx, ns):
    ctx.kube.req("DELETE", "/api/v1/persistentvolumes?labelSelector=" + urllib.parse.quote("rdc-bench-pv=" + ns))


def node_ready(n):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (n.get("status") or {}).get("conditions") or [])


def ensure_node_capacity(ctx, pods):
    """kwok nodes hold 110 pods each and the cluster starts with 3: add fake nodes
    (rdc-bench-node-*, removed at the end) until `pods` more pods fit."""
    st, lst = ctx.kube.req("GET", "/api/v1/nodes")
    if st != 200:
        return 0
    items = lst.get("items") or []
    cap = sum(int(((n.get("status") or {}).get("allocatable") or {}).get("pods", "0"))
              for n in items if node_ready(n) and not (n.get("spec") or {}).get("unschedulable"))
    st, pl = ctx.kube.req("GET", "/api/v1/pods?fieldSelector=" + urllib.parse.quote("spec.nodeName!="))
    used = len((pl or {}).get("items") or []) if st == 200 else 0
    missing = pods + 20 - (cap - used)
    if missing <= 0:
        return 0
    k = (missing + 109) // 110
    names = ["rdc-bench-node-%s-%d" % (ctx.run_id, i) for i in range(k)]
    for name in names:
        ctx.kube.req("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": "", "rdc-bench": "1"}}})
        ctx.nodes.append(name)

    def all_ready():
        st, lst = ctx.kube.req("GET", "/api/v1/nodes?labelSelector=rdc-bench%3D1")
        ready = {n["metadata"]["name"] for n in (lst or {}).get("items") or [] if node_ready(n)}
        return all(x in ready for x in names)
    ok = wait_until(all_ready, 120, 1.0)
    log("added %d kwok nodes for %d more pods (%s)" % (k, pods, "Ready" if ok else "NOT Ready after 120 s"))
    return k


def create_clusters(ctx, ns, names, sc, mode=None):
    """POST every RedisCluster on ctx.threads connections; returns {name: t response}."""
    path = RDC_PATH.format(ns=ns)

    def one(n):
        st, _ = ctx.kube.req("POST", path, rdc_manifest(n, ns, sc, mode=mode))
        return n, st, time.time()
    res = ctx.kube.many(names, one, ctx.threads)
    bad = [(n, s) for n, s, _ in res if s not in (200, 201)]
    if bad:
        raise RuntimeError("%d RedisCluster creates failed, e.g. %s" % (len(bad), bad[:3]))
    return {n: t for n, _, t in res}


def wait_until(pred, timeout, every=0.5, tick=None):
    end = time.time() + timeout
    while time.time() < end:
        if tick:
            tick()
        if pred():
            return True
        time.sleep(every)
    if tick:
        tick()
    return pred()


def storage_class(ctx):
    return STATIC_SC if ctx.storage == "static" else None


def depth_series(samples, t0):
    return [[round(s["t"] - t0, 1), s["depth"]] for s in samples]


def settle_metrics(op):
    """Children publish their metrics files every 2 s: wait for a fresh round."""
    time.sleep(2.6)
    return op.metrics()


def converge(ctx, ns, n, workers, tag, full_report=True, kind=None, storm=True, mode=None, until="running"):
    """Create n RedisClusters at once under an operator with `workers` workers and measure
    convergence; optionally go on with steady state, update storm and memory. until
    "children": stop waiting once every cluster's ConfigMap, Service and StatefulSet exist
    (the memory with N cached is taken then; no steady state, no storm)."""
    res = {"n": n, "workers": workers, "namespace": ns, "storage": ctx.storage, "sync_period": ctx.sync_period}
    create_namespace(ctx, ns)
    names = ["c%04d" % i for i in range(n)]
    sc = storage_class(ctx)
    res["nodes_added"] = ensure_node_capacity(ctx, 3 * n)
    if ctx.storage == "static":
        res["static_pv_seconds"] = r3(ensure_static_storage(ctx, ns, names))
    budget = env_float("BENCH_CONVERGE_TIMEOUT", 180 + 4.0 * n)
    w = Watch(ctx, ns, max_seconds=budget * 3 + 900)
    if not w.wait_synced(30):
        raise RuntimeError("the watch process did not sync")
    op = (kind or Operator)(ctx, tag, ns, workers)
    if not op.wait_ready(60):
        raise RuntimeError("operator %s not ready/leader; see %s" % (tag, op.logpath))
    res["operator_ready_seconds"] = r3(time.time() - op.t_start)
    tr = w.tr
    try:
        if full_report:
            time.sleep(3)
            res["memory_idle"] = memory_of(op.pid)
        op.sampler()
        m0 = settle_metrics(op)
        c0 = ctx.cpu.sample()
        oc0 = {p: proc_cpu(p) for p in descendants(op.pid)}
        t_begin = time.time()
        created = create_clusters(ctx, ns, names, sc, mode=mode)
        t_created_all = time.time()
        res["create_seconds"] = r3(t_created_all - t_begin)
        log("%s: %d RedisClusters created in %.1fs; waiting for Running (budget %ds)" %
            (tag, n, t_created_all - t_begin, budget))

        def all_running():
            return all(tr.obj["rdc"].get(x, {}).get("run", {}).get("1") for x in names)

        last_log = [time.time()]

        def progress():
            tr.poll()
            if time.time() - last_log[0] > 15:
                last_log[0] = time.time()
                run = sum(1 for x in names if tr.obj["rdc"].get(x, {}).get("run", {}).get("1"))
                pvcb = sum(1 for o in tr.obj["pvc"].values() if "bound" in o)
                rdy = sum(1 for o in tr.obj["pod"].values() if "ready" in o)
                log("%s: %d/%d Running, %d/%d PVCs bound, %d/%d pods ready, queue depth %s" %
                    (tag, run, n, pvcb, 3 * n, rdy, 3 * n, op.samples[-1]["depth"] if op.samples else "?"))
        def all_children():
            return all(tr.obj[k].get(x, {}).get("first") for x in names for k in ("cm", "svc", "sts"))
        ok = wait_until(all_children if until == "children" else all_running, budget, 0.5, progress)
        t_conv = time.time()
        res["converged"] = ok
        m1 = settle_metrics(op)
        c1 = ctx.cpu.sample()
        oc1 = {p: proc_cpu(p) for p in descendants(op.pid)}
        tr.poll()
        # per-cluster latencies, from the POST's response to the first sighting
        lat_children, lat_running, lat_fin = [], [], []
        for x in names:
            t0 = created[x]
            kids = [tr.obj[k].get(x, {}).get("first") for k in ("cm", "svc", "sts")]
            if all(kids):
                lat_children.append(max(kids) - t0)
            r = tr.obj["rdc"].get(x, {})
            if r.get("fin"):
                lat_fin.append(r["fin"] - t0)
            if r.get("run", {}).get("1"):
                lat_running.append(r["run"]["1"] - t0)
        last_run = max((tr.obj["rdc"][x]["run"]["1"] for x in names
                        if tr.obj["rdc"].get(x, {}).get("run", {}).get("1")), default=None)
        last_child = max((tr.obj["sts"][x]["first"] for x in names if x in tr.obj["sts"]), default=None)
        res["convergence"] = {
            "all_running": ok, "running": len(lat_running),
            "seconds_to_all_running": r3(last_run - t_begin) if last_run and ok else None,
            "seconds_to_all_children": r3(last_child - t_begin) if last_child and len(lat_children) == n else None,
            "create_to_finalizer": dist(lat_fin),
            "create_to_children": dist(lat_children),
            "create_to_running": dist(lat_running),
        }
        # the control plane's own pipeline: claim -> bound, pod -> scheduled -> ready
        pvc_bind = [o["bound"] - o["first"] for o in tr.obj["pvc"].values() if "bound" in o and not o["listed"]]
        pod_ready = [o["ready"] - o["first"] for o in tr.obj["pod"].values() if "ready" in o and not o["listed"]]
        pvc_firsts = sorted(o["first"] for o in tr.obj["pvc"].values())
        pvc_bounds = sorted(o["bound"] for o in tr.obj["pvc"].values() if "bound" in o)
        res["control_plane"] = {
            "pvc_create_to_bound": dist(pvc_bind), "pod_create_to_ready": dist(pod_ready),
            "pvcs_bound": len(pvc_bounds),
            "pvc_bind_rate_per_s": r3(len(pvc_bounds) / (pvc_bounds[-1] - pvc_firsts[0]))
            if len(pvc_bounds) > 1 and pvc_bounds[-1] > pvc_firsts[0] else None,
            "cpu_seconds": ClusterCPU.delta(c0, c1),
            "window_seconds": r3(t_conv - t_begin),
        }
        res["cost"] = cost(m0, m1, n)
        res["operator_cpu_seconds"] = {k: r3(v) for k, v in delta_dict(cpu_by_child(m0), cpu_by_child(m1)).items()}
        res["operator_cpu_seconds_total"] = r3(sum(v for v in (oc1.get(p, 0) - (oc0.get(p) or 0)
                                                            for p in oc1 if oc1.get(p) is not None)))
        win = [s for s in op.samples if t_begin <= s["t"] <= t_conv]
        res["workqueue"] = {"max_depth": max((s["depth"] for s in win), default=None),
                            "series": depth_series(win, t_begin)}
        res["log"] = log_summary(op.logpath, t_begin, t_conv)
        # the operator's own throughput: write requests per second until every child exists
        # (after that it only waits for the control plane and reports status)
        if last_child:
            w0 = [x["writes"] for x in op.samples if x["t"] <= t_begin]
            w1 = [x["writes"] for x in op.samples if x["t"] <= last_child + 2.5]
            if w0 and w1:
                res["writes_per_second_until_children"] = r3((w1[-1] - w0[-1]) / (last_child - t_begin))
            # the same without the Events, which have a budget of their own (a
            # controller-runtime manager's recorder has its own client and limiter)
            # (the recorder's counter appears with its first Event: absent before it is 0,
            # but it must be there at the end, or nothing is said)
            e0 = [x.get("events") for x in op.samples if x["t"] <= t_begin]
            e1 = [x.get("events") for x in op.samples if x["t"] <= last_child + 2.5]
            if w0 and w1 and e1 and e1[-1] is not None:
                res["object_writes_per_second_until_children"] = r3(
                    ((w1[-1] - e1[-1]) - (w0[-1] - ((e0[-1] if e0 else None) or 0))) / (last_child - t_begin))
        wr = res["cost"]["writes_total"]
        res["writes_per_second"] = r3(wr / (t_conv - t_begin)) if t_conv > t_begin else None
        if not full_report:
            return res
        if until == "children":
            time.sleep(5)  # the informers' last events in
        res["memory_loaded"] = memory_of(op.pid)
        idle = res.get("memory_idle")
        if idle and n:
            # Marginal memory per cached cluster: what N clusters add to the idle operator.
            res["pss_per_cluster_kib"] = r3((res["memory_loaded"]["pss_kb_total"] - idle["pss_kb_total"]) / n)
            res["uss_per_cluster_kib"] = r3((res["memory_loaded"]["uss_kb_total"] - idle["uss_kb_total"]) / n)
        if not ok or until == "children":
            return res
        if env_int("STEADY_STATE", 1):
            res["steady_state"] = steady_state(ctx, op, n)
        if storm and env_int("UPDATE_STORM", 1):
            res["update_storm"] = update_storm(ctx, op, tr, ns, names)
        return res
    finally:
        res["teardown"] = teardown(ctx, op, w, ns, names)
        res["operator_log"] = op.logpath


def log_summary(path, t0, t1):
    """From the operator's JSON log, between t0 and t1: the reconcile durations and write
    counts workerd reports, and the warnings/errors by message."""
    secs, wr, warns = [], [], {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                try:
                    e = json.loads(line)
                    t = datetime.datetime.strptime(e["ts"][:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
                    t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
                except (ValueError, KeyError):
                    continue
                if not t0 <= t <= t1:
                    continue
                if e.get("msg") == "reconciled":
                    try:
                        secs.append(float(e.get("seconds", "nan")))
                        wr.append(int(e.get("writes", "0")))
                    except ValueError:
                        pass
                if e.get("level") in ("warn", "error"):
                    k = "%s %s: %s" % (e.get("level"), e.get("logger"), e.get("msg"))
                    warns[k] = warns.get(k, 0) + 1
    except OSError:
        pass
    return {"reconcile_seconds": dist(secs), "reconciles_logged": len(secs),
            "reconciles_with_writes": sum(1 for x in wr if x), "writes_logged": sum(wr), "warnings": warns}


def cost(m0, m1, n):
    d = delta_dict(requests_by(m0), requests_by(m1))
    by = {}
    for (child, method), v in sorted(d.items(), key=lambda kv: str(kv[0])):
        if v:
            by.setdefault(child, {})[method] = int(v)
    codes = delta_dict(requests_by(m0, lambda lab: (lab.get("method"), lab.get("code"))),
                       requests_by(m1, lambda lab: (lab.get("method"), lab.get("code"))))
    rec = msum(m1, "controller_runtime_reconcile_total") - msum(m0, "controller_runtime_reconcile_total")
    errs = (msum(m1, "controller_runtime_reconcile_errors_total") -
            msum(m0, "controller_runtime_reconcile_errors_total"))
    w = by.get("workerd", {})
    wtotal = writes(m1) - writes(m0)
    ev0, ev1 = event_writes(m0), event_writes(m1)
    ev = ev1 - (ev0 or 0) if ev1 is not None else None
    ewait = (msum(m1, "event_recorder_limiter_wait_seconds_total") -
             msum(m0, "event_recorder_limiter_wait_seconds_total")) if ev is not None else None

    def hist(name, child):
        ssum = (msum(m1, name + "_sum", lambda lab: child_class(lab.get("child")) == child) -
                msum(m0, name + "_sum", lambda lab: child_class(lab.get("child")) == child))
        cnt = (msum(m1, name + "_count", lambda lab: child_class(lab.get("child")) == child) -
               msum(m0, name + "_count", lambda lab: child_class(lab.get("child")) == child))
        return ssum, cnt
    lat_s, lat_n = hist("rest_client_request_duration_seconds", "workerd")
    thr_s, _ = hist("rest_client_rate_limiter_duration_seconds", "workerd")
    rt_s, rt_n = hist("controller_runtime_reconcile_time_seconds", "workerd")
    # Child changes that queued nothing: only fields no plan reads changed (docs/projections.md).
    skipped = {}
    for name, lab, v in m1:
        if name == "informer_enqueue_skipped_total":
            skipped[lab.get("kind")] = skipped.get(lab.get("kind"), 0) + v
    for name, lab, v in m0:
        if name == "informer_enqueue_skipped_total":
            skipped[lab.get("kind")] = skipped.get(lab.get("kind"), 0) - v
    skipped_total = sum(skipped.values())
    # The echoes of its own writes that queued nothing (informerd/echo.h): the
    # RedisCluster's and, since the children's echoes are told, its children's.
    sign = {"own": 1, "deferred": 1, "deferred_queued": -1,
            "child_own": 1, "child_deferred": 1, "child_deferred_queued": -1}
    echoes = (sum(sign.get(lab.get("result"), 0) * v for name, lab, v in m1 if name == "informer_own_echoes_total") -
              sum(sign.get(lab.get("result"), 0) * v for name, lab, v in m0 if name == "informer_own_echoes_total"))
    adds = queue_adds(m0, m1, n)
    return {
        "queue_adds_per_cluster": adds,
        "queue_adds_queued_per_cluster": r3(sum(c["queued"] for c in adds.values())) if adds else None,
        "own_echoes_skipped_per_cluster": r3(echoes / n) if n else None,
        "enqueues_skipped": {k: int(v) for k, v in sorted(skipped.items()) if v},
        "enqueues_skipped_per_cluster": r3(skipped_total / n) if n else None,
        "worker_request_mean_ms": r3(1000 * lat_s / lat_n) if lat_n else None,
        "worker_request_seconds_total": r3(lat_s),
        "worker_rate_limiter_wait_seconds_total": r3(thr_s),
        "reconcile_mean_seconds": r3(rt_s / rt_n) if rt_n else None,
        "requests": by,
        "codes": {"%s %s" % k: int(v) for k, v in sorted(codes.items(), key=lambda kv: str(kv[0])) if v},
        "reconciles": int(rec), "reconcile_errors": int(errs),
        "reconciles_per_cluster": r3(rec / n) if n else None,
        "writes_total": int(wtotal),
        "writes_per_cluster": r3(wtotal / n) if n else None,
        "event_writes_per_cluster": r3(ev / n) if n and ev is not None else None,
        "object_writes_per_cluster": r3((wtotal - ev) / n) if n and ev is not None else None,
        "worker_event_limiter_wait_seconds_total": r3(ewait) if ewait is not None else None,
        "worker_patch_per_cluster": r3(w.get("PATCH", 0) / n) if n else None,
        "worker_post_per_cluster": r3(w.get("POST", 0) / n) if n else None,
        "worker_get_per_cluster": r3(w.get("GET", 0) / n) if n else None,
    }


def steady_state(ctx, op, n):
    """After convergence: wait for one periodic resync of every cluster and count what it
    cost. Bounded by the sync period plus a margin."""
    period = sync_seconds(ctx.sync_period)
    s0 = op.metrics()
    r0 = msum(s0, "controller_runtime_reconcile_total")
    t0 = time.time()
    limit = period + 30 + 0.05 * n
    log("steady state: waiting for a resync of %d clusters (sync period %s, at most %ds)" % (n, ctx.sync_period, limit))

    def resynced():
        ms = op.metrics()
        return (msum(ms, "controller_runtime_reconcile_total") - r0 >= n and
                msum(ms, "workqueue_depth") == 0)
    ok = wait_until(resynced, limit, 1.0)
    t_done = time.time()
    # a window of at least one whole sync period, so CPU figures cover a known span
    rest = t0 + period + 2 - time.time()
    if rest > 0:
        time.sleep(rest)
    s1 = settle_metrics(op)
    t1 = time.time()
    win = [s for s in op.samples if t0 <= s["t"] <= t1]
    cpu = delta_dict(cpu_by_child(s0), cpu_by_child(s1))
    return {
        "resync_seen": ok, "window_seconds": r3(t1 - t0), "resync_done_after_seconds": r3(t_done - t0),
        "reconciles": int(msum(s1, "controller_runtime_reconcile_total") - r0),
        "write_requests": int(writes(s1) - writes(s0)),
        "lease_writes": int(writes(s1, True) - writes(s0, True) - (writes(s1) - writes(s0))),
        "requests": {"%s %s" % k: int(v) for k, v in delta_dict(requests_by(s0), requests_by(s1)).items() if v},
        "cpu_seconds": {k: r3(v) for k, v in cpu.items()},
        "cpu_seconds_total": r3(sum(cpu.values())),
        "cpu_percent_of_one_core": {k: r3(100 * v / (t1 - t0)) for k, v in cpu.items()},
        "workqueue_max_depth": max((s["depth"] for s in win), default=None),
        "workqueue_series": depth_series(win, t0),
        "log": log_summary(op.logpath, t0, t1),
    }


def update_storm(ctx, op, tr, ns, names):
    """Change spec.config.maxmemory of every cluster at once; time until each one's
    StatefulSet carries a new config hash and the cluster is Running at the new generation."""
    tr.poll()
    before = {}
    for x in names:
        r, s = tr.obj["rdc"][x]["cur"], tr.obj["sts"][x]["cur"]
        before[x] = (r.get("gen"), s.get("h"))
    n = len(names)
    m0 = op.metrics()
    t_begin = time.time()
    path = RDC_PATH.format(ns=ns)

    def one(x):
        st, body = ctx.kube.req("PATCH", "%s/%s" % (path, x), {"spec": {"config": {"maxmemory": "512mb"}}},
                                "application/merge-patch+json")
        gen = ((body or {}).get("metadata") or {}).get("generation")
        return x, st, time.time(), gen
    res = ctx.kube.many(names, one, ctx.threads)
    patched = {x: (t, g) for x, st, t, g in res if st == 200}
    t_patched = time.time()

    def rolled(x):
        if x not in patched:
            return None
        t, g = patched[x]
        sts = tr.obj["sts"].get(x, {})
        new = [ts for h, ts in sts.get("hash", {}).items() if h != before[x][1]]
        run = tr.obj["rdc"].get(x, {}).get("run", {}).get(str(g))
        if not new or not run:
            return None
        return min(new), run

    budget = env_float("BENCH_UPDATE_TIMEOUT", 180 + 3.0 * n)
    last_log = [time.time()]

    def tick():
        tr.poll()
        if time.time() - last_log[0] > 15:
            last_log[0] = time.time()
            log("update storm: %d/%d rolled" % (sum(1 for x in names if rolled(x)), n))
    ok = wait_until(lambda: all(rolled(x) for x in names), budget, 0.5, tick)
    t_end = time.time()
    m1 = settle_metrics(op)
    to_hash, to_run = [], []
    last = None
    for x in names:
        rr = rolled(x)
        if rr:
            to_hash.append(rr[0] - patched[x][0])
            to_run.append(rr[1] - patched[x][0])
            last = max(last or 0, rr[1])
    win = [s for s in op.samples if t_begin <= s["t"] <= t_end]
    return {
        "patched": len(patched), "patch_seconds": r3(t_patched - t_begin), "all_rolled": ok, "rolled": len(to_run),
        "seconds_to_all_rolled": r3(last - t_begin) if ok and last else None,
        "patch_to_new_hash": dist(to_hash), "patch_to_running": dist(to_run),
        "cost": cost(m0, m1, n),
        "workqueue_max_depth": max((s["depth"] for s in win), default=None),
        "cpu_seconds_total": r3(sum(delta_dict(cpu_by_child(m0), cpu_by_child(m1)).values())),
        "log": log_summary(op.logpath, t_begin, t_end),
    }


def teardown(ctx, op, w, ns, names):
    """Delete every RedisCluster while the operator still runs (its finalizer), time it,
    then stop the operator and delete the namespace (bounded waits)."""
    out = {}
    if ctx.interrupted:   # quick: stop, take the finalizers off, delete without waiting
        op.stop(10)
        w.stop()
        force_cleanup(ctx, ns)
        return out
    try:
        if op.alive() and names:
            tr = w.tr
            t0 = time.time()
            path = RDC_PATH.format(ns=ns)
            ctx.kube.many(names, lambda x: ctx.kube.req("DELETE", "%s/%s" % (path, x))[0], ctx.threads)
            ok = wait_until(lambda: all(x not in tr.obj["rdc"] or "gone" in tr.obj["rdc"][x] for x in names),
                            env_float("BENCH_DELETE_TIMEOUT", 60 + 1.0 * len(names)), 0.5, tr.poll)
            out["delete_all_seconds"] = r3(time.time() - t0) if ok else None
        rc, secs = op.stop(45)
        out["operator_exit_code"], out["operator_stop_seconds"] = rc, r3(secs)
    finally:
        w.stop()
        if ctx.storage == "static":
            delete_static_pvs(ctx, ns)
        out["namespace_delete_seconds"] = r3(delete_namespace(ctx, ns, env_float("BENCH_NS_TIMEOUT", 180)))
    return out


# ------------------------------------------------------------------ side by side

VS_FIGURES = [
    # (key, label, path in a converge result, lower is better)
    ("children_s", "time to all children (s)", ("convergence", "seconds_to_all_children")),
    ("running_s", "time to all Running (s)", ("convergence", "seconds_to_all_running")),
    ("children_p50_s", "create → children p50 (s)", ("convergence", "create_to_children", "p50")),
    ("writes_per_s", "writes/s until all children", ("writes_per_second_until_children",)),
    ("object_writes_per_s", "of which object writes/s (Events apart)", ("object_writes_per_second_until_children",)),
    ("writes_per_cluster", "write requests per cluster", ("cost", "writes_per_cluster")),
    ("object_writes_per_cluster", "of which object writes (Events apart)", ("cost", "object_writes_per_cluster")),
    ("event_writes_per_cluster", "of which Event requests", ("cost", "event_writes_per_cluster")),
    ("posts_per_cluster", "of which POST per cluster", ("cost", "worker_post_per_cluster")),
    ("limiter_wait_s", "time waiting for the client limiter (s)", ("cost", "worker_rate_limiter_wait_seconds_total")),
    ("reconciles_per_cluster", "reconciles per cluster", ("cost", "reconciles_per_cluster")),
    ("skipped_per_cluster", "child changes that queued nothing, per cluster", ("cost", "enqueues_skipped_per_cluster")),
    ("echoes_per_cluster", "own-write echoes that queued nothing, per cluster", ("cost", "own_echoes_skipped_per_cluster")),
    ("queued_per_cluster", "queue adds that made a reconcile, per cluster", ("cost", "queue_adds_queued_per_cluster")),
    ("pss_idle_mib", "PSS idle, whole operator (MiB)", ("memory_idle", "pss_kb_total")),
    ("pss_loaded_mib", "PSS with N cached (MiB)", ("memory_loaded", "pss_kb_total")),
    ("uss_idle_mib", "USS idle, whole operator (MiB)", ("memory_idle", "uss_kb_total")),
    ("uss_loaded_mib", "USS with N cached (MiB)", ("memory_loaded", "uss_kb_total")),
    ("pss_per_cluster_kib", "marginal PSS per cached cluster (KiB)", ("pss_per_cluster_kib",)),
    ("uss_per_cluster_kib", "marginal USS per cached cluster (KiB)", ("uss_per_cluster_kib",)),
    ("cpu_s", "CPU seconds during convergence", ("operator_cpu_seconds_total",)),
    ("resync_writes", "resync: write requests", ("steady_state", "write_requests")),
    ("resync_cpu_s", "resync: CPU seconds", ("steady_state", "cpu_seconds_total")),
]


def vs_value(res, key, path):
    v = g(res, *path)
    if v is None:
        return None
    if key.endswith("_mib"):
        return round(v / 1024.0, 1)
    return v


def versus(ctx, n, workers, tag="vs"):
    """Ours and the controller-runtime peer (bench/peer) side by side: VS_TRIALS trials each,
    alternated (ours, peer, ours, peer...) so that the machine's drift hits both alike, each
    in a namespace of its own, same N, workers, QPS/burst, storage and sync period. The
    update storm is left out (the peer rolls no config hash)."""
    trials = env_int("VS_TRIALS", 2)
    # The peer does the guide's job (ConfigMap, Service, StatefulSet, status): the same
    # job for ours is Standalone. Replication adds role Services, pod labels and Redis
    # commands the peer has no part of (VS_MODE=Replication measures it anyway).
    mode = env_str("VS_MODE", "Standalone")
    # VS_UNTIL=children: each trial ends once every child exists (for a large N, where
    # the control plane takes long to make pods Ready: time to all children and the memory
    # with N cached, no Running, resync or update figures).
    until = env_str("VS_UNTIL", "running")
    out = {"n": n, "workers": workers, "trials": trials, "qps_burst": "%s/%s" % (ctx.qps or "20", ctx.burst or "30"),
           "mode": mode, "until": until, "peer_limiter": env_str("VS_PEER_LIMITER", "shared"),
           "ours": [], "peer": []}
    for t in range(trials):
        for side, kind in (("ours", Operator), ("peer", Peer)):
            log("== side by side, trial %d/%d: %s (N=%d, %d workers)" % (t + 1, trials, side, n, workers))
            name = "%s-%s%d" % (tag, side, t)
            res = converge(ctx, ctx.ns(name), n, workers, name, kind=kind, storm=False, mode=mode, until=until)
            out[side].append(res)
    out["medians"] = {}
    for key, _label, path in VS_FIGURES:
        med = {}
        for side in ("ours", "peer"):
            xs = [vs_value(r, key, path) for r in out[side]]
            xs = [x for x in xs if x is not None]
            med[side] = r3(pct(xs, 50)) if xs else None
        o, p_ = med["ours"], med["peer"]
        med["peer_over_ours"] = r3(p_ / o) if o and p_ is not None else None
        out["medians"][key] = med
    return out


def vs_markdown(L, V):
    L.append("Side by side with controller-runtime (bench/peer: rdc-peer), N=%d, %d workers, QPS/burst %s "
             "(the peer's limiter: %s), spec.mode %s, %d trials each%s, alternated; medians; ratio = peer / ours "
             "(> 1: ours lower):" %
             (V["n"], V["workers"], V["qps_burst"], V.get("peer_limiter") or "per-kind",
              V.get("mode") or "(the CRD's default)", V["trials"],
              " (each ends once every child exists)" if V.get("until") == "children" else ""))
    L.append("")
    rows = []
    for key, label, _path in VS_FIGURES:
        m = V["medians"].get(key, {})
        per = lambda side: " / ".join(fmt(vs_value(r, key, _path)) for r in V[side])  # noqa: E731
        rows.append([label, fmt(m.get("ours")), fmt(m.get("peer")), fmt(m.get("peer_over_ours")),
                     per("ours"), per("peer")])
    table(L, ["figure", "ours", "controller-runtime", "peer / ours", "ours, each trial", "peer, each trial"], rows)
    queue_adds_markdown(L, V["ours"])


def fmt_adds(c):
    return " / ".join(fmt(c.get(r)) for r in QUEUE_ADD_RESULTS)


def queue_adds_markdown(L, runs):
    """Ours' queue adds per cluster by cause (informer_queue_adds_total), one column per
    trial: queued / merged / dropped."""
    per = [g(r, "cost", "queue_adds_per_cluster") or {} for r in runs]
    causes = []
    for p in per:
        causes += [c for c in p if c not in causes]
    if not causes:
        return
    L.append("Ours: work queue adds per cluster by cause, each trial's queued (a reconcile) / merged (into a "
             "key already due) / dropped (a delayed add a hand-out overtook):")
    L.append("")
    rows = [[c] + [fmt_adds(p[c]) if c in p else "—" for p in per] for c in causes]
    rows.append(["**all**"] + [fmt_adds({r: r3(sum(x[r] for x in p.values())) for r in QUEUE_ADD_RESULTS})
                               for p in per])
    table(L, ["cause"] + ["trial %d" % (i + 1) for i in range(len(per))], rows)


# ------------------------------------------------------------------ failover

def failover(ctx):
    """Two supervisors on one Lease; the leader is stopped three ways. For each: time from
    the signal to the Lease changing hands and to the new leader's first write, which is
    the finalizer patch of a RedisCluster created as soon as the old holder is gone (it
    cannot have been written by the old leader)."""
    ns = ctx.ns("failover")
    create_namespace(ctx, ns)
    w = Watch(ctx, ns, max_seconds=900, kinds="rdc,lease")
    w.wait_synced(30)
    tr = w.tr
    ops = []
    trials = []
    out = {"namespace": ns, "lease": "defaults: duration 15s, renew deadline 10s, retry period 2s", "trials": trials}
    try:
        a = Operator(ctx, "fo-a", ns, 1)
        ops.append(a)
        if not a.wait_ready(60):
            raise RuntimeError("failover: first supervisor never led; see " + a.logpath)
        b = Operator(ctx, "fo-b", ns, 1)
        ops.append(b)
        if not b.wait_ready(60, leader=False):
            raise RuntimeError("failover: second supervisor not ready; see " + b.logpath)
        path = RDC_PATH.format(ns=ns)
        gen = 0
        for kind in env_str("FAILOVER_TRIALS", "sigterm sigkill-pod sigkill-supervisor").split():
            gen += 1
            live = [o for o in ops if o.alive()]
            # leader_election_master_status comes from electord's metrics file (every 2 s)
            wait_until(lambda: len([o for o in live if o.is_leader()]) == 1, 30, 0.5)
            leader = [o for o in live if o.is_leader()]
            if len(leader) != 1 or len(live) != 2:
                trials.append({"kind": kind, "error": "expected 1 leader of 2, got %d of %d" % (len(leader), len(live))})
                break
            old = leader[0]
            new = [o for o in live if o is not old][0]
            exited = {}

            def reaper(p=old.p):
                try:
                    exited["rc"] = p.wait(timeout=90)
                    exited["t"] = time.time()
                except subprocess.TimeoutExpired:
                    pass
            time.sleep(3)  # the standby's cache is warm and the renewals are steady
            tr.poll()
            holder0 = tr.lease_hist[-1][1] if tr.lease_hist else None
            th = threading.Thread(target=reaper, daemon=True)
            th.start()
            t_kill = time.time()
            if kind == "sigterm":
                os.kill(old.pid, signal.SIGTERM)
            elif kind == "sigkill-pod":     # the whole pod dies at once: supervisor and children
                os.killpg(old.pid, signal.SIGKILL)
            elif kind == "sigkill-supervisor":   # only PID 1; children get PDEATHSIG=SIGTERM
                os.kill(old.pid, signal.SIGKILL)
            # the old holder is gone once the Lease names someone else (or no one)
            wait_until(lambda: any(t >= t_kill and h != holder0 for t, h in tr.lease_hist), 60, 0.05, tr.poll)
            t_gone = next((t for t, h in tr.lease_hist if t >= t_kill and h != holder0), None)
            name = "fo-%d" % gen
            st, _ = ctx.kube.req("POST", path, rdc_manifest(name, ns, storage_class(ctx)))
            t_probe = time.time()
            wait_until(lambda: tr.obj["rdc"].get(name, {}).get("fin"), 60, 0.05, tr.poll)
            t_write = tr.obj["rdc"].get(name, {}).get("fin")
            t_new = next((t for t, h in tr.lease_hist if t >= t_kill and h and h != holder0), None)
            th.join(60)
            rc, t_exit = exited.get("rc"), exited.get("t")
            old.stop(5)
            trial = {"kind": kind, "probe_create_status": st,
                     "old_holder_gone_s": r3(t_gone - t_kill) if t_gone else None,
                     "new_holder_s": r3(t_new - t_kill) if t_new else None,
                     "first_write_s": r3(t_write - t_kill) if t_write else None,
                     "probe_created_s": r3(t_probe - t_kill),
                     "old_exit_code": rc, "old_exit_s": r3(t_exit - t_kill) if t_exit else None,
                     "new_leader_pid": new.pid}
            trials.append(trial)
            log("failover %s: %s" % (kind, trial))
            # a fresh standby for the next trial
            nxt = Operator(ctx, "fo-%s-%d" % ("ab"[gen % 2], gen), ns, 1)
            ops.append(nxt)
            if not nxt.wait_ready(60, leader=False):
                trials.append({"kind": "restart", "error": "standby not ready; see " + nxt.logpath})
                break
        # clean up the probe clusters while a leader runs (finalizers)
        names = [n for n in tr.obj["rdc"]]
        ctx.kube.many(names, lambda x: ctx.kube.req("DELETE", "%s/%s" % (path, x))[0], ctx.threads)
        wait_until(lambda: all("gone" in tr.obj["rdc"][x] for x in names), 60, 0.5, tr.poll)
    finally:
        for o in ops:
            o.stop(45)
        w.stop()
        out["namespace_delete_seconds"] = r3(delete_namespace(ctx, ns, 120))
    return out


# ------------------------------------------------------------------ volume binding

def provisioner(ctx, k):
    """How fast claims get bound, without the operator: k PVCs of the cluster's default
    class (the fake provisioner, a bash loop over kubectl and jq) and k PVCs pre-bound to
    static PVs (what STORAGE=static uses). Bounded by PROV_TIMEOUT."""
    out = {"claims": k}
    for mode in ("dynamic", "static"):
        ns = ctx.ns("pv" + mode[0])
        create_namespace(ctx, ns)
        w = Watch(ctx, ns, max_seconds=900, kinds="pvc")
        w.wait_synced(30)
        tr = w.tr
        names = ["p%03d" % i for i in range(k)]
        try:
            if mode == "static":
                ctx.kube.req("POST", "/apis/storage.k8s.io/v1/storageclasses",
                             {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                              "metadata": {"name": STATIC_SC}, "provisioner": "kubernetes.io/no-provisioner",
                              "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate"})
                ctx.static_pvs = True
                ctx.kube.many(names, lambda x: ctx.kube.req("POST", "/api/v1/persistentvolumes", {
                    "apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": "rdc-bench-%s-%s" % (ns, x), "labels": {"rdc-bench-pv": ns}},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                             "persistentVolumeReclaimPolicy": "Retain", "storageClassName": STATIC_SC,
                             "hostPath": {"path": "/tmp/rdc-fake-pv/bench/" + x, "type": ""},
                             "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                          "namespace": ns, "name": x}}})[0], ctx.threads)
            spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            if mode == "static":
                spec["storageClassName"] = STATIC_SC
            c0 = ctx.cpu.sample()
            t0 = time.time()
            ctx.kube.many(names, lambda x: ctx.kube.req("POST", "/api/v1/namespaces/%s/persistentvolumeclaims" % ns, {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": x, "namespace": ns},
                "spec": spec})[0], ctx.threads)
            ok = wait_until(lambda: all("bound" in tr.obj["pvc"].get(x, {}) for x in names),
                            env_float("PROV_TIMEOUT", 60 + 5 * k), 0.5, tr.poll)
            t1 = time.time()
            c1 = ctx.cpu.sample()
            bound = [tr.obj["pvc"][x]["bound"] - t0 for x in names if "bound" in tr.obj["pvc"].get(x, {})]
            out[mode] = {"all_bound": ok, "bound": len(bound), "seconds": r3(max(bound) if bound else t1 - t0),
                         "claims_per_second": r3(len(bound) / max(bound)) if bound else 0.0,
                         "create_to_bound": dist(bound),
                         "cpu_seconds": ClusterCPU.delta(c0, c1)}
            log("volume binding, %s: %s" % (mode, out[mode]))
        finally:
            w.stop()
            if mode == "static":
                delete_static_pvs(ctx, ns)
            ctx.kube.req("DELETE", "/api/v1/namespaces/%s" % ns)
            ctx.namespaces.remove(ns)
    return out


# ------------------------------------------------------------------ raw client

def raw_limit(ctx, n):
    """The same writes done by bench/rawapply (one process, no cache, pipelined)."""
    exe = env_str("RAWAPPLY", os.path.join(ctx.top, "bench", ".build", "rawapply"))
    ns = ctx.ns("raw")
    create_namespace(ctx, ns)
    names = ["c%04d" % i for i in range(n)]
    out = {"namespace": ns, "n": n}
    try:
        if ctx.storage == "static":
            ensure_static_storage(ctx, ns, names)
        c0 = ctx.cpu.sample()
        args = [exe, "--kubeconfig", ctx.kubeconfig, "--namespace", ns, "--count", str(n),
                "--concurrency", env_str("RAW_CONCURRENCY", "100"), "--http", env_str("RAW_HTTP", "2")]
        if storage_class(ctx):
            args += ["--storage-class", storage_class(ctx)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=600)
        c1 = ctx.cpu.sample()
        if p.returncode != 0:
            out["error"] = (p.stderr or "")[-2000:]
        else:
            out.update(json.loads(p.stdout))
        out["control_plane_cpu_seconds"] = ClusterCPU.delta(c0, c1)
        # no operator here: take the finalizers off, then the namespace can go
        path = RDC_PATH.format(ns=ns)
        ctx.kube.many(names, lambda x: ctx.kube.req("PATCH", "%s/%s" % (path, x),
                                                   {"metadata": {"finalizers": None}},
                                                   "application/merge-patch+json")[0], ctx.threads)
    finally:
        if ctx.storage == "static":
            delete_static_pvs(ctx, ns)
        out["namespace_delete_seconds"] = r3(delete_namespace(ctx, ns, env_float("BENCH_NS_TIMEOUT", 180)))
    return out


# ------------------------------------------------------------------ report

def fmt(x, unit=""):
    if x is None:
        return "—"
    if isinstance(x, float):
        x = ("%.3f" % x).rstrip("0").rstrip(".") if abs(x) < 10 else "%.1f" % x
    return "%s%s" % (x, unit)


def fdist(d, unit=" s"):
    if not d or not d.get("n"):
        return "—"
    return "%s / %s / %s%s" % (fmt(d["p50"]), fmt(d["p95"]), fmt(d["p99"]), unit)


def kb_mib(kb):
    return None if kb is None else kb / 1024.0


def g(d, *path):
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def table(L, header, rows):
    L.append("| " + " | ".join(header) + " |")
    L.append("|" + "---|" * len(header))
    for r in rows:
        L.append("| " + " | ".join(str(x) for x in r) + " |")
    L.append("")


def markdown(R):
    L = []
    m = R["machine"]
    cfg = R["config"]
    L.append("## rdc-operator benchmark — %s, commit %s" % (R["date"], R["commit"]))
    L.append("")
    L.append("Machine: %s cores, %s GiB RAM, kernel %s; load average at start %s, at end %s; "
             "%s other kube-apiserver(s) running on the machine. Storage: %s. Operator client QPS/burst "
             "(the whole operator's; the side-by-side tables name their own): %s. Controller manager and scheduler: %s. Sync period: %s. Elapsed: %s s." %
             (m["cpus"], m["mem_gib"], m.get("kernel"), m["loadavg_start"], m.get("loadavg_end", "?"),
              m["other_apiservers"], cfg["storage"], cfg["qps_burst"],
              {True: "default client QPS limits (20/30, 50/100)", False: "client QPS limits lifted (5000/10000)"}
              .get(cfg.get("control_plane_qps_limits"), "?"), cfg["sync_period"],
              fmt(R.get("elapsed_seconds"))))
    las = [x[1] for x in m.get("loadavg_1m_series") or []]
    if las:
        L.append("1-minute load average during the run: min %s, median %s, max %s (%d samples, every 15 s)." %
                 (fmt(min(las)), fmt(pct(las, 50)), fmt(max(las)), len(las)))
    L.append("")
    if R.get("error"):
        L.append("**Run failed:** %s" % R["error"])
        L.append("")
    runs = [(k, R[k]) for k in sorted((k for k in R if k.startswith("converge_")), key=lambda k: int(k.split("_")[1]))]
    if runs:
        hdr = ["figure"] + ["N=%d, %d workers%s" % (c["n"], c["workers"], ", sync %s" % c["sync_period"]
                                                      if c.get("sync_period") else "") for _, c in runs]
        rows = []

        def row(label, fn):
            rows.append([label] + [fn(c) for _, c in runs])
        row("all Running after (s)", lambda c: "%s (%d/%d)" % (fmt(g(c, "convergence", "seconds_to_all_running")),
                                                               g(c, "convergence", "running") or 0, c["n"]))
        row("all children exist after (s)", lambda c: fmt(g(c, "convergence", "seconds_to_all_children")))
        row("create → finalizer p50 / p95 / p99", lambda c: fdist(g(c, "convergence", "create_to_finalizer")))
        row("create → children p50 / p95 / p99", lambda c: fdist(g(c, "convergence", "create_to_children")))
        row("create → Running p50 / p95 / p99", lambda c: fdist(g(c, "convergence", "create_to_running")))
        row("PVC → Bound p50 / p95 (control plane)", lambda c: "%s / %s s" % (
            fmt(g(c, "control_plane", "pvc_create_to_bound", "p50")), fmt(g(c, "control_plane", "pvc_create_to_bound", "p95"))))
        row("pod → Ready p50 / p95 (control plane)", lambda c: "%s / %s s" % (
            fmt(g(c, "control_plane", "pod_create_to_ready", "p50")), fmt(g(c, "control_plane", "pod_create_to_ready", "p95"))))
        row("operator writes/s until all children exist", lambda c: fmt(c.get("writes_per_second_until_children")))
        row("operator writes/s over the whole convergence", lambda c: fmt(c.get("writes_per_second")))
        row("of which object writes/s until all children (Events apart)",
            lambda c: fmt(c.get("object_writes_per_second_until_children")))
        row("write requests per cluster: objects + Events", lambda c: "%s + %s" % (
            fmt(g(c, "cost", "object_writes_per_cluster")), fmt(g(c, "cost", "event_writes_per_cluster"))))
        row("workerd requests per cluster", lambda c: "%s PATCH + %s POST (Events) + %s GET" % (
            fmt(g(c, "cost", "worker_patch_per_cluster")), fmt(g(c, "cost", "worker_post_per_cluster")),
            fmt(g(c, "cost", "worker_get_per_cluster"))))
        row("reconciles per cluster (with writes)", lambda c: "%s (%s)" % (
            fmt(g(c, "cost", "reconciles_per_cluster")),
            fmt(g(c, "log", "reconciles_with_writes") / c["n"] if g(c, "log", "reconciles_with_writes") is not None else None)))
        row("child changes that queued nothing, per cluster (by kind)", lambda c: "%s (%s)" % (
            fmt(g(c, "cost", "enqueues_skipped_per_cluster")),
            ", ".join("%s %s" % kv for kv in sorted((g(c, "cost", "enqueues_skipped") or {}).items()))))
        row("own-write echoes that queued nothing, per cluster", lambda c: fmt(g(c, "cost", "own_echoes_skipped_per_cluster")))
        row("queue adds per cluster by cause: queued / merged / dropped", lambda c: "; ".join(
            "%s %s" % (k, fmt_adds(v)) for k, v in (g(c, "cost", "queue_adds_per_cluster") or {}).items()) or "—")
        row("workerd request latency, mean", lambda c: fmt(g(c, "cost", "worker_request_mean_ms"), " ms"))
        row("workerd time waiting for the QPS limiter", lambda c: fmt(g(c, "cost", "worker_rate_limiter_wait_seconds_total"), " s"))
        row("workerd Events waiting for their QPS budget", lambda c: fmt(g(c, "cost", "worker_event_limiter_wait_seconds_total"), " s"))
        row("reconcile duration p50 / p95 (log)", lambda c: "%s / %s s" % (
            fmt(g(c, "log", "reconcile_seconds", "p50")), fmt(g(c, "log", "reconcile_seconds", "p95"))))
        row("work queue max depth", lambda c: fmt(g(c, "workqueue", "max_depth")))
        row("operator CPU during convergence", lambda c: "%s s (%s)" % (
            fmt(c.get("operator_cpu_seconds_total")),
            ", ".join("%s %s" % (k, fmt(v)) for k, v in sorted((c.get("operator_cpu_seconds") or {}).items()))))
        row("control plane CPU during convergence", lambda c: ", ".join(
            "%s %s" % (k, fmt(v)) for k, v in sorted((g(c, "control_plane", "cpu_seconds") or {}).items(),
                                                     key=lambda kv: -kv[1])))
        row("operator warnings (convergence)", lambda c: "; ".join(
            "%s ×%d" % (k, v) for k, v in sorted((g(c, "log", "warnings") or {}).items(), key=lambda kv: -kv[1])) or "none")
        row("**resync** (steady state): write requests", lambda c: "%s (in %s s, %s reconciles; + %s Lease renewals)" % (
            g(c, "steady_state", "write_requests"), fmt(g(c, "steady_state", "window_seconds")),
            g(c, "steady_state", "reconciles"), g(c, "steady_state", "lease_writes")) if c.get("steady_state") else "—")
        row("resync: CPU, % of one core", lambda c: "%s CPU-s (%s)" % (
            fmt(g(c, "steady_state", "cpu_seconds_total")),
            ", ".join("%s %s%%" % (k, fmt(v)) for k, v in sorted((g(c, "steady_state", "cpu_percent_of_one_core") or {}).items())))
            if c.get("steady_state") else "—")
        row("resync: work queue max depth", lambda c: fmt(g(c, "steady_state", "workqueue_max_depth")))
        row("**update storm**: all rolled after", lambda c: "%s (%s/%d)" % (
            fmt(g(c, "update_storm", "seconds_to_all_rolled"), " s"), g(c, "update_storm", "rolled"), c["n"])
            if c.get("update_storm") else "—")
        row("update → new config hash p50 / p95 / p99", lambda c: fdist(g(c, "update_storm", "patch_to_new_hash")))
        row("update → Running again p50 / p95 / p99", lambda c: fdist(g(c, "update_storm", "patch_to_running")))
        row("update: workerd requests per cluster", lambda c: "%s PATCH + %s POST" % (
            fmt(g(c, "update_storm", "cost", "worker_patch_per_cluster")),
            fmt(g(c, "update_storm", "cost", "worker_post_per_cluster"))) if c.get("update_storm") else "—")
        row("update: work queue max depth", lambda c: fmt(g(c, "update_storm", "workqueue_max_depth")))

        def mem(c, k):
            x = c.get(k)
            if not x:
                return "—"
            uss = x.get("uss_kb_total")
            return "%.1f / %.1f / %s MiB (PSS (USS): %s)" % (
                kb_mib(x["rss_kb_total"]), kb_mib(x["pss_kb_total"]), "%.1f" % kb_mib(uss) if uss is not None else "—",
                ", ".join("%s %.1f%s" % (p["name"], kb_mib(p["pss_kb"]),
                                         " (%.1f)" % kb_mib(p["uss_kb"]) if p.get("uss_kb") is not None else "")
                          for p in x["processes"]))
        row("**memory** idle: RSS / PSS / USS sum", lambda c: mem(c, "memory_idle"))
        row("memory with N clusters cached: RSS / PSS / USS sum", lambda c: mem(c, "memory_loaded"))
        row("marginal memory per cached cluster: PSS / USS", lambda c: "%s / %s KiB" % (
            fmt(c.get("pss_per_cluster_kib")), fmt(c.get("uss_per_cluster_kib"))))
        row("delete all (finalizers) after", lambda c: fmt(g(c, "teardown", "delete_all_seconds"), " s"))
        table(L, hdr, rows)
    sw = R.get("workers_sweep")
    if sw and sw.get("runs"):
        L.append("Workers sweep (N=%d, size 3):" % sw["n"])
        L.append("")
        table(L, ["workers", "all Running after", "all children after", "create → children p50 / p95",
                  "create → Running p50 / p95", "writes/s until all children", "of which objects (Events apart)",
                  "limiter wait: requests / Events", "reconcile p50 / p95", "operator CPU"],
              [[c["workers"], fmt(g(c, "convergence", "seconds_to_all_running"), " s"),
                fmt(g(c, "convergence", "seconds_to_all_children"), " s"),
                "%s / %s s" % (fmt(g(c, "convergence", "create_to_children", "p50")),
                               fmt(g(c, "convergence", "create_to_children", "p95"))),
                "%s / %s s" % (fmt(g(c, "convergence", "create_to_running", "p50")),
                               fmt(g(c, "convergence", "create_to_running", "p95"))),
                fmt(c.get("writes_per_second_until_children")) if c.get("writes_per_second_until_children")
                else "%s (whole convergence)" % fmt(c.get("writes_per_second")),
                fmt(c.get("object_writes_per_second_until_children")),
                "%s / %s s" % (fmt(g(c, "cost", "worker_rate_limiter_wait_seconds_total")),
                               fmt(g(c, "cost", "worker_event_limiter_wait_seconds_total"))),
                "%s / %s s" % (fmt(g(c, "log", "reconcile_seconds", "p50")), fmt(g(c, "log", "reconcile_seconds", "p95"))),
                fmt(c.get("operator_cpu_seconds_total"), " s")] for c in sw["runs"]])
    vb = R.get("volume_binding")
    if vb:
        L.append("Volume binding without the operator (%d claims created at once):" % vb["claims"])
        L.append("")
        table(L, ["claims bound by", "all bound after", "claims/s", "create → Bound p50 / p95", "CPU (control plane)"],
              [[{"dynamic": "fake provisioner (tests/cluster/provisioner.sh)",
                 "static": "pre-bound static PVs (STORAGE=static)"}[mode],
                "%s s (%s/%s)" % (fmt(g(vb, mode, "seconds")), g(vb, mode, "bound"), vb["claims"]),
                fmt(g(vb, mode, "claims_per_second")),
                "%s / %s s" % (fmt(g(vb, mode, "create_to_bound", "p50")), fmt(g(vb, mode, "create_to_bound", "p95"))),
                ", ".join("%s %s" % (kk, fmt(v)) for kk, v in sorted((g(vb, mode, "cpu_seconds") or {}).items(),
                                                                      key=lambda kv: -kv[1]) if v >= 0.05)]
               for mode in ("dynamic", "static") if vb.get(mode)])
    fo = R.get("failover")
    if fo and fo.get("trials"):
        L.append("Failover (two supervisors, one Lease; %s). Times from the signal:" % fo.get("lease"))
        L.append("")
        table(L, ["leader stopped by", "Lease free", "new holder", "new leader's first write", "old leader exit"],
              [[t["kind"], "error: " + t["error"], "", "", ""] if "error" in t else
               [t["kind"], fmt(t["old_holder_gone_s"], " s"), fmt(t["new_holder_s"], " s"),
                fmt(t["first_write_s"], " s"), "%s after %s" % (t["old_exit_code"], fmt(t["old_exit_s"], " s"))]
               for t in fo["trials"]])
    raws = [(k, R[k]) for k in sorted(k for k in R if k.startswith("raw"))]
    if raws:
        L.append("Raw limit: bench/rawapply, one process, no cache, no limiter, all requests pipelined; the same "
                 "writes per cluster as the operator's minimum (finalizer, 3 applies, 1 status):")
        L.append("")
        rows = []
        for _, raw in raws:
            if "error" in raw:
                rows.append([raw["n"], "error: " + raw["error"][-200:].replace("\n", " "), "", "", ""])
                continue
            op = R.get("converge_%d" % raw["n"]) or {}
            op_wps = op.get("writes_per_second_until_children") or op.get("writes_per_second")
            vs = next((R[k] for k in sorted(R) if k == "versus_%d" % raw["n"] or
                       k.startswith("versus_%d_qps" % raw["n"])), {})
            vs_wps = g(vs, "medians", "writes_per_s", "ours")
            rps = raw["writes"].get("rps")
            ratio = lambda w: fmt(r3(w / rps)) if w and rps else "—"  # noqa: E731
            rows.append([raw["n"], "%s, %s in flight, %s conn." % (raw.get("protocol"), raw.get("concurrency"),
                                                                  raw.get("connections")),
                         "%s s (%s/s, p50 %s ms)" % (fmt(raw["creates"]["seconds"]), fmt(raw["creates"]["rps"]),
                                                     fmt(raw["creates"]["latency_ms"]["p50"])),
                         "%d in %s s (%s/s, p50 / p99 %s / %s ms, %s failed)" % (
                             raw["writes"]["requests"], fmt(raw["writes"]["seconds"]), fmt(raw["writes"]["rps"]),
                             fmt(raw["writes"]["latency_ms"]["p50"]), fmt(raw["writes"]["latency_ms"]["p99"]),
                             raw["writes"].get("failed")),
                         "%s s to all children, %s writes/s until then" % (
                             fmt(g(op, "convergence", "seconds_to_all_children")), fmt(op_wps))
                         if op else "—",
                         ratio(op_wps),
                         "%s writes/s (median), %s of the raw client's" % (fmt(vs_wps), ratio(vs_wps))
                         if vs_wps else "—"])
        table(L, ["N", "client", "creates", "operator's writes", "operator (converge, same N)", "converge / raw",
                  "operator in the side-by-side runs (same N)"], rows)
    for k in sorted(k for k in R if k.startswith("versus_")):
        vs_markdown(L, R[k])
    return "\n".join(L)


# ------------------------------------------------------------------ main

def machine_state():
    with open("/proc/loadavg") as f:
        la = " ".join(f.read().split()[:3])
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1])
    others = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/comm" % d) as f:
                    if f.read().strip() == "kube-apiserver":
                        others += 1
            except OSError:
                pass
    return {"cpus": os.cpu_count(), "mem_gib": round(mem / 1048576, 1), "loadavg_start": la,
            "kube_apiservers_running": others, "other_apiservers": max(0, others - 1),
            "kernel": os.uname().release}


def run_main():
    ctx = Ctx()
    stopping = []

    def on_signal(sig, _frm):
        if not stopping:
            stopping.append(sig)
            ctx.interrupted = True
            raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    n = env_int("N", 100)
    workers = env_int("WORKERS", 2)
    full = env_int("BENCH_FULL", 0)
    R = {"date": env_str("BENCH_DATE", datetime.date.today().isoformat()), "commit": env_str("BENCH_COMMIT", "unknown"),
         "machine": machine_state(),
         "config": {"n": n, "workers": workers, "full": full, "storage": ctx.storage, "sync_period": ctx.sync_period,
                    "qps_burst": "%s/%s" % (ctx.qps or "20 (default)", ctx.burst or "30 (default)"),
                    "control_plane_qps_limits": os.environ.get("RDC_CLUSTER_QPS_LIMITS", "1") != "0",
                    "client_threads": ctx.threads, "work_dir": ctx.work}}
    t_start = time.time()
    log("work dir %s; load average %s" % (ctx.work, R["machine"]["loadavg_start"]))
    # other people's tests share the machine: keep the 1-minute load average over the run
    la_series = R["machine"]["loadavg_1m_series"] = []

    def la_loop():
        for _ in range(20000):
            with open("/proc/loadavg") as f:
                la_series.append([round(time.time() - t_start), float(f.read().split()[0])])
            time.sleep(15)
    threading.Thread(target=la_loop, daemon=True).start()
    final_json = os.environ.get("BENCH_OUT")
    out_json = os.path.join(ctx.work, "results.json")   # copied to BENCH_OUT at the end
    scenarios = env_str("SCENARIOS", "provisioner converge versus failover raw" + (" sweep full" if full else "")).split()
    if "versus" in scenarios and not ctx.peer_bin:
        log("versus: no PEER_BIN (bench/peer/build.sh needs Go); the side-by-side runs are skipped")
        scenarios.remove("versus")

    def save():
        R["elapsed_seconds"] = r3(time.time() - t_start)
        with open("/proc/loadavg") as f:
            R["machine"]["loadavg_end"] = " ".join(f.read().split()[:3])
        if out_json:
            tmp = out_json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(R, f, indent=1, sort_keys=True)
            os.replace(tmp, out_json)
    rc = 0
    try:
        if "converge" in scenarios:
            log("== convergence, steady state, update storm: N=%d, %d workers" % (n, workers))
            R["converge_%d" % n] = converge(ctx, ctx.ns("n%d" % n), n, workers, "main")
            save()
        if "versus" in scenarios:
            vn = env_int("VS_N", n)
            for q in env_str("VS_QPS", ctx.qps or "").split() or [""]:
                ctx.qps, ctx.burst = (q, ctx.burst) if q else (ctx.qps, ctx.burst)
                key = "versus_%d%s" % (vn, "_qps%s" % q if q else "")
                R[key] = versus(ctx, vn, workers, "vs" + ("q%s" % q.replace("-", "m") if q else ""))
                save()
        if "provisioner" in scenarios:
            log("== volume binding: dynamic provisioner vs static PVs")
            R["volume_binding"] = provisioner(ctx, env_int("PROV_N", 20))
            save()
        if "failover" in scenarios:
            log("== failover")
            R["failover"] = failover(ctx)
            save()
        if "raw" in scenarios:
            log("== raw client, N=%d" % n)
            R["raw"] = raw_limit(ctx, n)
            save()
        if "sweep" in scenarios:
            sn = env_int("SWEEP_N", 100)
            runs = []
            R["workers_sweep"] = {"n": sn, "runs": runs}
            for wk in [int(x) for x in env_str("SWEEP_WORKERS", "1 2 4 8").split()]:
                log("== workers sweep: N=%d, %d workers" % (sn, wk))
                runs.append(converge(ctx, ctx.ns("w%d" % wk), sn, wk, "sweep-w%d" % wk, full_report=False))
                save()
        if "full" in scenarios:
            nf = env_int("N_FULL", 1000)
            wf = env_int("WORKERS_FULL", workers)
            ctx.sync_period = env_str("SYNC_PERIOD_FULL", "60s")
            log("== convergence, steady state, update storm: N=%d, %d workers" % (nf, wf))
            R["converge_%d" % nf] = converge(ctx, ctx.ns("n%d" % nf), nf, wf, "full")
            save()
            if env_int("RAW_FULL", 1):
                log("== raw client, N=%d" % nf)
                R["raw_%d" % nf] = raw_limit(ctx, nf)
                save()
    except KeyboardInterrupt:
        log("interrupted; partial results go to the work dir, not bench/results")
        R["interrupted"] = True
        final_json = None
        rc = 130
    except Exception as e:  # noqa: BLE001 - report what got measured so far
        import traceback
        traceback.print_exc()
        R["error"] = "%s: %s" % (type(e).__name__, e)
        rc = 1
    finally:
        for p in ctx.procs:
            if p.poll() is None:
                stop_proc(p, 10)
        for ns in list(ctx.namespaces):
            force_cleanup(ctx, ns)
        if ctx.static_pvs:
            ctx.kube.req("DELETE", "/apis/storage.k8s.io/v1/storageclasses/" + STATIC_SC)
        for node in ctx.nodes:
            ctx.kube.req("DELETE", "/api/v1/nodes/" + node)
        import shutil
        shutil.rmtree(ctx.rt_base, ignore_errors=True)
        save()
        if final_json:
            shutil.copyfile(out_json, final_json)
            log("results: " + final_json)
    print(markdown(R))
    return rc


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "watch":
        return watch_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        return run_main()
    if len(sys.argv) > 2 and sys.argv[1] == "report":
        with open(sys.argv[2]) as f:
            print(markdown(json.load(f)))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
