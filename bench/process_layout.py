#!/usr/bin/env python3
"""Times one candidate threaded and as one process per device, alternating, and prints the ratio.

The process layout pays for c10d messages (Gloo over loopback on CPU) where the threaded Pipe
hands tensors over in memory; this measures what that costs on the same candidate:

    bench/process_layout.py --pipeprof build/cli/pipeprof --rounds 5 -- \
        --model mlp --batch 64 --chunks 8 --schedule 1f1b --balance 8,7

Each round runs `pipeprof run ... --devices cpu,cpu` and `pipeprof run ... --procs 2` (in
alternating order, so drift on a shared machine hits both) with --steps/--warmup as given and
takes each run's median step; the ratio is median(procs) / median(threaded) over the rounds.
"""
import argparse
import json
import statistics
import subprocess
import sys


def median_step_ns(pipeprof, flags):
    out = subprocess.run([pipeprof, "run", "--json"] + flags, check=True, capture_output=True, text=True).stdout
    run = json.loads(out[out.index("{"):])
    return run["step_ns_median"], run.get("losses", [])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("run_flags", nargs=argparse.REMAINDER, help="flags of pipeprof run after --")
    args = parser.parse_args()
    flags = [f for f in args.run_flags if f != "--"] + ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    devices = ",".join(["cpu"] * args.procs)
    threaded_flags = flags + ["--devices", devices, "--threads", "1"]
    procs_flags = flags + ["--procs", str(args.procs), "--threads", "1"]
    threaded, procs = [], []
    for round_index in range(args.rounds):
        order = [("threaded", threaded_flags, threaded), ("procs", procs_flags, procs)]
        if round_index % 2:
            order.reverse()
        for name, run_flags, into in order:
            step_ns, losses = median_step_ns(args.pipeprof, run_flags)
            into.append(step_ns)
            print(f"round {round_index} {name:8s} median step {step_ns / 1e6:8.3f} ms  last loss {losses[-1]:.6g}",
                  file=sys.stderr)
    t, p = statistics.median(threaded), statistics.median(procs)
    print(f"threaded: median {t / 1e6:.3f} ms over {len(threaded)} runs ({', '.join(f'{x / 1e6:.3f}' for x in threaded)})")
    print(f"procs {args.procs}: median {p / 1e6:.3f} ms over {len(procs)} runs ({', '.join(f'{x / 1e6:.3f}' for x in procs)})")
    print(f"ratio procs / threaded: {p / t:.3f}")


if __name__ == "__main__":
    main()
