#!/usr/bin/env python3
"""Times the runtime of two builds against each other, alternating, and prints the ratios.

A change that must not make the runtime slower (a refactoring) is checked on the same machine
in the same hour, the two builds taking turns so that drift on a shared machine hits both:

    bench/compare_builds.py --old /tmp/old/build --new build --rounds 6

Each round times, for the old and the new build in alternating order:
- the threaded 2-device step: bench_runtime's `pipelining/2` (the default mlp, batch 256,
  chunks 8, balance [8, 7], two workers; its mean over --min-time seconds);
- one process per device: `pipeprof run --procs 2` on --run-flags (its median step).
The ratio is median(new) / median(old) over the rounds; below 1 the new build is faster.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

RUN_FLAGS = "--model mlp --batch 64 --chunks 8 --schedule 1f1b --balance 8,7 --steps 20 --warmup 3 --threads 1"


def threaded_step_ns(build, min_time):
    out = subprocess.run([os.path.join(build, "bench", "bench_runtime"), "--benchmark_filter=^pipelining/2/",
                          f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    benchmark = json.loads(out)["benchmarks"][0]
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[benchmark["time_unit"]]
    return benchmark["real_time"] * scale


def procs_step_ns(build, run_flags):
    out = subprocess.run([os.path.join(build, "cli", "pipeprof"), "run", "--json", "--procs", "2"] + run_flags,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])["step_ns_median"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the build folder of the commit before")
    parser.add_argument("--new", default="build", help="the build folder of the change")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--min-time", type=float, default=2.0, help="bench_runtime's --benchmark_min_time")
    parser.add_argument("--run-flags", default=RUN_FLAGS, help="flags of pipeprof run for the --procs 2 step")
    args = parser.parse_args()
    env_threads = os.environ.get("OPENBLAS_NUM_THREADS")
    if env_threads != "1":
        print("set OPENBLAS_NUM_THREADS=1: OpenBLAS's own pool makes two workers spin against each other",
              file=sys.stderr)
        return 2
    kinds = {
        "threaded 2-device step": lambda build: threaded_step_ns(build, args.min_time),
        "--procs 2 step": lambda build: procs_step_ns(build, args.run_flags.split()),
    }
    times = {(kind, which): [] for kind in kinds for which in ("old", "new")}
    for round_index in range(args.rounds):
        order = [("old", args.old), ("new", args.new)]
        if round_index % 2:
            order.reverse()
        for kind, measure in kinds.items():
            for which, build in order:
                step_ns = measure(build)
                times[(kind, which)].append(step_ns)
                print(f"round {round_index} {kind:24s} {which}: {step_ns / 1e6:8.3f} ms", file=sys.stderr)
    for kind in kinds:
        old, new = statistics.median(times[(kind, "old")]), statistics.median(times[(kind, "new")])
        print(f"{kind}: old median {old / 1e6:.3f} ms, new median {new / 1e6:.3f} ms, "
              f"ratio new / old {new / old:.3f} over {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
