#!/usr/bin/env python3
"""Prints a sweep report's accuracy per schedule: step-time and peak MAPE, Spearman and the suggestion's ratio.

The sweep's own summary pools every measured candidate; a sweep over several schedules
also needs to know whether each family is predicted as well as the others:

    build/cli/pipeprof sweep --model mlp --devices cpu,cpu --batch 128 -o out/report.json
    bench/schedule_accuracy.py out/report.json

The figures follow core/src/accuracy.cpp: the step-time error compares the predicted step
with the measured median; the peak error compares the largest per-device peaks; Spearman
ranks the measured candidates of the group by predicted and by measured step time; the
ratio is the measured throughput of the group's best predicted candidate over its best
measured one. "before drift" is the step MAPE of the predictions before the sweep's drift
factor (the report's `prediction_before_drift`; "-" for reports without it). The last row,
"all", is the report's own summary.
"""
import argparse
import json
import sys


def schedule_of(candidate):
    kind = candidate.get("schedule", "gpipe")
    if kind == "interleaved":
        return "interleaved v%d" % candidate.get("stages_per_device", 2)
    return kind


def ranks(values):
    """Ranks from 1; ties share the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return result


def spearman(a, b):
    if len(a) < 2:
        return None
    x, y = ranks(a), ranks(b)
    mean_x, mean_y = sum(x) / len(x), sum(y) / len(y)
    cov = sum((p - mean_x) * (q - mean_y) for p, q in zip(x, y))
    var_x = sum((p - mean_x) ** 2 for p in x)
    var_y = sum((q - mean_y) ** 2 for q in y)
    if var_x == 0 or var_y == 0:
        return None
    return cov / (var_x * var_y) ** 0.5


def summarize(results):
    step_errors, before_errors, peak_errors, predicted, measured = [], [], [], [], []
    for result in results:
        step = result["measurement"]["step_ns_median"]
        iteration = result["prediction"]["iteration_ns"]
        step_errors.append((iteration - step) / step * 100.0)
        if result.get("prediction_before_drift"):
            before = result["prediction_before_drift"]["iteration_ns"]
            before_errors.append((before - step) / step * 100.0)
        measured_peak = max(result["measurement"]["peak_bytes"] or [0])
        if measured_peak > 0 and result["prediction"]["peak_bytes"]:
            peak_errors.append((max(result["prediction"]["peak_bytes"]) - measured_peak) / measured_peak * 100.0)
        predicted.append(iteration)
        measured.append(step)
    best_measured = max(results, key=lambda r: r["measurement"]["samples_per_s"])
    ranked = [r for r in results if r.get("predicted_rank", 0) > 0]
    suggested = min(ranked, key=lambda r: r["predicted_rank"]) if ranked else \
        max(results, key=lambda r: r["prediction"]["samples_per_s"])
    return {
        "measured": len(results),
        "step_mape": sum(abs(e) for e in step_errors) / len(step_errors),
        "step_bias": sum(step_errors) / len(step_errors),
        "before_mape": sum(abs(e) for e in before_errors) / len(before_errors) if before_errors else None,
        "peak_mape": sum(abs(e) for e in peak_errors) / len(peak_errors) if peak_errors else None,
        "spearman": spearman(predicted, measured),
        "ratio": suggested["measurement"]["samples_per_s"] / best_measured["measurement"]["samples_per_s"],
        "best": best_measured["candidate"],
    }


def label(candidate):
    return "[%s] x%d %s" % (",".join(str(b) for b in candidate["balance"]), candidate["chunks"], candidate["checkpoint"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", help="a pipeprof.report/v1 file")
    args = parser.parse_args()
    with open(args.report) as handle:
        report = json.load(handle)
    measured = [r for r in report["candidates"] if r.get("status") == "measured" and r.get("measurement")]
    if not measured:
        sys.exit("%s: no measured candidate" % args.report)
    groups = {}
    for result in measured:
        groups.setdefault(schedule_of(result["candidate"]), []).append(result)
    fmt = "{:<16} {:>8} {:>10} {:>10} {:>13} {:>10} {:>9} {:>7}  {}"
    print(fmt.format("schedule", "measured", "step MAPE", "step bias", "before drift", "peak MAPE", "Spearman",
                     "ratio", "best measured"))
    for name, results in sorted(groups.items()) + [("all", measured)]:
        s = summarize(results)
        print(fmt.format(name, s["measured"], "%.1f%%" % s["step_mape"], "%+.1f%%" % s["step_bias"],
                         "-" if s["before_mape"] is None else "%.1f%%" % s["before_mape"],
                         "-" if s["peak_mape"] is None else "%.1f%%" % s["peak_mape"],
                         "-" if s["spearman"] is None else "%.3f" % s["spearman"], "%.3f" % s["ratio"],
                         label(s["best"]) + ("" if name != "all" else " " + schedule_of(s["best"]))))


if __name__ == "__main__":
    main()
