#!/usr/bin/env python3
"""Does an op run slower after its device sat idle? Read from a sweep's measured traces.

A pipeline device's worker idles whenever it waits for another device; on a shared virtual
machine an idle core may go to another guest, and the op after the wait finds its code and data
cold. For every measured trace of the given sweeps (report.traces/*.measured.json and the
calibration's reference traces, calibration/*.measured.json) this takes each compute op of a
worker (forward, backward and its I and W, recompute, loss) that follows another op of the same
device, the idle gap before it, and its duration over the median of the same op (kind and
stage) in that trace; and prints, per op kind and gap (ms), the median of that ratio, the median
of the op's time past its median (us), and how many ops. With --share, per sweep and stages per
device instead, over the measured candidates of its report: how many ops a step runs after a wait
of at least 0.1 ms, and their time past their kinds' medians summed over the devices, as a share
of the step (the medians over the candidates): what a term for it would add to a shape's step at
most. With --loss, the loss ops instead, against the profile's loss at their micro-batch's size
(what the calibration's loss scale reads): the loss never follows a wait itself (it runs right
after the last stage's forward), so each is binned by the gap before that forward, a step's first
call apart from the later ones (its forward's gap holds the step's boundary).

    bench/ops_after_idle.py /tmp/suite202/readme-1 /tmp/suite202/resnet-1 ...
    bench/ops_after_idle.py --share /tmp/ab/U1/readme-1 /tmp/ab/U2/readme-1 ...
    bench/ops_after_idle.py --loss /tmp/suite202/readme-1 /tmp/suite202/procs2-1 ...

docs/performance.md, "An op after its device idled" and "The loss after its device idled", has
its figures.
"""
import argparse
import bisect
import collections
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import candidate_of, timed_spans_of, trace_events  # noqa: E402

GAPS_MS = (0, 0.02, 0.1, 0.3, 1, 3)  # each bin from this bound to the next (the last: and longer)
GAP_BINS = [f"{GAPS_MS[k]}-{GAPS_MS[k + 1]} ms" for k in range(len(GAPS_MS) - 1)] + [f">= {GAPS_MS[-1]} ms"]


def gap_bin(gap_ms):
    return max(k for k, bound in enumerate(GAPS_MS) if gap_ms >= bound)


def worker_ops(events):
    """(ops, steps): the timed compute ops of each device's worker threads among `events`, by
    device (the trace's pid), and the timed steps' durations (us)."""
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    ops = collections.defaultdict(list)
    steps = []
    for span in timed_spans_of(events):
        if span["name"] == "step":
            steps.append(span["dur"])
        elif threads.get((span["pid"], span["tid"]), "").startswith("partition"):
            ops[span["pid"]].append(span)
    return ops, steps


def ops_after_ops(ops):
    """(kind, gap us, duration us, its kind's median us) of every op of `ops` (worker_ops) that
    follows another op of its device, its kind (name, stage) timed 4 times or more."""
    kind_of = lambda span: (span["name"].split("(")[0], span["args"].get("j"))  # noqa: E731
    durations = collections.defaultdict(list)
    for spans in ops.values():
        for span in spans:
            durations[kind_of(span)].append(span["dur"])
    medians = {kind: statistics.median(ds) for kind, ds in durations.items() if len(ds) >= 4}
    for spans in ops.values():
        spans.sort(key=lambda span: span["ts"])
        for before, op in zip(spans, spans[1:]):
            kind = kind_of(op)
            if kind in medians:
                yield kind[0], op["ts"] - before["ts"] - before["dur"], op["dur"], medians[kind]


def add_trace(path, ratios, extra_us):
    """Adds every op of the trace at `path` that follows another of its device to the cells
    (kind, gap bin): its duration over its kind's median in the trace, and the difference."""
    ops, _ = worker_ops(trace_events(path))
    for kind, gap_us, duration_us, median_us in ops_after_ops(ops):
        cell = (kind, gap_bin(gap_us / 1e3))
        ratios[cell].append(duration_us / median_us)
        extra_us[cell].append(duration_us - median_us)


def print_shares(sweeps):
    """--share: per sweep folder and stages per device, the ops after a wait of 0.1 ms or more."""
    print("| sweep | stages per device | candidates | ops after a wait >= 0.1 ms, per step "
          "| their time past their kinds' medians, of the step |")
    print("|---|---|---|---|---|")
    for sweep in sweeps:
        with open(os.path.join(sweep, "report.json")) as file:
            report = json.load(file)
        by_v = collections.defaultdict(list)  # v -> (ops per step, share of the step) per candidate
        for result in report["candidates"]:
            if result["status"] != "measured":
                continue
            ops, steps = worker_ops(trace_events(os.path.join(sweep, result["measurement"]["trace_path"])))
            after = [(duration - median) for _, gap, duration, median in ops_after_ops(ops) if gap >= 100]
            by_v[result["candidate"].get("stages_per_device", 1)].append(
                (len(after) / len(steps), sum(after) / sum(steps)))
        for v, rows in sorted(by_v.items()):
            print(f"| {sweep} | {v} | {len(rows)} | {statistics.median(r[0] for r in rows):.1f} "
                  f"| {100 * statistics.median(r[1] for r in rows):+.2f}% |")


def micro_batch_rows(batch, chunks, i):
    """Micro-batch i's rows when `batch` rows split into `chunks` as torch.chunk splits them."""
    size = -(-batch // chunks)
    return max(0, min(size, batch - i * size))


def loss_calls(path, batch, chunks):
    """(first in its step, gap us before the forward it follows, duration us, micro-batch rows) of
    every timed loss op of the trace at `path` that follows a forward of its worker."""
    events = trace_events(path)
    ops, _ = worker_ops(events)
    steps = sorted(span["ts"] for span in timed_spans_of(events) if span["name"] == "step")
    for spans in ops.values():
        spans.sort(key=lambda span: span["ts"])
        last_step = -1
        for before, forward, loss in zip(spans, spans[1:], spans[2:]):
            if not loss["name"].startswith("loss(") or not forward["name"].startswith("forward("):
                continue
            step = bisect.bisect_right(steps, loss["ts"])  # how many steps began by the loss
            gap = forward["ts"] - before["ts"] - before["dur"]
            yield step != last_step, gap, loss["dur"], micro_batch_rows(batch, chunks, loss["args"]["i"])
            last_step = step


def print_loss(sweeps):
    """--loss: per sweep, the loss ops over the profile's loss at their size, by the gap before
    the forward each follows (a step's first call in a column of its own)."""
    print("| sweep | a step's first call | later calls, their forward after " + " | ".join(GAP_BINS) + " |")
    print("|---|---|" + "---|" * len(GAP_BINS))
    for sweep in sweeps:
        with open(os.path.join(sweep, "report.json")) as file:
            report = json.load(file)
        profiled = {c["micro_batch"]: c["forward_ns"] / 1e3 for c in report["profile"].get("loss", {}).get("costs", [])}
        batch = report["environment"]["batch"]
        first, later = [], collections.defaultdict(list)
        for path in glob.glob(os.path.join(sweep, "report.traces", "**", "*.measured.json"), recursive=True):
            candidate = candidate_of(path)
            if candidate is None:
                continue
            for is_first, gap_us, duration_us, rows in loss_calls(path, batch, candidate[1]):
                if rows in profiled:
                    ratio = duration_us / profiled[rows]
                    (first if is_first else later[gap_bin(gap_us / 1e3)]).append(ratio)
        cell = lambda r: "-" if not r else f"{statistics.median(r):.2f} ({len(r)})"  # noqa: E731
        print(f"| {os.path.basename(sweep.rstrip('/'))} | {cell(first)} | "
              + " | ".join(cell(later.get(k)) for k in range(len(GAP_BINS))) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweeps", nargs="+", help="a sweep's output folder (its report.traces/ inside)")
    parser.add_argument("--share", action="store_true", help="per stages per device, the share of the step instead")
    parser.add_argument("--loss", action="store_true", help="the loss ops against the profile's, by their wait")
    args = parser.parse_args()
    if args.share:
        print_shares(args.sweeps)
        return
    if args.loss:
        print_loss(args.sweeps)
        return
    print("| sweep | op | " + " | ".join(f"after {b} idle" for b in GAP_BINS) + " |")
    print("|---|---|" + "---|" * len(GAP_BINS))
    for sweep in args.sweeps:
        ratios, extra_us = collections.defaultdict(list), collections.defaultdict(list)
        traces = glob.glob(os.path.join(sweep, "report.traces", "*.measured.json"))
        traces += glob.glob(os.path.join(sweep, "report.traces", "calibration", "*.measured.json"))
        for path in traces:
            add_trace(path, ratios, extra_us)
        for kind in sorted({kind for kind, _ in ratios}):
            cells = []
            for k in range(len(GAP_BINS)):
                r = ratios.get((kind, k))
                cells.append("-" if not r else
                             f"{statistics.median(r):.2f}, {statistics.median(extra_us[(kind, k)]):+.0f} us ({len(r)})")
            print(f"| {os.path.basename(sweep.rstrip('/'))} | {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
