#!/usr/bin/env python3
"""bench/clusterwait.py: when a set of Redis Cluster nodes became one healthy cluster.

    clusterwait.py --addrs H:P[,H:P...] --shards S --replicas R [--timeout 300]
                   [--interval-ms 50] [--since-ms T]

Polls every node (one connection each, opened again when it breaks) every --interval-ms:
  t_ping  the first round in which every node answered PING;
  t_ok    the first round in which the cluster is whole, the same rule for the operator and
          for `redis-cli --cluster create`: every node says cluster_state:ok,
          cluster_slots_ok:16384 and cluster_known_nodes = S x (1 + R); the first node's
          CLUSTER NODES lists S masters holding slots, each with R replicas; and every
          replica's INFO replication says master_link_status:up.
Prints one JSON line {"t_start", "t_ping", "t_ok", "rounds"} (epoch ms; t_start is
--since-ms when given) and exits 0; on --timeout prints the same with t_ok null and the
last reason the cluster was not whole, and exits 1. Standard library only; RESP over a
plain socket (tests/e2e/resp.py; the few replies read here are bulk strings, integers and
simple strings).
"""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from resp import RespConn  # noqa: E402


def now_ms():
    return int(time.time() * 1000)


class Node(RespConn):
    def __init__(self, addr):
        super().__init__()
        self.host, port = addr.rsplit(":", 1)
        self.port = int(port)

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    def call(self, *args):
        """The reply as str/int, None on any error (the connection is closed then)."""
        try:
            if self.sock is None:
                self.sock = socket.create_connection((self.host, self.port), timeout=0.5)
            self.send(*args)
            line = self.line()
            kind, rest = line[:1], line[1:]
            if kind == b"+":
                return rest.decode()
            if kind == b":":
                return int(rest)
            if kind == b"$":
                n = int(rest)
                return None if n < 0 else self.exact(n).decode(errors="replace")
            self.close()  # an error reply or a type not read here
            return None
        except (OSError, ValueError):
            self.close()
            return None


def fields(text):
    out = {}
    for line in (text or "").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def whole(nodes, shards, replicas):
    """None when whole, else why not."""
    n = shards * (1 + replicas)
    for node in nodes:
        info = fields(node.call("CLUSTER", "INFO"))
        if info.get("cluster_state") != "ok" or info.get("cluster_slots_ok") != "16384":
            return "%s:%d: cluster_state %s, slots ok %s" % (node.host, node.port, info.get("cluster_state"),
                                                               info.get("cluster_slots_ok"))
        if info.get("cluster_known_nodes") != str(n):
            return "%s:%d knows %s nodes" % (node.host, node.port, info.get("cluster_known_nodes"))
    view = nodes[0].call("CLUSTER", "NODES")
    if view is None:
        return "no CLUSTER NODES"
    masters, followers = {}, {}
    for line in view.splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        if "master" in f[2].split(",") and len(f) > 8:
            masters[f[0]] = 0
        elif "slave" in f[2].split(",") and f[7] == "connected":
            followers.setdefault(f[3], []).append(f[1].split("@")[0])
    if len(masters) != shards:
        return "%d masters with slots" % len(masters)
    for m in masters:
        if len(followers.get(m, [])) != replicas:
            return "master %s has %d replicas" % (m[:8], len(followers.get(m, [])))
    by_addr = {"%s:%d" % (x.host, x.port): x for x in nodes}
    for addrs in followers.values():
        for a in addrs:
            x = by_addr.get(a)
            if x is None or fields(x.call("INFO", "replication")).get("master_link_status") != "up":
                return "replica %s: link not up" % a
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addrs", required=True)
    ap.add_argument("--shards", type=int, required=True)
    ap.add_argument("--replicas", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--interval-ms", type=int, default=50)
    ap.add_argument("--since-ms", type=int, default=0)
    a = ap.parse_args()
    nodes = [Node(x) for x in a.addrs.split(",") if x]
    out = {"t_start": a.since_ms or now_ms(), "t_ping": None, "t_ok": None, "rounds": 0}
    end = time.monotonic() + a.timeout
    why = "not polled"
    while time.monotonic() < end:
        out["rounds"] += 1
        t = now_ms()
        if out["t_ping"] is None:
            if all(x.call("PING") == "PONG" for x in nodes):
                out["t_ping"] = t
            else:
                why = "a node does not answer PING"
        if out["t_ping"] is not None:
            why = whole(nodes, a.shards, a.replicas)
            if why is None:
                out["t_ok"] = t
                break
        time.sleep(a.interval_ms / 1000.0)
    if out["t_ok"] is None:
        out["why"] = why
    print(json.dumps(out))
    return 0 if out["t_ok"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
