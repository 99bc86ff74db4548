#!/usr/bin/env python3
"""Forwards with and without a graph, and recomputes: measured spans against predicted ones.

A checkpointed micro-batch's forward records no graph (its recompute and every other training
forward record one). Does the simulator predict each kind as long as the pipeline runs it? For
every measured candidate of a sweep's report this matches each forward and recompute op of the
measured trace (report.traces/<candidate>.measured.json, the timed steps only) to the same op of
the predicted trace, takes the median of each over the steps, and prints per sweep the median
over the ops of measured over predicted for three kinds:

  forward without a graph   forward(i, j) of a checkpointed micro-batch (always; except_last
                            but the last)
  forward with a graph      forward(i, j) of a micro-batch not checkpointed
  recompute                 recompute(i, j)

then over the sweeps the median of those medians and of each sweep's first over its second.

    bench/forward_spans.py /tmp/suite/*-[12]          # accuracy suite output directories
    bench/forward_spans.py run/report.json            # or reports

docs/performance.md, "The forward without a graph", has its figures.
"""
import argparse
import collections
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import candidate_of, checkpointed, timed_spans  # noqa: E402

OP = re.compile(r"^(forward|recompute)\((\d+),(\d+)\)$")


def op_spans(path):
    """(kind, micro-batch, stage) -> every span's duration inside a timed step."""
    spans = collections.defaultdict(list)
    for event in timed_spans(path):
        match = OP.match(str(event.get("name", "")))
        if match:
            spans[(match.group(1), int(match.group(2)), int(match.group(3)))].append(event["dur"])
    return spans


def kind_of(op, mode, chunks):
    kind, i, _ = op
    if kind == "recompute":
        return "recompute"
    return "forward without a graph" if checkpointed(mode, i, chunks) else "forward with a graph"


KINDS = ("forward without a graph", "forward with a graph", "recompute")


def sweep_ratios(report_path):
    """Per kind, measured over predicted of every matched op of the report's measured candidates."""
    traces = os.path.splitext(report_path)[0] + ".traces"
    ratios = collections.defaultdict(list)
    for measured_path in glob.glob(os.path.join(traces, "*.measured.json")):
        predicted_path = measured_path.replace(".measured.json", ".predicted.json")
        candidate = candidate_of(measured_path)
        if not os.path.exists(predicted_path) or not candidate:
            continue
        _, chunks, mode, _ = candidate
        measured, predicted = op_spans(measured_path), op_spans(predicted_path)
        for op, durations in measured.items():
            if op in predicted and statistics.median(predicted[op]) > 0:
                ratio = statistics.median(durations) / statistics.median(predicted[op])
                ratios[kind_of(op, mode, chunks)].append(ratio)
    return ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="sweep reports, or directories holding report.json")
    args = parser.parse_args()
    medians = collections.defaultdict(list)
    quotients = []
    print("| sweep | " + " | ".join(KINDS) + " |")
    print("|---|" + "---|" * len(KINDS))
    for path in args.paths:
        report = os.path.join(path, "report.json") if os.path.isdir(path) else path
        ratios = sweep_ratios(report)
        cells = []
        for kind in KINDS:
            if ratios[kind]:
                medians[kind].append(statistics.median(ratios[kind]))
                cells.append(f"{medians[kind][-1]:.3f} ({len(ratios[kind])} ops)")
            else:
                cells.append("-")
        if ratios[KINDS[0]] and ratios[KINDS[1]]:
            quotients.append(statistics.median(ratios[KINDS[0]]) / statistics.median(ratios[KINDS[1]]))
        print(f"| {path.rstrip('/')} | " + " | ".join(cells) + " |")
    if not quotients:
        sys.exit("no sweep had both kinds of forward measured")
    summary = ", ".join(f"{kind} {statistics.median(values):.3f}" for kind, values in medians.items())
    print(f"\nmedian over {len(quotients)} sweeps: {summary}; without a graph over with one "
          f"{statistics.median(quotients):.3f} ({min(quotients):.3f}-{max(quotients):.3f})")


if __name__ == "__main__":
    main()
