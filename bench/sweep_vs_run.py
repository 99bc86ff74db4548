#!/usr/bin/env python3
"""Does a sweep measure what a run of the same candidate measures? Sweeps and lone runs, alternated.

A sweep measures each candidate inside one long process that has already profiled the model,
trained the calibration's reference pipelines and the candidates before it. A user who then
runs the suggested candidate alone (`pipeprof run`) gets a fresh process. This script times
the same candidate rounds both ways, alternated round by round, so that the machine's speed at
that moment falls on both alike:

    pipeprof sweep COMMON SWEEP -o OUT/rK/report.json, its progress read line by line;
    each time it ends a round of a candidate ("measured ..." / "partly measured ..."), the sweep
    is paused (SIGSTOP, between rounds: its next timed step is still a model build and its
    warm-up steps away) and the same candidate runs alone in a fresh process,
        pipeprof run COMMON --balance .. --chunks .. --schedule .. --checkpoint ..
                         --warmup W --steps S --json
    with the sweep's warm-up and that round's steps (the plan line the sweep prints first says
    how many), then the sweep goes on (SIGCONT). Every kept round is paired, the extra rounds
    of candidates whose rounds disagree included; a round the sweep measures again (another
    process competed for the CPUs) prints no "measured" line and gets no lone run.

It prints, per candidate, the sweep's median and per-round medians against the lone runs', the
median of the paired round ratios, the peak memory of the device where the two differ most (the
sweep's largest over its rounds against the lone runs' largest), and a summary: the median
paired ratio over every round of every candidate with its interquartile range, how many
candidates stay within 5%, and how many read the same peaks (within 1%) both ways.
Everything is kept under OUT (per sweep rK/: its report, its log, alone-N-rR.json for candidate
N's lone run after its round R) and OUT/summary.json; --report-only pairs them again.

    bench/sweep_vs_run.py --pipeprof build/cli/pipeprof --out /tmp/svr \\
        --common "--model mlp --devices cpu,cpu --batch 128" \\
        --sweep "--chunks 1,2,4,8 --measure top:12 --warmup 3 --steps 40 --rounds 4"
"""
import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time


def median(values):
    return statistics.median(values) if values else float("nan")


def quartiles(values):
    if len(values) < 2:
        return (median(values), median(values))
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def measured(report):
    return [c for c in report["candidates"] if c.get("status") == "measured" and c.get("measurement")]


PLAN = re.compile(r"^(?:plan|--time \S+): .* in (?P<rounds>\d+) rounds? of (?P<steps>\d+) steps? in all")
LINE = re.compile(r"^(?:partly )?measured \d+/\d+ (?P<label>\[.*?)(?: \(round \d+/\d+\))?: ")
LABEL = re.compile(r"^\[(?P<balance>[\d,]+)\] x(?P<chunks>\d+) (?P<mode>always|except_last|never)"
                   r"(?: (?P<schedule>[a-z0-9-]+)(?: v(?P<v>\d+))?)?(?: deferred-weights (?P<deferred>[\d,]+))?$")


def flag_value(flags, name, default):
    for index, flag in enumerate(flags):
        if flag == name and index + 1 < len(flags):
            return flags[index + 1]
        if flag.startswith(name + "="):
            return flag.split("=", 1)[1]
    return default


def round_steps(steps, rounds, r):
    """The sweep's steps in round r (tuner::roundSteps): the remainder goes to the first rounds,
    an extra round (r >= rounds) gets the share of the last."""
    return steps // rounds + (1 if r < steps % rounds else 0)


def key_of_candidate(c):
    return (tuple(c["balance"]), c["chunks"], c["checkpoint"], c["schedule"])


def key_of_label(match):
    return (tuple(int(b) for b in match["balance"].split(",")), int(match["chunks"]), match["mode"],
            match["schedule"] or "gpipe")


def run_flags(match):
    """`pipeprof run` flags for a candidate label the sweep printed."""
    flags = ["--balance", match["balance"], "--chunks", match["chunks"], "--checkpoint", match["mode"],
             "--schedule", match["schedule"] or "gpipe"]
    if match["v"]:
        flags += ["--stages-per-device", match["v"]]
    if match["deferred"]:  # "0,0" too: without it the run takes zb1p's default, d on device d
        flags += ["--deferred-weights", match["deferred"]]
    return flags


def split_rounds(measurement):
    """A sweep's measured steps, round by round, as its report counts them (`round_steps`: the
    rounds it kept, extra rounds included, rounds measured again left out)."""
    step_ns = measurement["step_ns"]
    out, start = [], 0
    for length in measurement.get("round_steps") or [len(step_ns)]:
        out.append(step_ns[start:start + length])
        start += length
    return out


def run_alone(args, common, match, warmup, steps, path, env):
    command = [args.pipeprof, "run", *common, *run_flags(match), "--warmup", str(warmup), "--steps", str(steps),
               "--json"]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    with open(path, "w") as file:
        file.write(result.stdout)
    if result.returncode != 0:
        print(f"{match.string}: pipeprof run failed: {result.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    return json.loads(result.stdout)["step_ns"]


def sweep_interleaved(args, common, sweep, directory, env):
    """One sweep with a lone run after each of its candidate rounds, kept under directory
    (report.json, sweep.log, alone-N-rR.json: candidate N's lone run after its round R);
    returns the seconds it took."""
    os.makedirs(directory, exist_ok=True)
    report_path = os.path.join(directory, "report.json")
    warmup = int(flag_value(sweep, "--warmup", flag_value(common, "--warmup", "3")))  # the sweep's default
    steps, rounds = None, None  # from the sweep's plan line, which states them whatever the flags
    command = [args.pipeprof, "sweep", *common, *sweep, "-o", report_path]
    print(" ".join(shlex.quote(part) for part in command), file=sys.stderr)
    lone_counts = {}  # candidate key: its lone runs so far
    started = time.time()
    with open(os.path.join(directory, "sweep.log"), "w") as log, \
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        for line in child.stdout:
            log.write(line)
            plan = PLAN.match(line)
            if plan:
                steps, rounds = int(plan["steps"]), int(plan["rounds"])
            found = LINE.match(line)
            label_match = LABEL.match(found["label"]) if found else None
            if not label_match:
                continue
            child.send_signal(signal.SIGSTOP)  # between two rounds: see the docstring
            try:
                if steps is None:
                    raise SystemExit(f"no plan line before the first round: see {directory}/sweep.log")
                key = key_of_label(label_match)
                r = lone_counts.setdefault(key, 0)
                lone_counts[key] += 1
                number = list(lone_counts).index(key) + 1
                run_alone(args, common, label_match, warmup, round_steps(steps, rounds, r),
                          os.path.join(directory, f"alone-{number}-r{r}.json"), env)
            finally:
                child.send_signal(signal.SIGCONT)
        if child.wait() != 0:
            raise SystemExit(f"the sweep failed: see {directory}/sweep.log")
    return time.time() - started


def paired_block(directory, seconds):
    """What one sweep's directory holds, paired: each measured candidate's rounds in the sweep
    (its report's) and its lone runs in order, a lone run after every kept round."""
    with open(os.path.join(directory, "report.json")) as file:
        report = json.load(file)
    labels = {}
    with open(os.path.join(directory, "sweep.log")) as log:
        for line in log:
            found = LINE.match(line)
            label_match = LABEL.match(found["label"]) if found else None
            if label_match:
                labels.setdefault(key_of_label(label_match), found["label"])
    lone = {}  # candidate key: {round: step_ns}
    lone_peaks = {}  # candidate key: each device's largest peak over its lone runs
    for name in os.listdir(directory):
        numbered = re.fullmatch(r"alone-\d+-r(\d+)\.json", name)
        if not numbered:
            continue
        with open(os.path.join(directory, name)) as file:
            text = file.read()
        if not text.strip():
            continue  # the run failed (its error went to stderr)
        run = json.loads(text)
        key = key_of_candidate(run["candidate"])
        lone.setdefault(key, {})[int(numbered[1])] = run["step_ns"]
        peaks = lone_peaks.setdefault(key, [])
        peaks[:] = [max(pair) for pair in zip(peaks, run["peak_bytes"])] if peaks else list(run["peak_bytes"])
    pairs = {}
    for c in measured(report):
        key = key_of_candidate(c["candidate"])
        if key not in lone:
            continue
        rounds = lone[key]
        pairs[labels.get(key, str(key))] = {"sweep": split_rounds(c["measurement"]),
                                            "alone": [rounds.get(r, []) for r in range(max(rounds) + 1)],
                                            "sweep_peak": c["measurement"].get("peak_bytes", []),
                                            "alone_peak": lone_peaks.get(key, [])}
    drift = report.get("calibration_drift") or {}
    return {"pairs": pairs, "seconds": seconds, "drift": drift.get("reference_ratio")}


def summarize(blocks):
    """Per candidate (over every block): medians both ways, the paired round ratios; and the summary."""
    rows = {}
    for block in blocks:
        for name, pair in block["pairs"].items():
            row = rows.setdefault(name, {"sweep": [], "alone": [], "ratios": [], "peak_ratios": []})
            # Peaks: each device's largest over the sweep's rounds against over the lone runs'.
            row["peak_ratios"].extend(peak_ratios(pair.get("sweep_peak", []), pair.get("alone_peak", [])))
            for sweep_round, lone_round in zip(pair["sweep"], pair["alone"]):
                if not sweep_round or not lone_round:
                    continue
                row["sweep"].append(median(sweep_round))
                row["alone"].append(median(lone_round))
                row["ratios"].append(median(sweep_round) / median(lone_round))
    ratios = [r for row in rows.values() for r in row["ratios"]]
    per_candidate = [median(row["ratios"]) for row in rows.values() if row["ratios"]]
    worst_peaks = [worst_peak(row) for row in rows.values() if row["peak_ratios"]]
    return rows, {"candidates": len(per_candidate), "rounds": len(ratios), "median_ratio": median(ratios),
                  "quartiles": quartiles(ratios),
                  "within_5pct": sum(abs(r - 1) <= 0.05 for r in per_candidate),
                  "peaks_compared": len(worst_peaks),
                  "peaks_within_1pct": sum(abs(r - 1) <= 0.01 for r in worst_peaks)}


def peak_ratios(sweep_peaks, lone_peaks):
    """Each device's peak in the sweep over its peak alone."""
    return [a / b for a, b in zip(sweep_peaks, lone_peaks) if b > 0]


def worst_ratio(ratios):
    """The ratio farthest from 1 (nan for none)."""
    return max(ratios, key=lambda r: abs(r - 1)) if ratios else float("nan")


def worst_peak(row):
    """The device whose peak differs most between the sweep and the lone runs: its ratio."""
    return worst_ratio(row["peak_ratios"])


def print_summary(blocks):
    rows, summary = summarize(blocks)
    print("| candidate | sweep ms | alone ms | paired sweep / alone | peak sweep / alone (worst device) "
          "| sweep's rounds (ms) | lone rounds (ms) |")
    print("|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        if not row["ratios"]:
            continue
        print(f"| {name} | {median(row['sweep']) / 1e6:.2f} | {median(row['alone']) / 1e6:.2f} "
              f"| {median(row['ratios']):.3f} | {worst_peak(row):.3f} "
              f"| {' '.join(f'{ns / 1e6:.1f}' for ns in row['sweep'])} "
              f"| {' '.join(f'{ns / 1e6:.1f}' for ns in row['alone'])} |")
    print()
    for index, block in enumerate(blocks):
        drift = block.get("drift")
        print(f"sweep {index}: {block['seconds']:.0f} s with its lone runs; its reference drift "
              f"{'none' if drift is None else f'{drift:.3f}'}")
    low, high = summary["quartiles"]
    print(f"{summary['candidates']} candidates, {summary['rounds']} rounds: sweep / alone per round, median "
          f"{summary['median_ratio']:.3f} (quartiles {low:.3f}-{high:.3f}); {summary['within_5pct']} candidates' "
          f"median ratio within 5%; peaks within 1% on every device: {summary['peaks_within_1pct']} of "
          f"{summary['peaks_compared']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="sweep-vs-run")
    parser.add_argument("--common", default="", help="flags both commands take: model, devices, batch, step")
    parser.add_argument("--sweep", default="", help="flags only the sweep takes (chunks, --measure, rounds...)")
    parser.add_argument("--repeats", type=int, default=1, help="sweeps, one after the other")
    parser.add_argument("--report-only", action="store_true",
                        help="pair again what OUT's sweeps kept (their reports and lone runs), measuring nothing")
    args = parser.parse_args()

    summary_path = os.path.join(args.out, "summary.json")
    if args.report_only:
        seconds = []
        if os.path.exists(summary_path):
            with open(summary_path) as file:
                seconds = [block.get("seconds", float("nan")) for block in json.load(file)["blocks"]]
        directories = sorted((name for name in os.listdir(args.out) if re.fullmatch(r"r\d+", name)),
                             key=lambda name: int(name[1:]))
        blocks = [paired_block(os.path.join(args.out, name), seconds[k] if k < len(seconds) else float("nan"))
                  for k, name in enumerate(directories)]
    else:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        common, sweep = shlex.split(args.common), shlex.split(args.sweep)
        blocks = []
        for repeat in range(args.repeats):
            directory = os.path.join(args.out, f"r{repeat}")
            blocks.append(paired_block(directory, sweep_interleaved(args, common, sweep, directory, env)))
    os.makedirs(args.out, exist_ok=True)
    with open(summary_path, "w") as file:
        json.dump({"blocks": blocks}, file, indent=1)
    print_summary(blocks)


if __name__ == "__main__":
    main()
