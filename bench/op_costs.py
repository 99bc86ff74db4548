#!/usr/bin/env python3
"""What the calibration's scales stand for: each op of a traced pipeline against its profiled time.

The calibration multiplies a layer's profiled time by a scale per micro-batch size (forward,
backward, loss; docs/simulator.md). Scales from 0.65 to 5.6 that change with the micro-batch size
say the model is missing a term. This script tests the simplest candidate, a fixed cost per op
(dispatch, the autograd engine's start, the span and memory sampling around an op): it profiles
the model once, runs GPipe pipelines of an even balance at each chunk count with a trace, and for
each op kind fits

    measured span = slope x profiled time + per-op cost      (least squares over every op)

beside the calibration's fit, one scale per micro-batch size (median measured / profiled). A
per-op cost that leaves the slope near 1.0 across sizes is the quantity to model; a slope that
still moves with the size is not explained by it.

    bench/op_costs.py --pipeprof build/cli/pipeprof --out /tmp/op-costs [--model mlp --batch 128]
    bench/op_costs.py --out /tmp/op-costs --report-only

Prints one table per op kind: per micro-batch size the ops, the median profiled and measured
time, the calibration-style scale, and what the linear fit predicts; then the fit.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

OP = re.compile(r"^(forward|backward|loss)\((\d+)(?:,(\d+))?\)$")


def run(command, env):
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)


def even_balance(layers, stages):
    return [layers // stages + (1 if j < layers % stages else 0) for j in range(stages)]


def costs_at(costs, size):
    for cost in costs:
        if cost["micro_batch"] == size:
            return cost
    raise SystemExit(f"the profile has no sample at micro-batch {size}")


def op_samples(trace_path, profile, balance, size):
    """(kind, profiled ns, measured ns) of every compute op of the trace's timed steps."""
    with open(trace_path) as file:
        events = json.load(file)
    events = events["traceEvents"] if isinstance(events, dict) else events
    first = [sum(balance[:j]) for j in range(len(balance))]
    layers = profile["layers"]
    samples = []
    for event in events:
        if event.get("ph") != "X":
            continue
        match = OP.match(event.get("name", ""))
        if not match:
            continue
        kind = match.group(1)
        measured = float(event["dur"]) * 1000.0  # Chrome traces count microseconds
        if kind == "loss":
            profiled = costs_at(profile["loss"]["costs"], size)["forward_ns"]
        else:
            j = int(match.group(3))
            stage = layers[first[j]:first[j] + balance[j]]
            profiled = sum(costs_at(layer["costs"], size)[f"{kind}_ns"] for layer in stage)
        samples.append((kind, profiled, measured))
    return samples


def linear_fit(points):
    """slope, intercept of y = slope x + intercept (least squares)."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx > 0 else float("nan")
    return slope, my - slope * mx


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="op-costs")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--devices", default="cpu,cpu")
    parser.add_argument("--chunks", default="1,2,4,8")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    os.makedirs(args.out, exist_ok=True)
    chunks = [int(c) for c in args.chunks.split(",")]
    sizes = [args.batch // c for c in chunks]
    profile_path = os.path.join(args.out, "profile.json")
    model = ["--model", args.model, "--batch", str(args.batch)]
    if not args.report_only:
        run([args.pipeprof, "profile", *model, "--micro-batches", ",".join(map(str, sizes)), "-o", profile_path], env)
    with open(profile_path) as file:
        profile = json.load(file)
    stages = len(args.devices.split(","))
    balance = even_balance(len(profile["layers"]), stages)
    samples = {}
    for count, size in zip(chunks, sizes):
        trace_path = os.path.join(args.out, f"gpipe-x{count}.json")
        if not args.report_only:
            run([args.pipeprof, "run", *model, "--devices", args.devices, "--schedule", "gpipe", "--balance",
                 ",".join(map(str, balance)), "--chunks", str(count), "--checkpoint", "never", "--warmup", "3",
                 "--steps", str(args.steps), "--trace", trace_path], env)
        for kind, profiled, measured in op_samples(trace_path, profile, balance, size):
            samples.setdefault(kind, {}).setdefault(size, []).append((profiled, measured))
    for kind, by_size in samples.items():
        points = [point for pairs in by_size.values() for point in pairs]
        slope, intercept = linear_fit(points)
        print(f"{kind}: measured = {slope:.3f} x profiled + {intercept / 1000:.1f} us  ({len(points)} ops)")
        print("| micro-batch | ops | profiled (us) | measured (us) | scale | fit's scale |")
        print("|---|---|---|---|---|---|")
        for size in sorted(by_size):
            pairs = by_size[size]
            profiled = statistics.median(p for p, _ in pairs)
            measured = statistics.median(m for _, m in pairs)
            scale = statistics.median(m / p for p, m in pairs if p > 0)
            fitted = (slope * profiled + intercept) / profiled if profiled > 0 else float("nan")
            print(f"| {size} | {len(pairs)} | {profiled / 1000:.1f} | {measured / 1000:.1f} | {scale:.2f} "
                  f"| {fitted:.2f} |")
        print()


if __name__ == "__main__":
    main()
