#!/usr/bin/env python3
"""How an op of a device holding two stages runs against one of a device holding one, in the
calibration's reference pipelines of measured sweeps.

For every sweep of an accuracy suite's output (bench/accuracy_suite.py --out DIR:
DIR/<sweep>-<run>/, its profile.json and report.json, the references' traces in
report.traces/calibration/), each compute op of a timed step (forward, recompute, backward,
backward-input, backward-weight; not the loss, and not a stage's first op of its kind in the
step, which runs cold after the optimizer's step) is set against its stage's profiled time: the
sum over the stage's layers of the profile's time at the micro-batch size (a checkpointed
forward's without a graph). The references of one stage per device give, per size and kind,
the median of those ratios: what an op runs at where its device never switches stages. Each
op of a reference of two stages per device is classed by what its device ran just before it --
another stage's op (switch) or its own stage's (own) -- and per reference shape, size and kind
the median of each class is taken over that one-stage median (kinds or sizes with fewer than
five ops on either side left out). Per sweep (the directory name less its run number) it prints
the median over those cells of each class, with the number of cells.

    bench/two_stage_ops.py /tmp/suite203/*-[12] /tmp/suite202/*-[12]

docs/performance.md, "An op after another stage's, against a device of one stage", has its
figures.
"""
import argparse
import collections
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import candidate_of, compute_ops_by_step, profile_field, trace_events  # noqa: E402

MIN_OPS = 5


def stage_profiled_us(profile, first, last, size, field):
    """The profile's time of layers [first, last) at `size` in microseconds, or None."""
    total = 0
    for layer in profile["layers"][first:last]:
        cost = next((c for c in layer["costs"] if c["micro_batch"] == size), None)
        if cost is None or field not in cost:
            return None
        total += cost[field]
    return total / 1000


def op_ratios(profile, batch, path):
    """(size, kind, class, measured over profiled) of each later op of each timed step of the
    reference trace at `path`; class "one" for one stage per device, else "switch" or "own"."""
    balance, chunks, mode, _ = candidate_of(path)
    size = batch // chunks
    starts = [sum(balance[:j]) for j in range(len(balance))]
    two_stages = len(balance) > 2  # the references run two devices
    for ops in compute_ops_by_step(trace_events(path)):
        previous_stage, seen = {}, set()
        for op in ops:
            kind, j = op["name"].split("(")[0], op["args"]["j"]
            before = previous_stage.get(op["pid"])
            previous_stage[op["pid"]] = j
            if (j, kind) in seen:
                field = profile_field(kind, mode, op["args"]["i"], chunks)
                profiled = stage_profiled_us(profile, starts[j], starts[j] + balance[j], size, field)
                if profiled:
                    label = "one" if not two_stages else "switch" if before not in (None, j) else "own"
                    yield size, kind, label, op["dur"] / profiled, os.path.basename(path).split("_", 1)[1]
            seen.add((j, kind))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="sweep directories of accuracy suites (<dir>/<sweep>-<run>)")
    args = parser.parse_args()
    cells = collections.defaultdict(lambda: collections.defaultdict(list))
    for directory in args.sweeps:
        sweep = os.path.basename(directory.rstrip("/")).rsplit("-", 1)[0]
        with open(os.path.join(directory, "profile.json")) as file:
            profile = json.load(file)
        with open(os.path.join(directory, "report.json")) as file:
            batch = json.load(file)["candidates"][0]["candidate"]["batch"]
        one = collections.defaultdict(list)
        two = collections.defaultdict(lambda: {"switch": [], "own": []})
        for path in glob.glob(os.path.join(directory, "report.traces", "calibration", "*.measured.json")):
            for size, kind, label, ratio, shape in op_ratios(profile, batch, path):
                if label == "one":
                    one[(size, kind)].append(ratio)
                else:
                    two[(shape, size, kind)][label].append(ratio)
        for (_, size, kind), classes in two.items():
            if len(one[(size, kind)]) < MIN_OPS:
                continue
            base = statistics.median(one[(size, kind)])
            for label, ratios in classes.items():
                if len(ratios) >= MIN_OPS:
                    cells[sweep][label].append(statistics.median(ratios) / base)
    print("| sweep | after another stage's op / one stage (cells) | after its own stage's / one stage (cells) |")
    print("|---|---|---|")
    for sweep, classes in sorted(cells.items()):
        text = [f"{statistics.median(classes[c]):.3f} ({len(classes[c])})" if classes[c] else "-"
                for c in ("switch", "own")]
        print(f"| {sweep} | {text[0]} | {text[1]} |")


if __name__ == "__main__":
    main()
