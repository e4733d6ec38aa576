#!/usr/bin/env python3
"""Checks gpu_profile's numbers on every fixture against a second, independent computation.

usage: independent_check.py GPU_PROFILE_DUMP FIXTURES_DIR

This file re-reads each trace with Python's own parsers (xml.etree, json, sqlite3) and
recomputes busy time (the union of GPU intervals), gaps, frame times and CPU-to-GPU latency
from the definitions in plugins/gpu-profile/README.md, sharing no code with the plugin. It then
checks that truncated and malformed copies of the fixtures are refused with a clear error.
"""
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

BINS = [1_000, 5_000, 20_000, 100_000, 1_000_000]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def union(spans):
    runs = []
    for s, e in sorted(spans):
        if runs and s <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], e)
        else:
            runs.append([s, e])
    return runs


def rank(sorted_values, p):
    return sorted_values[max(1, math.ceil(p / 100 * len(sorted_values))) - 1]


def stats(values):
    v = sorted(values)
    if not v:
        return {"count": 0}
    return {"count": len(v), "min_ns": v[0], "p50_ns": rank(v, 50), "p95_ns": rank(v, 95), "p99_ns": rank(v, 99),
            "max_ns": v[-1]}


def histogram(gaps):
    h = [0] * 6
    for g in gaps:
        h[sum(1 for edge in BINS if g >= edge)] += 1
    return h


def expected(spans, presents, refresh_ns, latencies, frame_spans=None):
    runs = union(spans)
    gaps = [b[0] - a[1] for a, b in zip(runs, runs[1:])]
    out = {"busy": sum(e - s for s, e in runs), "summed": sum(e - s for s, e in spans), "intervals": len(spans),
           "span": (max(e for _, e in runs) - runs[0][0]) if runs else 0,
           "gaps": stats(gaps), "histogram": histogram(gaps), "latency": stats(latencies) if latencies else None}
    p = sorted(presents)
    deltas = [b - a for a, b in zip(p, p[1:])]
    out["frames"] = stats(deltas) if len(p) >= 2 else None
    out["missed"] = sum(1 for d in deltas if d >= 1.5 * refresh_ns)
    out["refresh_ns"] = refresh_ns
    if frame_spans:
        ordered = [frame_spans[k] for k in sorted(frame_spans)]
        out["frame_gaps"] = stats([max(0, b[0] - a[1]) for a, b in zip(ordered, ordered[1:])])
    return out


# ---- xctrace XML ------------------------------------------------------------------------------

def xctrace(path):
    root = ET.parse(path).getroot()
    assert root.tag == "trace-query-result"
    by_id = {}

    def resolve(el):
        if "ref" in el.attrib:
            return by_id[el.attrib["ref"]]
        if "id" in el.attrib:
            by_id[el.attrib["id"]] = el
        for child in el:
            resolve(child)
        return el

    tables = {}
    for node in root.findall("node"):
        sch = node.find("schema")
        cols = [c.find("mnemonic").text for c in sch.findall("col")]
        rows = []
        for row in node.findall("row"):
            values = {}
            for col, el in zip(cols, list(row)):
                el = resolve(el)
                if el.tag == "sentinel":
                    continue
                values[col] = el
            rows.append(values)
        tables[sch.attrib["name"]] = rows

    def pid(el):
        p = el.find("pid")
        if p is not None and "ref" in p.attrib:
            p = by_id[p.attrib["ref"]]
        return int(p.text)

    per_pid = {}
    for r in tables["metal-gpu-intervals"]:
        start, dur = int(r["start"].text), int(r["duration"].text)
        per_pid.setdefault(pid(r["process"]), []).append((start, start + dur, r))
    busiest = max(per_pid, key=lambda k: sum(e - s for s, e in union([(a, b) for a, b, _ in per_pid[k]])))
    mine = per_pid[busiest]
    spans = [(s, e) for s, e, _ in mine]
    commits = {int(r["cmdbuffer-id"].text): int(r["start"].text)
               for r in tables.get("metal-application-command-buffer-submissions", [])}
    latencies = []
    for s, _, r in mine:
        if "start-latency" in r:
            latencies.append(int(r["start-latency"].text))
        elif "cmdbuffer-id" in r and int(r["cmdbuffer-id"].text) in commits:
            latencies.append(s - commits[int(r["cmdbuffer-id"].text)])
    frames = {}
    for s, e, r in mine:
        f = int(r["frame-number"].text)
        a, b = frames.get(f, (s, e))
        frames[f] = (min(a, s), max(b, e))
    presents = [int(r["start"].text) for r in tables["displayed-surfaces-interval"] if pid(r["process"]) == busiest]
    vs = sorted(int(r["timestamp"].text) for r in tables["display-vsyncs-interval"])
    periods = sorted(b - a for a, b in zip(vs, vs[1:]))
    refresh = round(1e9 / (1e9 / periods[len(periods) // 2]))
    out = expected(spans, presents, refresh, latencies, frames)
    out["pid"] = busiest
    out["machine_active"] = sum(int(r["duration"].text) for r in tables["metal-gpu-state-intervals"]
                                if r["state"].text == "Active")
    return out


# ---- Chrome trace JSON ------------------------------------------------------------------------

def chrome(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ns = lambda us: round(us * 1000)
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    spans, latencies = [], []
    if device:
        launches = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                    if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
        for e in device:
            s = ns(e["ts"])
            spans.append((s, s + ns(e["dur"])))
            c = e.get("args", {}).get("correlation")
            if c in launches:
                latencies.append(s - launches[c])
    else:
        gpu = {pid for pid, name in procs.items() if name == "GPU Process"}
        stacks = {}
        for e in events:
            if e.get("pid") not in gpu:
                continue
            if e.get("ph") == "X":
                s = ns(e["ts"])
                spans.append((s, s + ns(e.get("dur", 0))))
            elif e.get("ph") == "B":
                stacks.setdefault((e["pid"], e["tid"]), []).append(ns(e["ts"]))
            elif e.get("ph") == "E" and stacks.get((e["pid"], e["tid"])):
                s = stacks[(e["pid"], e["tid"])].pop()
                spans.append((s, max(s, ns(e["ts"]))))
    presents = [ns(e["ts"]) for e in events if e.get("name") == "Display::FrameDisplayed"]
    if len(presents) < 2:
        presents = [ns(e["ts"]) for e in events if e.get("name") == "DrawFrame"]
    if len(presents) < 2:
        presents = [ns(e["ts"]) for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    return expected(spans, presents, round(1e9 / 60), latencies)


# ---- Nsight Systems SQLite --------------------------------------------------------------------

def nsys(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = []
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        rows += db.execute(f'SELECT g.start, g."end", r.start FROM {table} g '
                           f"LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId").fetchall()
    spans = [(s, e) for s, e, _ in rows]
    latencies = [s - r for s, _, r in rows if r is not None]
    presents = [s for s, text in db.execute(
        "SELECT n.start, COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE n.eventType IN (59, 60)") if text and "frame" in text.lower()]
    return expected(spans, presents, round(1e9 / 60), latencies)


# ---- comparison -------------------------------------------------------------------------------

def run_dump(dump, path):
    p = subprocess.run([dump, path], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def compare(name, got, want):
    g = got["gpu"]
    check(g["busy_ns"] == want["busy"], f"{name}: busy {g['busy_ns']} != {want['busy']}")
    check(g["summed_ns"] == want["summed"], f"{name}: summed {g['summed_ns']} != {want['summed']}")
    check(g["intervals"] == want["intervals"], f"{name}: intervals {g['intervals']} != {want['intervals']}")
    check(g["span_ns"] == want["span"], f"{name}: span {g['span_ns']} != {want['span']}")
    check(want["busy"] < want["summed"], f"{name}: the fixture should have overlapping GPU work")
    gaps = got["gaps"]["gpu"]
    for k, v in want["gaps"].items():
        check(gaps["stats"][k] == v, f"{name}: gpu gap {k} {gaps['stats'][k]} != {v}")
    check([b["count"] for b in gaps["histogram"]] == want["histogram"],
          f"{name}: gap histogram {[b['count'] for b in gaps['histogram']]} != {want['histogram']}")
    frames = got["frames"]
    check((frames is None) == (want["frames"] is None), f"{name}: frames present mismatch")
    if frames and want["frames"]:
        for k, v in want["frames"].items():
            check(frames["frame_time"][k] == v, f"{name}: frame time {k} {frames['frame_time'][k]} != {v}")
        check(frames["missed"] == want["missed"], f"{name}: missed {frames['missed']} != {want['missed']}")
        check(frames["refresh_period_ns"] == want["refresh_ns"],
              f"{name}: refresh period {frames['refresh_period_ns']} != {want['refresh_ns']}")
    lat = got["cpu_to_gpu"]
    check((lat is None) == (want["latency"] is None), f"{name}: latency present mismatch")
    if lat and want["latency"]:
        for k, v in want["latency"].items():
            check(lat[k] == v, f"{name}: latency {k} {lat[k]} != {v}")
    if "frame_gaps" in want:
        fg = got["gaps"]["frames"]
        check(fg is not None, f"{name}: frame gaps missing")
        if fg:
            for k, v in want["frame_gaps"].items():
                check(fg["stats"][k] == v, f"{name}: frame gap {k} {fg['stats'][k]} != {v}")
    if "pid" in want:
        check(got["process"]["pid"] == want["pid"], f"{name}: pid {got['process']['pid']} != {want['pid']}")
    if "machine_active" in want:
        check(g["machine_active_ns"] == want["machine_active"], f"{name}: machine active mismatch")
    print(f"{name}: busy {g['busy_ns']} ns of summed {g['summed_ns']}, {gaps['stats']['count']} gaps, "
          f"{frames['count'] if frames else 0} frames, missed {frames['missed'] if frames else '-'}")


def main():
    dump, fixtures = sys.argv[1], sys.argv[2]
    readers = {"chromium_animation.json": chrome, "pytorch_cuda_kernels.json": chrome,
               "metal_system_trace.xml": xctrace, "nsys_cuda.sqlite": nsys}
    for name, reader in readers.items():
        path = os.path.join(fixtures, name)
        rc, out, err = run_dump(dump, path)
        check(rc == 0, f"{name}: gpu_profile_dump failed: {err.strip()}")
        if rc == 0:
            compare(name, json.loads(out), reader(path))

    # Cut short and damaged copies must be refused with a sentence that says so.
    with tempfile.TemporaryDirectory() as tmp:
        for name, word in (("chromium_animation.json", "truncated"), ("pytorch_cuda_kernels.json", "truncated"),
                           ("metal_system_trace.xml", "truncated"), ("nsys_cuda.sqlite", "truncated")):
            data = open(os.path.join(fixtures, name), "rb").read()
            cut = os.path.join(tmp, "cut-" + name)
            with open(cut, "wb") as f:
                f.write(data[: len(data) // 2])
            rc, out, err = run_dump(dump, cut)
            check(rc == 2 and word in err, f"{name} cut in half: expected an error saying '{word}', got rc {rc}: {err.strip()}")
            print(f"{name} cut in half -> {err.strip()[:160]}")
        for name, marker, junk, word in (("pytorch_cuda_kernels.json", b'"ph"', b"{]", "malformed"),
                                         ("metal_system_trace.xml", b"<row>", b"<row></node>", "malformed")):
            data = open(os.path.join(fixtures, name), "rb").read()
            at = data.index(marker, len(data) // 3)  # a damaged spot in the middle, between two values
            bad = os.path.join(tmp, "bad-" + name)
            with open(bad, "wb") as f:
                f.write(data[:at] + junk + data[at:])
            rc, out, err = run_dump(dump, bad)
            check(rc == 2 and word in err, f"{name} damaged: expected '{word}', got rc {rc}: {err.strip()}")
            print(f"{name} damaged -> {err.strip()[:160]}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all fixtures match the independent computation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
