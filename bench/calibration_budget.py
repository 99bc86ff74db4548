#!/usr/bin/env python3
"""Two builds' sweeps side by side: how long each spent calibrating, and what it predicted.

A change to the calibration's cost must keep what it fits: this runs the same sweep with an
old and a new `pipeprof`, alternating so that a shared machine's slow spells hit both, and
prints per run the wall time, the seconds of calibration rounds (from the sweep's log) and
their share, the step MAPE after and before the drift factor, and the Spearman rank:

    bench/calibration_budget.py --old /tmp/old/pipeprof --new build/cli/pipeprof --runs 2 \\
        --sweep default --sweep demo

More than two: --build "LABEL=BINARY [EXTRA FLAGS]" (repeatable) adds a build, or the same build
with flags of its own (e.g. --build "rounds2=build/cli/pipeprof --calibration-rounds 2").

--sweep names a sweep of SWEEPS (the README's default, issue 55's demo flags) or gives its flags.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy_suite import summarize  # noqa: E402  (the suite's definitions of the figures)

SWEEPS = {
    "default": "--model mlp --devices cpu,cpu",
    "demo": "--model mlp --devices cpu,cpu --batch 128 --chunks 1,2,4,8 --measure top:12 --warmup 3 --steps 40 "
            "--rounds 4",
}
ROUND = re.compile(r"^calibration round \d+: .* in ([0-9.]+) s$")


def run_sweep(binary, flags, out_dir):
    report = os.path.join(out_dir, "report.json")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    start = time.monotonic()
    result = subprocess.run([binary, "sweep", *flags.split(), "-o", report], env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    with open(os.path.join(out_dir, "sweep.log"), "w") as log:
        log.write(result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"{binary} sweep {flags}: {result.stderr.strip()[-400:]}")
    calibration = sum(float(m.group(1)) for line in result.stderr.splitlines() if (m := ROUND.match(line)))
    with open(report) as file:
        figures = summarize(json.load(file))
    return {"wall": wall, "calibration": calibration, **figures}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", help="the old build's pipeprof")
    parser.add_argument("--new", help="the new build's pipeprof")
    parser.add_argument("--build", action="append", default=[],
                        help="LABEL=BINARY [EXTRA FLAGS]: one more build, or a build with flags (repeatable)")
    parser.add_argument("--sweep", action="append", help="a name of SWEEPS or sweep flags (repeatable)")
    parser.add_argument("--runs", type=int, default=2, help="runs of each build per sweep, alternated")
    parser.add_argument("--out", help="keep each run's report and log here (default: a temporary folder)")
    args = parser.parse_args()
    sweeps = args.sweep or ["default"]
    builds = [(name, binary, "") for name, binary in (("old", args.old), ("new", args.new)) if binary]
    for text in args.build:
        label, _, command = text.partition("=")
        binary, _, extra = command.strip().partition(" ")
        builds.append((label, binary, extra.strip()))
    if len(builds) < 2:
        parser.error("give at least two builds (--old and --new, or --build)")
    print("| sweep | build | run | wall s | calibrating s (share) | step MAPE (before drift) | Spearman |")
    print("|---|---|---|---|---|---|---|")
    totals = {}
    for sweep in sweeps:
        flags = SWEEPS.get(sweep, sweep)
        for run in range(args.runs):
            order = builds[run % len(builds):] + builds[:run % len(builds)]  # each run starts with another
            for name, binary, extra in order:
                if args.out:
                    out_dir = os.path.join(args.out, f"{sweep if sweep in SWEEPS else 'flags'}-{name}-{run + 1}")
                    os.makedirs(out_dir, exist_ok=True)
                    r = run_sweep(binary, f"{flags} {extra}", out_dir)
                else:
                    with tempfile.TemporaryDirectory(prefix="pipeprof-calibration-budget-") as out_dir:
                        r = run_sweep(binary, f"{flags} {extra}", out_dir)
                totals.setdefault((sweep, name), []).append(r)
                print(f"| {sweep} | {name} | {run + 1} | {r['wall']:.1f} | {r['calibration']:.1f} "
                      f"({100 * r['calibration'] / r['wall']:.0f}%) | {r['step_mape']:.1f}% "
                      f"({r['step_mape_before']:.1f}%) | {r['spearman']:.2f} |", flush=True)
    print()
    print("| sweep | build | median wall s | median calibrating share | mean step MAPE (before drift) |")
    print("|---|---|---|---|---|")
    for (sweep, name), runs in totals.items():
        share = statistics.median(100 * r["calibration"] / r["wall"] for r in runs)
        print(f"| {sweep} | {name} | {statistics.median(r['wall'] for r in runs):.1f} | {share:.0f}% | "
              f"{statistics.mean(r['step_mape'] for r in runs):.1f}% "
              f"({statistics.mean(r['step_mape_before'] for r in runs):.1f}%) |")


if __name__ == "__main__":
    main()
