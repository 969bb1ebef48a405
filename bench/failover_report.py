#!/usr/bin/env python3
"""bench/failover_report.py: figures of a bench/failover.sh run.

    failover_report.py WORK_DIR OUT.json [--meta k=v ...]   compute, write OUT.json, print
    failover_report.py --render OUT.json                     print the table of a results file

WORK_DIR holds trials.jsonl (one line per trial, written by failover.sh) and, per system,
<system>/events.jsonl (ackwriter), <system>/roles.txt (ROLE sampler), <system>/labels.txt
(label sampler). All times are epoch milliseconds of this machine's clock.

Per kill trial (t_kill = when cluster.sh pod-kill returned):
  promoted  another pod answers ROLE master (ROLE sampler, every 100 ms)
  named     the system names another primary (Sentinel's get-master-addr-by-name, the
            operator's role label), as polled every ~50 ms by failover.sh
  labels    operator: exactly one pod labelled primary, not the old one, and status.primary
            naming it (polled); Sentinel moves no label
  accepted  the writer's first SET answered +OK by a pod other than the old primary
  acked     its first acknowledged write (SET +OK and WAIT 1 >= 1) there
  unavail   from the last acknowledged write before the fault to the first one after it
  two_masters_ms  time during which two pods answered ROLE master (ROLE sampler, 100 ms)
  two_labels_ms   time during which two pods carried the primary label (label sampler)
  lost      acknowledged writes missing from the primary after the trial (every key
            acknowledged since the start is read back each time; new missing keys only)

Per switchover trial (t_kill = when the command returned: SENTINEL FAILOVER, or the
RedisCluster patch that rolls the pods; t_done = when failover.sh saw it complete):
  switch_ms  t_kill -> t_done
  gap_ms     the longest gap between two acknowledged writes that began in [t_cmd, t_done]
             (a writer failure: from its last acknowledged write to the next one); 0 when
             the writer never failed
  lost, two_masters_ms, two_labels_ms as above

The ROLE sampler must have sampled: a system whose roles.txt is empty, or a trial during
which the sampler was not running (roles_alive=0), has its two-masters figure "not
measured", and the report exits 3 (a missing input is never reported as 0).
"""
import json
import os
import sys


def pct(values, p):
    """nearest-rank percentile; None for no values"""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def lines_of(path):
    """The lines of the file at path; none when it does not exist."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def load_jsonl(path):
    out = []
    for line in lines_of(path):
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def load_timeline(path):
    """[(t, count, rest)] of a sampler file ('<t> <count> ...' per change)"""
    out = []
    for line in lines_of(path):
        f = line.split()
        if len(f) >= 2:
            out.append((int(f[0]), int(f[1]), f[2:]))
    return out


def time_with_two(timeline, t0, t1):
    """ms within [t0, t1) during which the timeline's count was >= 2"""
    total = 0
    for i, (t, n, _) in enumerate(timeline):
        nt = timeline[i + 1][0] if i + 1 < len(timeline) else t1
        a, b = max(t, t0), min(nt, t1)
        if n >= 2 and b > a:
            total += b - a
    return total


def first(events, ev, t, not_addr=None, before=None):
    for e in events:
        if e.get("ev") == ev and e["t"] >= t and (before is None or e["t"] < before) and \
                (not not_addr or e.get("addr") != not_addr):
            return e
    return None


def analyse(work, meta):
    trials = load_jsonl(os.path.join(work, "trials.jsonl"))
    systems = []
    for t in trials:
        if t["system"] not in systems:
            systems.append(t["system"])
    res = {"meta": meta, "systems": {}, "trials": []}
    for s in systems:
        d = os.path.join(work, s)
        events = load_jsonl(os.path.join(d, "events.jsonl"))
        roles = load_timeline(os.path.join(d, "roles.txt"))
        labels = load_timeline(os.path.join(d, "labels.txt"))
        stop = [e for e in events if e.get("ev") == "stop"]
        mine = [t for t in trials if t["system"] == s]
        prev_missing = 0
        runs = [t for t in mine if t.get("scenario") in ("kill", "switchover") and "t_kill" in t]
        for i, t in enumerate(mine):
            row = dict(t)
            if t.get("scenario") in ("kill", "switchover") and "t_kill" in t:
                t_kill, old = t["t_kill"], t.get("old")
                j = runs.index(t)
                t_end = runs[j + 1]["t_ready"] if j + 1 < len(runs) else (stop[-1]["t"] if stop else t_kill + 60000)
                not_addr = old if t["scenario"] == "kill" else None
                acc = first(events, "accept", t_kill, not_addr, t_end)
                ack = first(events, "ack", t_kill, not_addr, t_end)
                fail = first(events, "fail", t["t_cmd"], None, t_end)
                row["named_ms"] = t["t_new"] - t_kill if isinstance(t.get("t_new"), int) else None
                row["promoted_ms"] = None
                for (rt, _, fields) in roles:
                    if t_kill <= rt < t_end and any(f.endswith("=master") and not f.startswith(old + "=")
                                                     for f in fields):
                        row["promoted_ms"] = rt - t_kill
                        break
                row["labels_ms"] = t["t_labels"] - t_kill if isinstance(t.get("t_labels"), int) else None
                row["accepted_ms"] = acc["t"] - t_kill if acc else None
                row["acked_ms"] = ack["t"] - t_kill if ack else None
                if t["scenario"] == "kill" and row["accepted_ms"] is None and row["acked_ms"] is not None:
                    row["accepted_ms"] = row["acked_ms"]  # SET and WAIT both went through at once
                if t["scenario"] == "switchover" and fail:
                    ack = first(events, "ack", fail["t"], None, t_end)  # the first ack after it
                if fail and ack and fail.get("last_ack"):
                    row["unavailable_ms"] = ack["t"] - fail["last_ack"]
                elif not fail and t["outcome"] == "ok":
                    row["unavailable_ms"] = 0  # the writer never failed
                else:
                    row["unavailable_ms"] = None
                if t["scenario"] == "switchover":
                    done = t.get("t_done") if isinstance(t.get("t_done"), int) else None
                    row["switch_ms"] = done - t_kill if done else None
                    gaps = []
                    for e in events:
                        if e.get("ev") == "fail" and t["t_cmd"] <= e["t"] <= (done or t_end):
                            a = first(events, "ack", e["t"], None, t_end)
                            gaps.append(a["t"] - e["last_ack"] if a and e.get("last_ack") else None)
                    if any(g is None for g in gaps):
                        row["gap_ms"] = None
                    else:
                        row["gap_ms"] = max(gaps) if gaps else (0 if t["outcome"] == "ok" else None)
                measured = bool(roles) and t.get("roles_alive", 1) == 1
                row["two_masters_ms"] = time_with_two(roles, t_kill, t_end) if measured else None
                row["two_labels_ms"] = time_with_two(labels, t_kill, t_end) if labels else None
            if isinstance(t.get("missing"), int):
                row["lost"] = max(0, t["missing"] - prev_missing)
                prev_missing = max(prev_missing, t["missing"])
            res["trials"].append(row)
        rows = [r for r in res["trials"] if r["system"] == s]
        summ = {"setup": next((r["outcome"] for r in rows if r.get("scenario") == "setup"), "ok")}
        for scen in ("kill", "switchover"):
            rs = [r for r in rows if r.get("scenario") == scen]
            ok = [r for r in rs if r.get("outcome") == "ok"]
            fig = {"trials": len(rs), "ok": len(ok),
                   "outcomes": sorted({r["outcome"] for r in rs if r.get("outcome") != "ok"})}
            for k in ("promoted_ms", "named_ms", "labels_ms", "accepted_ms", "acked_ms", "unavailable_ms",
                      "switch_ms", "gap_ms"):
                vals = [r.get(k) for r in ok]
                fig[k] = {"p50": pct(vals, 50), "p95": pct(vals, 95), "max": pct(vals, 100),
                          "n": len([v for v in vals if v is not None])}
            fig["lost"] = sum(r.get("lost") or 0 for r in rs)
            fig["two_masters_measured"] = bool(rs) and all(r.get("two_masters_ms") is not None for r in rs)
            fig["two_masters_ms"] = sum(r.get("two_masters_ms") or 0 for r in rs)
            fig["two_masters_trials"] = len([r for r in rs if (r.get("two_masters_ms") or 0) > 0])
            tl = [r.get("two_labels_ms") for r in rs if r.get("two_labels_ms") is not None]
            fig["two_labels_ms"] = sum(tl) if tl else None
            summ[scen] = fig
        fin = next((r for r in rows if r.get("scenario") == "final"), None)
        summ["final_verify"] = fin.get("verify") if fin else None
        summ["acked_total"] = stop[-1].get("acked") if stop else None
        summ["role_samples"] = len(roles)
        res["systems"][s] = summ
    return res


def fmt(x):
    if x is None:
        return "–"
    return "%.2f" % (x / 1000.0)


def triple(f):
    return "%s / %s / %s" % (fmt(f["p50"]), fmt(f["p95"]), fmt(f["max"])) if f["n"] else "–"


def render(res):
    m = res["meta"]
    systems = [s for s in m.get("systems", "").split() if s in res["systems"]]
    systems += [s for s in res["systems"] if s not in systems]
    lines = ["Failover bench: %s, %s cores, %s GiB, redis %s, down-after %s ms, Sentinel failover-timeout %s ms, "
             "writer %s SET+WAIT/s, load %s -> %s, commit %s" % (
                 m.get("date"), m.get("cores"), m.get("mem_gib"), m.get("redis"), m.get("down_after_ms"),
                 m.get("failover_timeout_ms"), m.get("rate"), m.get("load_start"), m.get("load_end"),
                 m.get("commit")), ""]
    pair = "sentinel" in systems and "operator" in systems
    lines.append("| figure (s: p50 / p95 / max) | " + " | ".join(systems) + (" | operator / sentinel (p50) |" if pair else " |"))
    lines.append("|---|" + "---|" * (len(systems) + (1 if pair else 0)))

    def row(name, fn, ratio=None):
        cells = []
        for s in systems:
            summ = res["systems"][s]
            cells.append(fn(summ) if name == "setup" or summ["setup"] == "ok" else "–")
        if pair:
            cells.append(ratio_of(ratio) if ratio else "")
        lines.append("| %s | %s |" % (name, " | ".join(cells)))

    def ratio_of(key):
        scen, fig = key
        vals = []
        for s in ("operator", "sentinel"):
            summ = res["systems"][s]
            f = summ.get(scen, {}).get(fig) if summ["setup"] == "ok" else None
            vals.append(f["p50"] if f and f["n"] else None)
        if vals[0] is None or not vals[1]:
            return "–"
        return "%.2f" % (vals[0] / vals[1])

    def two_masters(s, scen):
        f = s.get(scen)
        if not f or not f["trials"]:
            return "–"
        if not f.get("two_masters_measured", True):
            return "NOT MEASURED (ROLE sampler missing)"
        return "%d, %s" % (f["two_masters_trials"], fmt(f["two_masters_ms"]))

    def ok_or_setup(s, scen):
        f = s.get(scen)
        return "%d / %d%s" % (f["ok"], f["trials"], ("; " + "; ".join(f["outcomes"])) if f["outcomes"] else "")

    row("setup", lambda s: s["setup"])
    row("SIGKILL of the primary: trials ok / run", lambda s: ok_or_setup(s, "kill"))
    def fig(name, scen, key, show=triple, ratio=True):
        """The row of figure key of scenario scen ("–" for a system without the scenario)."""
        row(name, lambda s: show(s[scen][key]) if scen in s else "–", (scen, key) if ratio else None)

    fig("kill → a replica answers ROLE master", "kill", "promoted_ms")
    fig("kill → new primary named (polled)", "kill", "named_ms", ratio=False)
    fig("kill → labels and status right", "kill", "labels_ms", ratio=False)
    fig("kill → first write accepted by the new primary", "kill", "accepted_ms")
    fig("kill → first acknowledged write (WAIT 1 ≥ 1) on it", "kill", "acked_ms")
    fig("kill: write unavailability", "kill", "unavailable_ms")
    fig("kill: acknowledged writes lost", "kill", "lost", show=str, ratio=False)
    row("kill: two pods answering ROLE master (trials, total s)", lambda s: two_masters(s, "kill"))
    fig("kill: two pods labelled primary (total s)", "kill", "two_labels_ms", show=fmt, ratio=False)
    row("switchover: trials ok / run", lambda s: ok_or_setup(s, "switchover"))
    fig("switchover: command → complete", "switchover", "switch_ms")
    fig("switchover: longest gap between acknowledged writes", "switchover", "gap_ms")
    fig("switchover: acknowledged writes lost", "switchover", "lost", show=str, ratio=False)
    row("switchover: two pods answering ROLE master (trials, total s)", lambda s: two_masters(s, "switchover"))
    fig("switchover: two pods labelled primary (total s)", "switchover", "two_labels_ms", show=fmt, ratio=False)
    row("acknowledged writes in the run / final read-back",
        lambda s: "%s / %s" % (s.get("acked_total"), s.get("final_verify")))
    return "\n".join(lines)


def main(argv):
    if len(argv) == 3 and argv[1] == "--render":
        print(render(json.load(open(argv[2]))))
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    work, out = argv[1], argv[2]
    meta = {}
    if len(argv) > 3 and argv[3] == "--meta":
        for kv in argv[4:]:
            k, v = kv.split("=", 1)
            meta[k] = v
    res = analyse(work, meta)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(render(res))
    bad = [s for s, summ in res["systems"].items() if summ["setup"] == "ok" and
           (summ["role_samples"] == 0 or any(not summ[k].get("two_masters_measured", True)
                                            for k in ("kill", "switchover") if summ[k]["trials"]))]
    if bad:
        print("failover_report: the ROLE sampler did not sample for: %s (two-masters figures NOT MEASURED)"
              % " ".join(bad), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
