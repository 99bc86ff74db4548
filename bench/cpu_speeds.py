#!/usr/bin/env python3
"""How even and how steady this machine's CPUs are: a fixed piece of work timed on each CPU in turn.

A sweep's threaded pipeline runs one worker per device, each on a CPU the scheduler picks (or its
own with --cpu-bind cores); on a shared virtual machine one virtual CPU can run slower than
another, and either can slow down for seconds while other guests run. This pins itself to each
CPU of its affinity in turn, --rounds times, and times the same work there (loops over a list
of 16,384 integers, 15-30 ms); with --together it then runs one such process per
CPU at once, as a pipeline's workers run. It prints, per CPU, the median, fastest and slowest
time, and the slowest over the fastest: a CPU whose median sits well above another's, or whose
slowest runs far above its fastest, is a machine whose rounds will disagree.

    bench/cpu_speeds.py [--rounds 30] [--together]

docs/performance.md, "The CPUs of the development machine", has its figures.
"""
import argparse
import multiprocessing
import os
import statistics
import time


def work():
    """The same work every time: 36 passes over a list of 16,384 integers."""
    buffer = list(range(16384))
    total = 0
    for _ in range(36):
        for value in buffer:
            total += value & 7
    return total


def timed_on(cpu):
    os.sched_setaffinity(0, {cpu})
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1e3


def together(cpu, rounds, queue):
    queue.put((cpu, [timed_on(cpu) for _ in range(rounds)]))


def report(title, times):
    print(title)
    print("| CPU | median ms | fastest | slowest | slowest / fastest |")
    print("|---|---|---|---|---|")
    for cpu, values in sorted(times.items()):
        print(f"| {cpu} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} | "
              f"{max(values) / min(values):.2f} |")
    medians = [statistics.median(values) for values in times.values()]
    if len(medians) > 1:
        print(f"slowest CPU's median over the fastest's: {max(medians) / min(medians):.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--together", action="store_true", help="also run one process per CPU at once")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    work()  # warm the interpreter's code
    times = {cpu: [] for cpu in cpus}
    for _ in range(args.rounds):
        for cpu in cpus:
            times[cpu].append(timed_on(cpu))
    report(f"one CPU at a time, {args.rounds} rounds alternated:", times)
    if args.together:
        queue = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=together, args=(cpu, args.rounds, queue)) for cpu in cpus]
        for worker in workers:
            worker.start()
        results = dict(queue.get() for _ in workers)
        for worker in workers:
            worker.join()
        print()
        report(f"every CPU at once, {args.rounds} rounds each:", results)


if __name__ == "__main__":
    main()
