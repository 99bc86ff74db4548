#!/usr/bin/env python3
"""How much of the references' drift a sweep's predictions should take: re-scores sweep reports.

A sweep times its reference pipelines again while it measures the candidates and scales every
prediction by a drift factor (docs/cli.md, "The drift correction"). This script re-reads reports
and prints, for each share w of the references' ratio (factor = ratio ** w, 0 = no correction,
1 = the whole ratio, 0.5 = its square root, what the sweep applies), the step-time MAPE of the
measured candidates over all reports: mean, median, worst, and how many reports pass 10%; then the
same on random halves of the reports, to see that the best share does not hang on a few sweeps.

    bench/drift_shrinkage.py REPORT.json [REPORT.json ...]

Only reports that kept their predictions before drift and timed references are scored.
"""
import json
import random
import statistics
import sys

SHARES = [0.0, 0.25, 0.5, 0.75, 1.0]


def load(path):
    with open(path) as file:
        report = json.load(file)
    drift = report.get("calibration_drift") or {}
    ratios = [statistics.median(r["step_ns"]) / r["predicted_ns"]
              for r in drift.get("references", []) if r.get("step_ns") and r.get("predicted_ns")]
    pairs = [(c["prediction_before_drift"]["iteration_ns"], c["measurement"]["step_ns_median"])
             for c in report.get("candidates", [])
             if c.get("status") == "measured" and c.get("prediction_before_drift") and c.get("measurement")]
    if not ratios or not pairs:
        return None
    ratio = min(2.0, max(0.5, statistics.median(ratios)))
    return ratio, pairs


def mape(sweep, share):
    ratio, pairs = sweep
    factor = ratio ** share
    return 100.0 * statistics.mean(abs(factor * predicted - measured) / measured for predicted, measured in pairs)


def main():
    sweeps = [sweep for sweep in map(load, sys.argv[1:]) if sweep]
    if not sweeps:
        sys.exit("no report with measured candidates, predictions before drift and timed references")
    print(f"{len(sweeps)} sweeps")
    print("| share of the ratio | mean step MAPE | median | worst | sweeps past 10% |")
    print("|---|---|---|---|---|")
    for share in SHARES:
        scores = [mape(sweep, share) for sweep in sweeps]
        print(f"| {share:g} | {statistics.mean(scores):.2f}% | {statistics.median(scores):.2f}% | "
              f"{max(scores):.1f}% | {sum(score > 10 for score in scores)} |")
    print()
    print("random halves (seeded), mean step MAPE per share:")
    for seed in range(3):
        order = list(range(len(sweeps)))
        random.Random(seed).shuffle(order)
        for half in (order[:len(order) // 2], order[len(order) // 2:]):
            means = [statistics.mean(mape(sweeps[i], share) for i in half) for share in SHARES]
            print("  " + "  ".join(f"w={share:g}: {value:.2f}%" for share, value in zip(SHARES, means)))


if __name__ == "__main__":
    main()
