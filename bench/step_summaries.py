#!/usr/bin/env python3
"""Which summary of a candidate's steps does the model predict best? Re-scores sweep reports.

A sweep summarises each measured candidate's steps by their median, and the calibration its
reference pipelines' op spans by theirs. On a shared machine the other guests mostly slow a step
down, seldom speed it up, so a lower quantile may follow the candidate's own speed more closely
than the median, which a slow spell covering a third of the rounds moves. This script asks,
from reports alone (nothing is timed again), per summary of the steps:

  offset     the sweep's median over its measured candidates of summary / prediction before the
             drift factor: what a calibration fitted on the same summary would take out
  residual   the mean |summary / (prediction x offset) - 1| over the candidates: the error left
             once that one offset is taken out (the step MAPE such a calibration would aim at)
  rounds     the median over the candidates of the range of log(the round's summary): how far a
             candidate's rounds disagree under that summary

for the median, the 10th and 25th percentiles, the mean and the interquartile mean, then the
mean residual and rounds' range of each summary over the reports.

    bench/step_summaries.py /tmp/suite/*/report.json

docs/performance.md, "Which summary of a candidate's steps", has its figures.
"""
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_vs_run import split_rounds  # noqa: E402  (a measurement's steps, round by round)


def quantile(values, p):
    """The p-quantile of `values`, linear between the order statistics."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * p
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def interquartile_mean(values):
    ordered = sorted(values)
    quarter = len(ordered) // 4
    return statistics.mean(ordered[quarter:len(ordered) - quarter])


SUMMARIES = {
    "median": statistics.median,
    "p25": lambda values: quantile(values, 0.25),
    "p10": lambda values: quantile(values, 0.10),
    "mean": statistics.mean,
    "interquartile mean": interquartile_mean,
}


def score(report, summary):
    """(offset, residual, median rounds' range) of `summary` over the report's measured candidates;
    None with fewer than three."""
    pairs, ranges = [], []
    for candidate in report.get("candidates", []):
        measurement = candidate.get("measurement")
        if candidate.get("status") != "measured" or not measurement or not candidate.get("prediction_before_drift"):
            continue
        predicted = candidate["prediction_before_drift"]["iteration_ns"]
        pairs.append((summary(measurement["step_ns"]), predicted))
        rounds = [math.log(summary(steps)) for steps in split_rounds(measurement) if steps]
        if len(rounds) > 1:
            ranges.append(max(rounds) - min(rounds))
    if len(pairs) < 3:
        return None
    offset = statistics.median(measured / predicted for measured, predicted in pairs)
    residual = statistics.mean(abs(measured / (predicted * offset) - 1) for measured, predicted in pairs)
    return offset, residual, statistics.median(ranges) if ranges else float("nan")


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    names = list(SUMMARIES)
    print("| report | " + " | ".join(f"{name}: offset, residual, rounds" for name in names) + " |")
    print("|---|" + "---|" * len(names))
    totals = {name: [] for name in names}
    for path in paths:
        with open(path) as file:
            report = json.load(file)
        scores = {name: score(report, SUMMARIES[name]) for name in names}
        if any(s is None for s in scores.values()):
            continue
        for name, s in scores.items():
            totals[name].append(s)
        print(f"| {path} | " + " | ".join(f"{o:.3f}, {100 * r:.1f}%, {g:.3f}" for o, r, g in scores.values()) + " |")
    if not totals[names[0]]:
        sys.exit("no report with three measured candidates")
    print()
    for name, scores in totals.items():
        print(f"{name}: mean residual {100 * statistics.mean(r for _, r, _ in scores):.2f}% over {len(scores)} "
              f"reports, median rounds' range {statistics.median(g for _, _, g in scores):.3f}")


if __name__ == "__main__":
    main()
