#!/usr/bin/env python3
"""How much longer an op runs after another stage's op on its device, in measured sweeps.

For every measured candidate of the given sweep reports (bench/accuracy_suite.py --out DIR:
DIR/<sweep>-<run>/report.json with its traces in report.traces/), each compute op of a timed
step (forward, recompute, backward, backward-input, backward-weight; not the loss) is taken
against the same op in the candidate's predicted trace, and classed by what its device ran
just before it:

  warm     an op of its own stage, back to back (less than --gap-us between them)
  waited   an op of its own stage, with its worker idle between them (it waited for another
           device's data)
  switch   an op of another stage (two or more stages per device)

Per sweep (the report's directory name less its run number) and micro-batch size it prints the
median of measured over predicted of the waited and switch ops over that of the warm ones, in
percent, with the number of ops (classes of fewer than 20 ops left out). An op that starts more
than 5 ms after its predecessor ended is a step's first and is left out.

    bench/stage_switch.py /tmp/suite97/*/report.json /tmp/suite94/*/report.json
"""
import argparse
import collections
import glob
import json
import os
import re
import statistics

COMPUTE = ("forward", "recompute", "backward", "backward-input", "backward-weight")
MIN_OPS = 20
STEP_GAP_US = 5000


def spans(path):
    with open(path) as file:
        trace = json.load(file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X"]


def kind(name):
    return name.split("(")[0]


def classify(report_path, gap_us, ratios):
    """Adds each timed compute op's measured over predicted time to ratios[(sweep, size, class)]."""
    with open(report_path) as file:
        report = json.load(file)
    sweep = os.path.basename(os.path.dirname(report_path)).rsplit("-", 1)[0]
    batch = report["calibration"]["measured"]["batch"]
    for measured in glob.glob(os.path.join(os.path.dirname(report_path), "report.traces", "*.measured.json")):
        predicted_path = measured.replace(".measured.", ".predicted.")
        chunks = re.search(r"_m(\d+)", os.path.basename(measured))
        if not os.path.exists(predicted_path) or not chunks:
            continue
        size = batch // int(chunks.group(1))
        predicted = {e["name"]: e["dur"] for e in spans(predicted_path) if kind(e["name"]) in COMPUTE}
        events = spans(measured)
        warmup_end = max((e["ts"] + e["dur"] for e in events if e["name"] == "warmup"), default=0)
        by_device = collections.defaultdict(list)
        for e in sorted(events, key=lambda e: e["ts"]):
            if kind(e["name"]) in COMPUTE and e["ts"] >= warmup_end:
                by_device[e["pid"]].append(e)
        for ops in by_device.values():
            for before, op in zip(ops, ops[1:]):
                gap = op["ts"] - (before["ts"] + before["dur"])
                if gap > STEP_GAP_US or predicted.get(op["name"], 0) <= 0:
                    continue
                if op["args"].get("j") != before["args"].get("j"):
                    cls = "switch"
                else:
                    cls = "waited" if gap > gap_us else "warm"
                ratios[(sweep, size, cls)].append(op["dur"] / predicted[op["name"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--gap-us", type=float, default=20.0, help="idle time that makes an op 'waited'")
    args = parser.parse_args()
    ratios = collections.defaultdict(list)
    for report in args.reports:
        classify(report, args.gap_us, ratios)
    print("| sweep | micro-batch | warm ops | waited | switch |")
    print("|---|---|---|---|---|")
    for sweep, size in sorted({(s, b) for s, b, _ in ratios}):
        warm = ratios.get((sweep, size, "warm"), [])
        if len(warm) < MIN_OPS:
            continue
        base = statistics.median(warm)
        cells = []
        for cls in ("waited", "switch"):
            own = ratios.get((sweep, size, cls), [])
            cells.append(f"{(statistics.median(own) / base - 1) * 100:+.1f}% ({len(own)})" if len(own) >= MIN_OPS
                         else "-")
        print(f"| {sweep} | {size} | {len(warm)} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
