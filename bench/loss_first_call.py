#!/usr/bin/env python3
"""Does the profile time the loss as a pipeline's first loss call of a step runs it?

A step's first loss op comes after the optimizer's step of the step before; its later ones after
the last stage's backward and forward of the micro-batch before. The calibration's loss scale is
what the first call (and each later call plus the shape's cold start) took over the profile's
loss (docs/simulator.md, "The loss op"). This script, per optimizer and per pipeprof binary,
alternating the binaries round by round:

- profiles the mlp (`pipeprof profile --model mlp --batch 128 --threads 1`, the sweep's thread
  count on 2 cores with 2 devices) and reads its loss forward at 16, 32 and 64 samples;
- runs it as 1F1B over two CPU devices at 8, 4 and 2 chunks (the same sizes; `pipeprof run
  --balance 8,7 --checkpoint except_last --steps 20 --trace`) and reads, per timed step (the
  warm-up's left out), the first loss op and the median of the later ones.

Prints, per binary, optimizer and size, the medians over the rounds: the profile's loss, the
pipeline's first and later calls, and first / profile (what the loss scale would read).

    bench/loss_first_call.py --pipeprof build/cli/pipeprof [--pipeprof OTHER] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_traces import timed_spans  # noqa: E402

SIZES = {16: 8, 32: 4, 64: 2}  # micro-batch size: chunks of a batch of 128


def profile_loss(pipeprof, optimizer, folder):
    """The profile's loss forward (us) per micro-batch size."""
    path = os.path.join(folder, "profile.json")
    subprocess.run([pipeprof, "profile", "--model", "mlp", "--batch", "128", "--threads", "1",
                    "--optimizer", optimizer, "-o", path], check=True, capture_output=True)
    with open(path) as f:
        costs = json.load(f)["loss"]["costs"]
    return {c["micro_batch"]: c["forward_ns"] / 1e3 for c in costs}


def pipeline_loss(pipeprof, optimizer, chunks, folder):
    """(first, later): the medians (us) over the timed steps of a step's first loss op and of the
    median of its later ones."""
    path = os.path.join(folder, "trace.json")
    subprocess.run([pipeprof, "run", "--model", "mlp", "--devices", "cpu,cpu", "--balance", "8,7",
                    "--batch", "128", "--chunks", str(chunks), "--schedule", "1f1b",
                    "--checkpoint", "except_last", "--optimizer", optimizer, "--steps", "20",
                    "--trace", path], check=True, capture_output=True)
    by_micro_batch = {}  # micro-batch -> its loss op's duration in each timed step, in order
    for span in timed_spans(path):
        if span["name"].startswith("loss("):
            by_micro_batch.setdefault(int(span["name"][5:-1]), []).append(span["dur"])
    steps = range(len(by_micro_batch[0]))
    first = [by_micro_batch[0][s] for s in steps]
    later = [statistics.median(by_micro_batch[i][s] for i in by_micro_batch if i > 0) for s in steps]
    return statistics.median(first), statistics.median(later)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeprof", action="append", required=True, help="a pipeprof binary (repeatable)")
    parser.add_argument("--optimizers", default="sgd,adamw")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = {}  # (binary, optimizer, size) -> {"profile": [...], "first": [...], "later": [...]}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            for optimizer in args.optimizers.split(","):
                for binary in args.pipeprof:
                    profiled = profile_loss(binary, optimizer, folder)
                    for size, chunks in SIZES.items():
                        first, later = pipeline_loss(binary, optimizer, chunks, folder)
                        cell = results.setdefault((binary, optimizer, size), {"profile": [], "first": [], "later": []})
                        cell["profile"].append(profiled[size])
                        cell["first"].append(first)
                        cell["later"].append(later)
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print("| binary | optimizer | micro-batch | profile's loss | first call | later calls | first / profile |")
    print("|---|---|---|---|---|---|---|")
    for (binary, optimizer, size), cell in results.items():
        profiled = statistics.median(cell["profile"])
        first = statistics.median(cell["first"])
        later = statistics.median(cell["later"])
        spread = f"{min(cell['profile']):.0f}-{max(cell['profile']):.0f}"
        print(f"| {binary} | {optimizer} | {size} | {profiled:.1f} us ({spread}) | {first:.1f} us | {later:.1f} us "
              f"| {first / profiled:.2f} |")


if __name__ == "__main__":
    main()
