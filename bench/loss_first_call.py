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
  --balance 8,7 --checkpoint except_last --threads 1 --steps 20 --trace`, the profile's thread
  count on any machine) and reads, per timed step (the warm-up's left out), the first loss op
  and the median of the later ones.

Prints, per binary, optimizer and size, the medians over the rounds: the profile's loss, the
pipeline's first and later calls, and first / profile (what the loss scale would read). With
--per-round, a row per round as well, with the profile's layers' forwards summed beside the
loss: the profile and the pipelines of one round run within seconds of each other, the rounds
minutes apart, so the rows tell how the loss moves with the machine's state (and the layers with
it) from how far a profile and a pipeline of the same moment differ. --cpu C runs everything on
CPU C alone (both devices' workers sharing it), out of the two CPUs' different speeds.

    bench/loss_first_call.py --pipeprof build/cli/pipeprof [--pipeprof OTHER] [--rounds 3] \
        [--per-round] [--cpu 1]
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


def run(command, cpu):
    """Runs `command`, on CPU `cpu` alone where it is not None."""
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    subprocess.run(command, check=True, capture_output=True, preexec_fn=pin)


def profile_loss(pipeprof, optimizer, folder, cpu=None):
    """(loss, layers): the profile's loss forward (us) per micro-batch size, and its layers'
    forwards summed (us) per size."""
    path = os.path.join(folder, "profile.json")
    run([pipeprof, "profile", "--model", "mlp", "--batch", "128", "--threads", "1", "--optimizer", optimizer,
         "-o", path], cpu)
    with open(path) as f:
        profile = json.load(f)
    layers = {}
    for layer in profile["layers"]:
        for cost in layer["costs"]:
            layers[cost["micro_batch"]] = layers.get(cost["micro_batch"], 0) + cost["forward_ns"] / 1e3
    return {c["micro_batch"]: c["forward_ns"] / 1e3 for c in profile["loss"]["costs"]}, layers


def pipeline_loss(pipeprof, optimizer, chunks, folder, cpu=None):
    """(first, later): the medians (us) over the timed steps of a step's first loss op and of the
    median of its later ones."""
    path = os.path.join(folder, "trace.json")
    run([pipeprof, "run", "--model", "mlp", "--devices", "cpu,cpu", "--balance", "8,7", "--batch", "128",
         "--chunks", str(chunks), "--schedule", "1f1b", "--checkpoint", "except_last", "--optimizer", optimizer,
         "--threads", "1", "--steps", "20", "--trace", path], cpu)
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
    parser.add_argument("--per-round", action="store_true", help="also a row per round, the layers beside the loss")
    parser.add_argument("--cpu", type=int, help="run everything on this CPU alone")
    args = parser.parse_args()
    results = {}  # (binary, optimizer, size) -> {"profile": [...], "first": [...], "later": [...]}
    rounds = []  # with --per-round: (round, binary, optimizer, size, profile's loss, first call, layers)
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            for optimizer in args.optimizers.split(","):
                for binary in args.pipeprof:
                    profiled, layers = profile_loss(binary, optimizer, folder, args.cpu)
                    for size, chunks in SIZES.items():
                        first, later = pipeline_loss(binary, optimizer, chunks, folder, args.cpu)
                        cell = results.setdefault((binary, optimizer, size), {"profile": [], "first": [], "later": []})
                        cell["profile"].append(profiled[size])
                        cell["first"].append(first)
                        cell["later"].append(later)
                        rounds.append((r + 1, binary, optimizer, size, profiled[size], first, layers[size]))
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    if args.per_round:
        print("| round | binary | optimizer | micro-batch | profile's layers' forwards | profile's loss | first call "
              "| first / profile |")
        print("|---|---|---|---|---|---|---|---|")
        for r, binary, optimizer, size, profiled, first, layers in rounds:
            print(f"| {r} | {binary} | {optimizer} | {size} | {layers / 1e3:.2f} ms | {profiled:.1f} us | {first:.1f} us "
                  f"| {first / profiled:.2f} |")
        print()
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
