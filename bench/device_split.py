#!/usr/bin/env python3
"""How each pipeline device ran against the profile: the calibration's references and the candidates.

The calibration fits a relative speed per cluster device from its reference pipelines
(simulator/calibration_fit.cpp, `deviceSpeeds`) and predicts every candidate with it. On one host
of identical cores that speed is not the device's: it is the share of the cores each device's
worker got while the references ran. Does the split the references read hold for the candidates
measured after them?

For every reference pipeline of a sweep's calibration (report.traces/calibration/*.json) and every
measured candidate (report.traces/*.measured.json), this sums per pipeline device the measured
spans of its compute ops in the timed steps (forward, recompute, backward, I, W; not the loss or
the optimizer) and the profile's time of the layers those ops ran, uncalibrated (a checkpointed
micro-batch's forward against the forward without a graph), and takes their quotient: how many
times its profiled time the device took. Per sweep it prints each device's quotient over device
0's, the median (and range, count) over the references and over the candidates, beside the
device speeds the sweep fitted (device 0's speed over device 1's is the references' quotient,
pooled over them and taken against the calibrated profile).

    bench/device_split.py /tmp/suite/*-[12]           # accuracy suite output directories
    bench/device_split.py run/report.json             # or reports

docs/performance.md, "Device speeds on one host", has its figures.
"""
import argparse
import collections
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import candidate_of, profile_field, timed_spans  # noqa: E402

OP = re.compile(r"^(forward|recompute|backward|backward-input|backward-weight)\((\d+),(\d+)\)$")


def device_of_stage(stage, stages, devices, schedule):
    """The pipeline device of a stage: j mod devices, or the V of zbv (0..p-1, then back)."""
    if schedule.startswith("zbv"):
        return stage if stage < devices else stages - 1 - stage
    return stage % devices


def layer_cost(profile, layer, size, field):
    for cost in profile["layers"][layer]["costs"]:
        if cost["micro_batch"] == size:
            return cost.get(field) or cost["forward_ns"]
    return None


def device_quotients(trace_path, profile, batch, devices):
    """Per pipeline device: measured over profiled time of its compute ops in the timed steps."""
    candidate = candidate_of(trace_path)
    if not candidate:
        return None
    balance, chunks, mode, schedule = candidate
    size = batch // chunks
    firsts = [sum(balance[:j]) for j in range(len(balance))]
    measured = collections.defaultdict(float)
    profiled = collections.defaultdict(float)
    for event in timed_spans(trace_path):
        match = OP.match(str(event.get("name", "")))
        if not match:
            continue
        kind, i, j = match.group(1), int(match.group(2)), int(match.group(3))
        if j >= len(balance):
            continue
        field = profile_field(kind, mode, i, chunks)
        costs = [layer_cost(profile, layer, size, field) for layer in range(firsts[j], firsts[j] + balance[j])]
        if any(cost is None for cost in costs):
            return None  # a size the profile interpolates: left out
        device = device_of_stage(j, len(balance), devices, schedule)
        measured[device] += event["dur"] * 1e3
        profiled[device] += sum(costs)
    if len(measured) < devices or any(profiled[d] <= 0 for d in range(devices)):
        return None
    return [measured[d] / profiled[d] for d in range(devices)]


def relative(quotients):
    """Each device's quotient over device 0's."""
    return [q[d] / q[0] for q in quotients for d in range(1, len(q))]


def describe(values):
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f}, {len(values)})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="sweep reports, or directories holding report.json")
    args = parser.parse_args()
    print("| sweep | fitted speeds | references: device 1 over device 0 | candidates: device 1 over device 0 |")
    print("|---|---|---|---|")
    for path in args.paths:
        report_path = os.path.join(path, "report.json") if os.path.isdir(path) else path
        with open(report_path) as file:
            report = json.load(file)
        calibration = report.get("calibration") or {}
        measured = calibration.get("measured") or {}
        devices = len(measured.get("devices") or [])
        if devices < 2:
            continue
        stem = os.path.splitext(report_path)[0]
        profile = report["profile"]  # the report holds the profile it predicted with
        batch = measured["batch"]

        def quotients(pattern):
            found = (device_quotients(p, profile, batch, devices) for p in sorted(glob.glob(pattern)))
            return [q for q in found if q]

        references = quotients(os.path.join(stem + ".traces", "calibration", "*.json"))
        candidates = quotients(os.path.join(stem + ".traces", "*.measured.json"))
        speeds = ", ".join(f"{s:.2f}" for s in calibration.get("device_speeds") or [])
        print(f"| {path.rstrip('/')} | {speeds or '-'} | {describe(relative(references))} | "
              f"{describe(relative(candidates))} |")


if __name__ == "__main__":
    main()
