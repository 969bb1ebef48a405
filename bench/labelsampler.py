#!/usr/bin/env python3
"""bench/labelsampler.py: which pods carry a label, every 100 ms, and any instant with two.

    labelsampler.py --namespace NS [--selector cache.example.com/role=primary]
                    [--interval-ms 100] --out FILE [--duration S] [--primary-file F]

Keeps one `kubectl get pods -l SELECTOR --watch --output-watch-events -o json` stream open
(kubectl from PATH, KUBECONFIG from the environment) and rebuilds from it the set of pods
that match the selector: ADDED/MODIFIED puts a pod in, DELETED (which the API server also
sends when a pod's labels stop matching) takes it out. The watch sees every change the API
server commits, in order, so no label flip between two samples is missed; every
--interval-ms the current set is sampled, and on every change (and every sample whose set
differs from the previous line) a line "<epoch ms> <count> <pod> <pod>..." is appended to
FILE. An instant with two or more pods labelled is counted whether it lasted 1 ms or 10 s.

--primary-file F: on every change F is replaced (write + rename) by "<podIP>:6379" when
exactly one pod is labelled, and by an empty file otherwise: bench/ackwriter's
--resolve-file then follows the label without running kubectl on each retry.

On SIGTERM/SIGINT or after --duration it prints one summary line on stdout:
    samples=<n> changes=<n> max=<n> two_ms=<n> two_events=<n> watch_restarts=<n>
two_ms: total time with >= 2 pods labelled; two_events: how many times that began.
Exit 0; 2 when kubectl cannot be started or the watch never delivered its first list.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time


def now_ms():
    return int(time.time() * 1000)


class Sampler:
    def __init__(self, ns, selector, out, primary_file=None):
        self.ns, self.selector, self.out = ns, selector, out
        self.primary_file = primary_file
        self.ips = {}
        self.last_primary = None
        self.lock = threading.Lock()
        self.pods = set()
        self.stop = threading.Event()
        self.proc = None
        self.restarts = -1
        self.changes = 0
        self.max = 0
        self.two_ms = 0
        self.two_events = 0
        self.two_since = None
        self.last_line = None

    def record(self, t):
        """(lock held) account for the current set at time t and log it if it changed."""
        n = len(self.pods)
        self.max = max(self.max, n)
        if n >= 2 and self.two_since is None:
            self.two_since = t
            self.two_events += 1
        elif n < 2 and self.two_since is not None:
            self.two_ms += t - self.two_since
            self.two_since = None
        line = "%d %s" % (n, " ".join(sorted(self.pods)))
        if line != self.last_line:
            self.out.write("%d %s\n" % (t, line.rstrip()))
            self.out.flush()
            self.last_line = line
            self.changes += 1
        if self.primary_file:
            ip = self.ips.get(next(iter(self.pods))) if n == 1 else None
            content = "%s:6379\n" % ip if ip else ""
            if content != self.last_primary:
                tmp = self.primary_file + ".tmp"
                with open(tmp, "w") as f:
                    f.write(content)
                os.replace(tmp, self.primary_file)
                self.last_primary = content

    def watch_once(self):
        cmd = ["kubectl", "-n", self.ns, "get", "pods", "-l", self.selector, "--watch",
               "--output-watch-events", "-o", "json"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        dec = json.JSONDecoder()
        buf = ""
        while not self.stop.is_set():
            chunk = self.proc.stdout.readline()
            if not chunk:
                break
            buf += chunk
            while True:
                s = buf.lstrip()
                if not s:
                    buf = ""
                    break
                try:
                    ev, end = dec.raw_decode(s)
                except ValueError:
                    buf = s
                    break
                buf = s[end:]
                kind = ev.get("type")
                name = ev.get("object", {}).get("metadata", {}).get("name")
                if not name:
                    continue
                with self.lock:
                    if kind in ("ADDED", "MODIFIED"):
                        self.pods.add(name)
                        ip = ev["object"].get("status", {}).get("podIP")
                        if ip:
                            self.ips[name] = ip
                    elif kind == "DELETED":
                        self.pods.discard(name)
                    self.record(now_ms())
        self.proc.wait()

    def run_watch(self):
        while not self.stop.is_set():
            self.restarts += 1
            if self.restarts:
                # a restarted watch first replays the current state as ADDED events: a pod
                # labelled before the break and not replayed has lost its label meanwhile
                with self.lock:
                    self.pods.clear()
            self.watch_once()
            if not self.stop.is_set():
                time.sleep(0.2)

    def close(self):
        self.stop.set()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--selector", default="cache.example.com/role=primary")
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--primary-file")
    a = ap.parse_args()
    with open(a.out, "a") as out:
        s = Sampler(a.namespace, a.selector, out, a.primary_file)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        th = threading.Thread(target=s.run_watch, daemon=True)
        th.start()
        end = time.time() + a.duration if a.duration else None
        samples = 0
        while not stop.is_set() and (end is None or time.time() < end):
            stop.wait(a.interval_ms / 1000.0)
            with s.lock:
                s.record(now_ms())
            samples += 1
        s.close()
        with s.lock:
            if s.two_since is not None:
                s.two_ms += now_ms() - s.two_since
        if s.restarts < 0:
            print("labelsampler: kubectl watch never started", file=sys.stderr)
            return 2
        print("samples=%d changes=%d max=%d two_ms=%d two_events=%d watch_restarts=%d"
              % (samples, s.changes, s.max, s.two_ms, s.two_events, max(s.restarts, 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
