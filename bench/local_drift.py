#!/usr/bin/env python3
"""Does the machine's speed at a round's moment explain that round? Re-scores sweep reports.

A sweep measures each candidate in rounds spread over the measuring phase and times its
reference pipelines between them (docs/cli.md, "The drift correction"). The drift factor is one
number per sweep: the references' median ratio over their calibrated prediction, taken to a
share. If the machine's speed moves within the measuring phase, a candidate's rounds move with
it, and the references timed next to a round know by how much. This script asks whether they
do, from reports alone (nothing is timed again):

  - per round, y = log(round's median step / the candidate's prediction before drift), and the
    references' speed around the round's middle, x(t) = a Gaussian-weighted mean over the
    reference runs of log(run's median step / its calibrated prediction), bandwidth h seconds;
  - within candidates (rounds of one candidate less their mean): the correlation of y with x(t),
    and the spread of y before and after x(t) is taken out;
  - the step MAPE of the sweep's candidates predicted with the sweep's one drift factor (one
    ratio, its share; `calibration_drift.factor`) against each round predicted at its own
    moment's speed (what a sweep applies since 2026-12-04: tuner/calibration_drift.h)
    (prediction x exp(share x x(t)), the candidate's figure the median over its steps as the
    sweep takes it, its prediction the same median over its rounds' predictions, weighted by
    their steps).

    bench/local_drift.py REPORT.json [REPORT.json ...]
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_vs_run import split_rounds  # noqa: E402  (a measurement's steps, round by round)

BANDWIDTHS_S = [5, 10, 20, 40, 80]


def reference_points(drift):
    """(middle of the run in seconds, log ratio less its chunk count's mean) for every timed
    reference run, and the sweep's log ratio (the drift factor's, before its share): each run
    tells how far the machine ran from the measuring phase's average speed at its moment."""
    predicted = {r["chunks"]: r["predicted_ns"] for r in drift.get("references", []) if r.get("predicted_ns")}
    runs = []
    for timing in drift.get("timings", []):
        steps = timing.get("step_ns") or []
        if steps and predicted.get(timing["chunks"]) and "start_s" in timing:
            middle = timing["start_s"] + sum(steps) / 2e9
            runs.append((timing["chunks"], middle, math.log(statistics.median(steps) / predicted[timing["chunks"]])))
    means = {}
    for chunks, _, x in runs:
        means.setdefault(chunks, []).append(x)
    means = {chunks: statistics.mean(xs) for chunks, xs in means.items()}
    ratio = min(2.0, max(0.5, drift.get("reference_ratio", 1.0)))
    return [(t, x - means[chunks]) for chunks, t, x in runs], math.log(ratio)


def local_speed(points, t, bandwidth):
    """The Gaussian-weighted mean deviation at t; 0 for an infinite bandwidth."""
    if bandwidth is None:
        return 0.0
    weights = [math.exp(-0.5 * ((s - t) / bandwidth) ** 2) for s, _ in points]
    total = sum(weights)
    if total < 1e-9:
        return 0.0
    return sum(w * x for w, (_, x) in zip(weights, points)) / total


def rounds_of(candidate):
    """(middle of the round in seconds, its steps) for each round the measurement kept."""
    measurement = candidate["measurement"]
    counts, starts = measurement.get("round_steps"), measurement.get("round_start_s")
    if not counts or not starts or sum(counts) != len(measurement["step_ns"]):
        return []
    return [(start + sum(steps) / 2e9, steps) for start, steps in zip(starts, split_rounds(measurement))]


def pearson(xs, ys):
    if len(xs) < 3:
        return float("nan")
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def score(report, bandwidth):
    drift = report.get("calibration_drift") or {}
    points, sweep_log_ratio = reference_points(drift)
    share = drift.get("share", 0.5)
    candidates = [c for c in report.get("candidates", [])
                  if c.get("status") == "measured" and c.get("measurement") and c.get("prediction_before_drift")]
    if len(points) < 2 or not candidates:
        return None
    within_x, within_y, errors_global, errors_local = [], [], [], []
    for candidate in candidates:
        before = candidate["prediction_before_drift"]["iteration_ns"]
        measured = candidate["measurement"]["step_ns_median"]
        # The sweep's one factor (reports since 2026-12-04 take each measured candidate's own in
        # its `prediction`; this rebuilds the one factor from the report's drift).
        factor = drift.get("factor", 1.0)
        errors_global.append(abs(before * factor - measured) / measured)
        rounds = rounds_of(candidate)
        if not rounds:
            errors_local.append(errors_global[-1])
            continue
        xs = [local_speed(points, t, bandwidth) for t, _ in rounds]
        ys = [math.log(statistics.median(steps) / before) for _, steps in rounds]
        if len(rounds) > 1:
            within_x += [x - statistics.mean(xs) for x in xs]
            within_y += [y - statistics.mean(ys) for y in ys]
        per_step = [before * math.exp(share * (sweep_log_ratio + x)) for x, (_, steps) in zip(xs, rounds) for _ in steps]
        errors_local.append(abs(statistics.median(per_step) - measured) / measured)
    residual = [y - x for x, y in zip(within_x, within_y)]
    return {
        "correlation": pearson(within_x, within_y),
        "spread_before": statistics.pstdev(within_y) if within_y else float("nan"),
        "spread_after": statistics.pstdev(residual) if residual else float("nan"),
        "mape_global": 100 * statistics.mean(errors_global),
        "mape_local": 100 * statistics.mean(errors_local),
        "references": len(points),
    }


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    reports = {path: json.load(open(path)) for path in paths}
    print("| report | refs | h (s) | within-candidate corr(y, x) | round spread before, after | step MAPE: one factor, at each round's speed |")
    print("|---|---|---|---|---|---|")
    totals = {}
    for path, report in reports.items():
        for bandwidth in BANDWIDTHS_S + [None]:
            result = score(report, bandwidth)
            if not result:
                continue
            totals.setdefault(bandwidth, []).append(result)
            print(f"| {path} | {result['references']} | {bandwidth or 'inf'} | {result['correlation']:.2f} "
                  f"| {result['spread_before']:.3f}, {result['spread_after']:.3f} "
                  f"| {result['mape_global']:.1f}%, {result['mape_local']:.1f}% |")
    print()
    for bandwidth, results in totals.items():
        correlations = [r["correlation"] for r in results if not math.isnan(r["correlation"])]
        correlation = statistics.mean(correlations) if correlations else float("nan")
        print(f"h {bandwidth or 'inf'}: mean step MAPE one factor {statistics.mean(r['mape_global'] for r in results):.2f}%, "
              f"each round's speed {statistics.mean(r['mape_local'] for r in results):.2f}%; mean within-candidate "
              f"correlation {correlation:.2f}")


if __name__ == "__main__":
    main()
