#!/usr/bin/env python3
"""A Redis client over TLS for tests/e2e/test_tls.sh (bench/ackwriter speaks plain text
only: Debian's hiredis has no TLS). Python's ssl module and a few lines of RESP (resp.py), nothing
installed beside python3.

  tls_client.py write  --addr-file F --acks FILE --ca CA [--cert C --key K] [--password-file P]
                       [--prefix P] [--wait-ms 100]
      SET <prefix><i> <i> then WAIT 1 <wait-ms> on the address in F ("ip:port", read again
      after every failure), i = 1, 2, ...; a write is acknowledged only when SET answered
      +OK and WAIT an integer >= 1: its key goes to FILE. Runs until SIGTERM; then prints
      "acked=N failed=N".
  tls_client.py verify --addr H:P --acks FILE --ca CA [--cert C --key K] [--password-file P]
      GET every acknowledged key on H:P: prints "acked=N present=N missing=N wrong=N";
      status 0 only when none is missing or wrong and there was at least one.
  tls_client.py probe  --addrs H:P,H:P.. --out FILE --ca CA [--cert C --key K] [--password-file P]
      every 200 ms a NEW TLS connection to each address and a PING; one line per round
      to FILE: "<ms> <failures of the round>"; until SIGTERM; prints "rounds=N failures=N".
  tls_client.py serial --addr H:P --ca CA [--cert C --key K]
      the serial number (hex, upper case) of the certificate the server presents.

The server's certificate is checked against CA (the chain; not the name: the test connects
to pod IPs, as redis-cli does).
"""
import argparse
import signal
import socket
import ssl
import sys
import time

from resp import RespConn

stop = False


def on_term(*_):
    global stop
    stop = True


def ctx_of(a):
    c = ssl.create_default_context(cafile=a.ca)
    c.check_hostname = False
    if a.cert:
        c.load_cert_chain(a.cert, a.key)
    return c


def connect(a, addr, timeout=1.0):
    host, port = addr.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=timeout)
    s = ctx_of(a).wrap_socket(raw)
    s.settimeout(timeout)
    conn = Conn(s)
    if a.password_file:
        pw = open(a.password_file).read().strip()
        if conn.call("AUTH", pw) != "OK":
            conn.close()
            raise OSError("AUTH refused")
    return conn


class Conn(RespConn):
    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def reply(self):
        ln = self.line()
        t, rest = ln[:1], ln[1:].decode()
        if t == b"+":
            return rest
        if t == b"-":
            return Exception(rest)
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self.exact(n).decode()
        if t == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise OSError("protocol error")

    def call(self, *args):
        self.send(*args)
        return self.reply()


def cmd_write(a):
    acks = open(a.acks, "a")
    i, acked, failed, conn, addr = 1, 0, 0, None, None
    while not stop:
        try:
            want = open(a.addr_file).read().strip()
            if conn is None or want != addr:
                if conn:
                    conn.close()
                conn, addr = None, want
                if not addr:
                    raise OSError("no primary named")
                conn = connect(a, addr)
            key = "%s%d" % (a.prefix, i)
            conn.send("SET", key, i)
            conn.send("WAIT", 1, a.wait_ms)
            r1, r2 = conn.reply(), conn.reply()
            i += 1
            if r1 == "OK" and isinstance(r2, int) and r2 >= 1:
                acks.write("%s %d %s\n" % (key, i - 1, addr))
                acks.flush()
                acked += 1
            else:
                failed += 1
                time.sleep(0.05)
        except (OSError, ValueError):
            failed += 1
            if conn:
                conn.close()
            conn = None
            time.sleep(0.1)
    print("acked=%d failed=%d" % (acked, failed))


def cmd_verify(a):
    keys = [l.split() for l in open(a.acks) if l.strip()]
    conn = connect(a, a.addr, timeout=5)
    present = missing = wrong = 0
    for k, v, _ in keys:
        r = conn.call("GET", k)
        if r is None:
            missing += 1
        elif r != v:
            wrong += 1
        else:
            present += 1
    print("acked=%d present=%d missing=%d wrong=%d" % (len(keys), present, missing, wrong))
    return 0 if keys and not missing and not wrong else 1


def cmd_probe(a):
    out = open(a.out, "a")
    rounds = failures = 0
    while not stop:
        bad = 0
        for addr in a.addrs.split(","):
            try:
                c = connect(a, addr)
                if c.call("PING") != "PONG":
                    bad += 1
                c.close()
            except (OSError, ValueError):
                bad += 1
        rounds += 1
        failures += bad
        out.write("%d %d\n" % (int(time.time() * 1000), bad))
        out.flush()
        time.sleep(0.2)
    print("rounds=%d failures=%d" % (rounds, failures))


def cmd_serial(a):
    host, port = a.addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as raw:
        with ctx_of(a).wrap_socket(raw) as s:
            der = s.getpeercert(binary_form=True)
    # the serial, from the DER without a parser: openssl prints it for us
    import subprocess
    pem = ssl.DER_cert_to_PEM_cert(der)
    r = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=pem, capture_output=True, text=True)
    print(r.stdout.strip().split("=", 1)[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["write", "verify", "probe", "serial"])
    for opt in ["--addr-file", "--addr", "--addrs", "--acks", "--ca", "--cert", "--key", "--password-file", "--out"]:
        p.add_argument(opt)
    p.add_argument("--prefix", default="k")
    p.add_argument("--wait-ms", type=int, default=100)
    a = p.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    fn = {"write": cmd_write, "verify": cmd_verify, "probe": cmd_probe, "serial": cmd_serial}[a.mode]
    sys.exit(fn(a) or 0)


if __name__ == "__main__":
    main()
