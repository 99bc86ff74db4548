#!/usr/bin/env python3
"""How much longer a stage's first op of a kind in a step runs than its later ones, in measured sweeps.

For every measured candidate trace of the given sweeps (bench/accuracy_suite.py --out DIR:
DIR/<sweep>-<run>/report.traces/*.measured.json; candidates checkpointed `always` left out, whose
forwards without a graph cast and run otherwise), each timed step's compute ops of each stage
are grouped by kind (forward, recompute, backward, backward-input, backward-weight; not the
loss), in the order they ran. The first op of a group is set against the median of the group's
later ones but its last (a stage's last op of a kind may wait on the optimizer's hand-off or run
after the other device's last), in microseconds and as a ratio; groups of fewer than three ops
are left out. A device's first op of the step (its first forward, after the optimizer's step and
the zeroing of the step before, and the worker's sleep until the step began) is a class of its
own. Per sweep (the directory name less its run number) and class it prints the medians and the
number of groups.

    bench/first_in_step.py /tmp/suite202/*-1 /tmp/ab/Z1/*-1

docs/performance.md, "A stage's first op of a kind in a step", has its figures.
"""
import argparse
import collections
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import candidate_of, compute_ops_by_step, trace_events  # noqa: E402


def first_op_groups(ops):
    """(class, first op's duration, median of the later ones but the last) per stage and kind, of
    one step's compute ops in the order they began."""
    device_first = {}
    for op in ops:
        device_first.setdefault(op["pid"], op["name"])
    groups = collections.defaultdict(list)
    for op in ops:
        groups[(op["args"]["j"], op["name"].split("(")[0])].append(op)
    for (_, kind), group in groups.items():
        if len(group) < 3:
            continue
        later = group[1:-1] if len(group) > 3 else group[1:2]
        first = group[0]
        label = f"a device's first {kind}" if device_first[first["pid"]] == first["name"] else kind
        yield label, first["dur"], statistics.median(e["dur"] for e in later)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="sweep directories of accuracy suites (<dir>/<sweep>-<run>)")
    args = parser.parse_args()
    extra, ratio = collections.defaultdict(list), collections.defaultdict(list)
    for directory in args.sweeps:
        sweep = os.path.basename(directory.rstrip("/")).rsplit("-", 1)[0]
        for path in glob.glob(os.path.join(directory, "report.traces", "*.measured.json")):
            candidate = candidate_of(path)
            if candidate is None or candidate[2] == "always":
                continue
            for ops in compute_ops_by_step(trace_events(path)):
                for label, first_us, later_us in first_op_groups(ops):
                    extra[(sweep, label)].append(first_us - later_us)
                    ratio[(sweep, label)].append(first_us / later_us)
    print("| sweep | first op | groups | first - later (median) | first / later (median) |")
    print("|---|---|---|---|---|")
    for key in sorted(extra):
        print(f"| {key[0]} | {key[1]} | {len(extra[key])} | {statistics.median(extra[key]):+.0f} us | "
              f"{statistics.median(ratio[key]):.2f} |")


if __name__ == "__main__":
    main()
