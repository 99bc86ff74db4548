#!/usr/bin/env python3
"""Sweeps each model under each optimizer and precision, and prints how well each sweep predicted.

The training step changes what a pipeline costs: an optimizer's state and step, bf16's times,
saved bytes and cast copies. One small sweep per (model, optimizer, precision) on two CPU
devices checks the predictions of each against its own measurements:

    bench/training_step_sweeps.py --pipeprof build/cli/pipeprof --out sweeps \\
        --models mlp gpt resnet unet mlp:4096

Each sweep runs `pipeprof sweep --model M [--batch B] --devices D --optimizer O --precision P`
with the sweep flags below (or --sweep-flags; and `--procs N` when given: one process per
device) and writes OUT/M-O-P/report.json. A sweep that fails is reported and skipped. Prints two
markdown tables: per sweep the measured candidates, the step MAPE after the drift factor
(before it), the peak MAPE per (candidate, pipeline device) and the worst device; and per model,
optimizer and reduced precision (bf16, fp16) that sweep's fastest measured (predicted) step
over the fp32 sweep's. --report-only re-reads OUT.

On a GPU (scripts/cuda-check.sh sweeps): --devices cuda:0,cuda:0 --precisions fp32 bf16 fp16.
"""
import argparse
import json
import os
import subprocess
import sys

# Four rounds of three steps: a slow spell of this shared machine that spoils one round of a
# candidate moves the median of its twelve steps little (with two rounds of three it moved the
# median halfway, up to 39% on one candidate); measuring is a small part of each sweep's time.
SWEEP_FLAGS = ["--measure", "top:6", "--steps", "12", "--rounds", "4", "--warmup", "2",
               "--profile-budget", "8", "--calibration-budget", "4"]


def mean(values):
    return sum(values) / len(values) if values else float("nan")


def measured(report):
    return [c for c in report["candidates"] if c.get("status") == "measured" and c.get("measurement")]


def errors(report):
    step, before, peaks = [], [], []
    for c in measured(report):
        median = c["measurement"]["step_ns_median"]
        step.append(abs(c["prediction"]["iteration_ns"] - median) / median * 100)
        if c.get("prediction_before_drift"):
            before.append(abs(c["prediction_before_drift"]["iteration_ns"] - median) / median * 100)
        peaks += [abs(p - q) / q * 100
                  for p, q in zip(c["prediction"]["peak_bytes"], c["measurement"]["peak_bytes"]) if q > 0]
    return len(step), mean(step), mean(before), mean(peaks), max(peaks, default=float("nan"))


def fastest(report):
    runs = measured(report)
    best_measured = min(c["measurement"]["step_ns_median"] for c in runs) if runs else float("nan")
    best_predicted = min(c["prediction"]["iteration_ns"] for c in report["candidates"]
                         if c["prediction"].get("fits", True))
    return best_measured, best_predicted


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="training-step-sweeps")
    parser.add_argument("--models", nargs="+", default=["mlp", "gpt", "resnet", "unet"],
                        help="zoo models, each optionally MODEL:BATCH")
    parser.add_argument("--optimizers", nargs="+", default=["sgd", "adamw"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--devices", default="cpu,cpu", help="the sweep's --devices")
    parser.add_argument("--sweep-flags", help="the sweep's flags, replacing SWEEP_FLAGS (one string)")
    parser.add_argument("--procs", type=int, help="one process per device: the sweep's --procs N")
    parser.add_argument("--report-only", action="store_true", help="read the reports in --out, sweep nothing")
    args = parser.parse_args()

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    sweep_flags = args.sweep_flags.split() if args.sweep_flags else SWEEP_FLAGS
    reports = {}
    for spec in args.models:
        model, _, batch = spec.partition(":")
        for optimizer in args.optimizers:
            for precision in args.precisions:
                name = f"{spec.replace(':', '-')}-{optimizer}-{precision}"
                path = os.path.join(args.out, name, "report.json")
                if not args.report_only:
                    command = [args.pipeprof, "sweep", "--model", model, "--devices", args.devices, "--optimizer",
                               optimizer, "--precision", precision, *sweep_flags, "-o", path]
                    if batch:
                        command[4:4] = ["--batch", batch]
                    if args.procs:
                        command[4:4] = ["--procs", str(args.procs)]
                    print(" ".join(command), file=sys.stderr)
                    if subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode != 0:
                        print(f"{name}: the sweep failed", file=sys.stderr)
                        continue
                if not os.path.exists(path):
                    continue
                with open(path) as file:
                    reports[(spec, optimizer, precision)] = json.load(file)

    print("| model | optimizer | precision | measured | step MAPE (before drift) | peak MAPE | worst peak |")
    print("|---|---|---|---|---|---|---|")
    for (spec, optimizer, precision), report in reports.items():
        n, step, before, peak, worst = errors(report)
        print(f"| {spec} | {optimizer} | {precision} | {n} | {step:.1f}% ({before:.1f}%) | {peak:.1f}% | {worst:.1f}% |")
    print()
    print("| model | optimizer | precision / fp32, measured | predicted |")
    print("|---|---|---|---|")
    for spec in args.models:
        for optimizer in args.optimizers:
            for reduced in ("bf16", "fp16"):
                fp32, half = reports.get((spec, optimizer, "fp32")), reports.get((spec, optimizer, reduced))
                if not fp32 or not half:
                    continue
                (m32, p32), (m16, p16) = fastest(fp32), fastest(half)
                print(f"| {spec} | {optimizer} | {reduced}: {m16 / m32:.2f} ({m32 / 1e6:.1f} -> {m16 / 1e6:.1f} ms) "
                      f"| {p16 / p32:.2f} ({p32 / 1e6:.1f} -> {p16 / 1e6:.1f} ms) |")


if __name__ == "__main__":
    main()
