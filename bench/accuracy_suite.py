#!/usr/bin/env python3
"""The standing accuracy suite: the sweeps a user runs first, each twice, in one table.

How far can a user trust a sweep on their own machine? This runs the sweeps people start
with -- the README's main job (scripts/demo.sh's sweep), the demo flags of the accuracy issue,
each zoo model's default sweep, a language model built from torch.nn layers that is not in the
zoo, one --procs 2 sweep, one bf16 and one adamw sweep -- twice each, one after the other, and
prints one markdown table with a row per run:

  - step MAPE after the drift factor (before it; since 2026-12-04 a measured candidate's
    factor is its own, at the machine's speed during its rounds: docs/cli.md), and the worst
    schedule family's MAPE;
  - peak MAPE (every candidate's every pipeline device);
  - Spearman of predicted against measured step;
  - the predicted-best's loss: how much slower the best predicted measured candidate ran than
    the best measured one;
  - the machine: the reference pipelines' speed range while measuring, the candidates whose
    rounds agree, the rounds measured again because another process took the CPUs, the
    candidates the sweep's run-off measured again (and how many the best measured was still not
    told apart from after it; docs/cli.md, "The run-off");
  - with --alone: each measured candidate's figure against the same candidate run alone with
    `pipeprof run` right after the sweep (the median |difference|, and the largest); with
    --paired instead, against lone runs beside each of its rounds (bench/sweep_vs_run.py: the
    sweep paused after every round while the candidate runs alone with that round's steps), each
    candidate's |median paired ratio - 1|: the machine's changes of speed between the sweep and
    the lone runs fall on both alike, and every round runs twice (resnet: 10 min a run, not 3);
    either way also how many candidates read the same peak alone (within 1% on every device);
  - the calibration's corrections: the range of its forward, backward and loss scales over
    every micro-batch size and reference shape, and of its step overheads;
  - last, the accuracy issue's targets: how many runs (or sweeps) meet each, and which do not;

then, per sweep, how far its two runs differ: the machine's speed between them (the median
ratio of their calibrations' reference pipelines, each the median step of the same pipeline),
each candidate's predicted step (before drift) between them, raw and with that ratio divided
out (the median, 90th percentile and largest difference), the candidates both runs measured
(how many, and their measured steps apart once the median of their ratios, the machine's speed
between the measuring phases, is divided out: the floor under any prediction's error, from 4
such candidates), and their step MAPEs. Every report and the table's data stay under OUT
(OUT/suite.json); --report-only re-reads them.

    bench/accuracy_suite.py --pipeprof build/cli/pipeprof --out /tmp/suite [--alone | --paired]
    bench/accuracy_suite.py --out /tmp/suite --sweeps demo gpt --runs 1     # a subset
    bench/accuracy_suite.py --out /tmp/suite --flags '--cpu-bind cores'     # every sweep bound

The language model is scripted with Debian's python3-torch (/usr/bin/python3; bootstrap with
PIPEPROF_BOOTSTRAP_PYTHON=1); without it, that sweep is skipped with a note.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

import sweep_vs_run
from schedule_accuracy import spearman
from training_step_sweeps import measured

DEMO = ("--model mlp --devices cpu,cpu --batch 128 --schedules gpipe,1f1b,interleaved,zb1p,interleaved-zb,zbv "
        "--stages-per-device 1,2 --chunks 1,2,4,8 --checkpoint always,except_last,never --measure top:12 "
        "--warmup 3 --steps 120 --rounds 8")
# name -> (model flags shared with `pipeprof run`, flags only the sweep takes)
SWEEPS = {
    "readme": (DEMO.split(" --schedules")[0], "--schedules" + DEMO.split(" --schedules")[1]),
    "demo-flags": ("--model mlp --devices cpu,cpu --batch 128",
                   "--chunks 1,2,4,8 --measure top:12 --warmup 3 --steps 40 --rounds 4"),
    "gpt": ("--model gpt --devices cpu,cpu", ""),
    "resnet": ("--model resnet --devices cpu,cpu", ""),
    "unet": ("--model unet --devices cpu,cpu", ""),
    "transformer-lm": ("--model {lm} --devices cpu,cpu --batch 16",
                       "--schedules 1f1b,interleaved,zb1p --chunks 2,4 --measure top:8 --warmup 2 --steps 12 "
                       "--rounds 3"),
    "procs2": ("--model mlp --devices cpu,cpu --batch 128 --procs 2", "--measure top:8"),
    "bf16": ("--model mlp --devices cpu,cpu --batch 128 --precision bf16", ""),
    "adamw": ("--model mlp --devices cpu,cpu --batch 128 --optimizer adamw", ""),
}


def family(candidate):
    return candidate["candidate"]["schedule"]


def mape(pairs):
    return statistics.mean(abs(p - m) / m * 100 for p, m in pairs) if pairs else float("nan")


def summarize(report):
    runs = measured(report)
    after = [(c["prediction"]["iteration_ns"], c["measurement"]["step_ns_median"]) for c in runs]
    before = [(c["prediction_before_drift"]["iteration_ns"], c["measurement"]["step_ns_median"])
              for c in runs if c.get("prediction_before_drift")]
    families = {}
    for c in runs:
        families.setdefault(family(c), []).append((c["prediction"]["iteration_ns"], c["measurement"]["step_ns_median"]))
    peaks = [abs(p - q) / q * 100 for c in runs
             for p, q in zip(c["prediction"]["peak_bytes"], c["measurement"]["peak_bytes"]) if q > 0]
    best_measured = min(runs, key=lambda c: c["measurement"]["step_ns_median"]) if runs else None
    ranked = [c for c in runs if c.get("predicted_rank", 0) > 0]
    best_predicted = min(ranked, key=lambda c: c["predicted_rank"]) if ranked else None
    loss = (best_predicted["measurement"]["step_ns_median"] / best_measured["measurement"]["step_ns_median"] - 1) * 100 \
        if best_measured and best_predicted else float("nan")
    return {"measured": len(runs), "step_mape": mape(after), "step_mape_before": mape(before),
            "family_mape": {name: mape(pairs) for name, pairs in families.items()},
            "peak_mape": statistics.mean(peaks) if peaks else float("nan"),
            "spearman": spearman([p for p, _ in after], [m for _, m in after]),
            "best_predicted_loss_pct": loss}


SCALES = ("forward", "backward", "loss", "after_stage_switch", "first_in_step")


def correction_ranges(calibration):
    """(low, high) of the calibration's forward, backward and loss scales, its stage switch and
    first-in-step scales (1 where not written) and step overheads (ms) over its own corrections
    and every shape's; None where it has none."""
    if not calibration:
        return None
    values = {name: [] for name in SCALES}
    values["overhead_ms"] = []
    for corrections in [calibration, *calibration.get("shapes", [])]:
        for scale in corrections.get("micro_batch_scales", []):
            for name in SCALES:
                values[name].append(scale.get(name, 1.0))
        values["overhead_ms"] += [o["ns"] / 1e6 for o in corrections.get("step_overhead_ns", [])]
    return {name: (min(v), max(v)) if v else None for name, v in values.items()}


def pipeprof_json(args, command, env):
    result = subprocess.run([args.pipeprof, *command], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()[-300:]}")
    return json.loads(result.stdout)


def conditions(args, report_path, env):
    return pipeprof_json(args, ["compare", report_path, "--json"], env)


def candidate_flags(candidate):
    """`pipeprof run` flags for a report's candidate object."""
    flags = ["--balance", ",".join(map(str, candidate["balance"])), "--chunks", str(candidate["chunks"]),
             "--checkpoint", candidate["checkpoint"], "--schedule", candidate["schedule"]]
    if candidate.get("stages_per_device", 1) > 1:
        flags += ["--stages-per-device", str(candidate["stages_per_device"])]
    if candidate.get("deferred_weights"):
        flags += ["--deferred-weights", ",".join(map(str, candidate["deferred_weights"]))]
    return flags


def alone(args, common, report, env):
    """Each measured candidate run alone right after the sweep, with as many steps after the same
    warm-up: |sweep / alone - 1| in percent, of the step's median and of the peak (the device
    where they differ most)."""
    steps, peaks = [], []
    for c in measured(report):
        m = c["measurement"]
        lone = pipeprof_json(args, ["run", *common, *candidate_flags(c["candidate"]), "--warmup",
                                    str(m["warmup_steps"]), "--steps", str(len(m["step_ns"])), "--json"], env)
        steps.append(abs(m["step_ns_median"] / lone["step_ns_median"] - 1) * 100)
        ratios = sweep_vs_run.peak_ratios(m.get("peak_bytes", []), lone.get("peak_bytes", []))
        peaks.append(abs(sweep_vs_run.worst_ratio(ratios) - 1) * 100)
    return steps, peaks


def paired(directory, seconds):
    """Each measured candidate's rounds against the lone runs beside them (sweep_vs_run.py):
    |median over its rounds of sweep / alone - 1| in percent, and of the peaks (the sweep's
    largest over its rounds against the lone runs', on the device where they differ most)."""
    block = sweep_vs_run.paired_block(directory, seconds)
    rows, _ = sweep_vs_run.summarize([block])
    steps = [abs(statistics.median(row["ratios"]) - 1) * 100 for row in rows.values() if row["ratios"]]
    peaks = [abs(sweep_vs_run.worst_peak(row) - 1) * 100 for row in rows.values() if row["peak_ratios"]]
    return steps, peaks


def run_sweep(args, name, run, env, lm_path):
    common_text, sweep_text = SWEEPS[name]
    common = shlex.split(common_text.format(lm=lm_path)) + shlex.split(args.flags)
    directory = os.path.join(args.out, f"{name}-{run}")
    os.makedirs(directory, exist_ok=True)
    report_path = os.path.join(directory, "report.json")
    command = ["sweep", *common, *shlex.split(sweep_text), "-o", report_path]
    print("$ pipeprof " + " ".join(shlex.quote(part) for part in command), file=sys.stderr, flush=True)
    started = time.time()
    if args.paired:
        try:
            sweep_vs_run.sweep_interleaved(args, common, shlex.split(sweep_text), directory, env)
            code = 0
        except SystemExit as failure:
            print(failure, file=sys.stderr)
            code = 1
    else:
        with open(os.path.join(directory, "sweep.log"), "w") as log:
            code = subprocess.run([args.pipeprof, *command], env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    row = {"sweep": name, "run": run, "seconds": time.time() - started}
    if code != 0:
        row["error"] = f"exit {code}: see {directory}/sweep.log"
        return row
    with open(report_path) as file:
        report = json.load(file)
    row.update(summarize(report))
    row["corrections"] = correction_ranges(report.get("calibration"))
    row["references"] = reference_medians(report.get("calibration"))
    row["conditions"] = conditions(args, report_path, env)
    row["predicted_before_drift"] = {
        json.dumps(c["candidate"], sort_keys=True): c["prediction_before_drift"]["iteration_ns"]
        for c in report["candidates"] if c.get("prediction_before_drift")}
    row["measured_steps"] = measured_steps(report)
    if args.alone:
        row["alone_pct"], row["alone_peak_pct"] = alone(args, common, report, env)
    elif args.paired:
        row["alone_pct"], row["alone_peak_pct"] = paired(directory, row["seconds"])
        row["alone_paired"] = True
    return row


def reference_medians(calibration):
    """Each reference pipeline's median step, by its shape and chunk count."""
    references = ((calibration or {}).get("measured") or {}).get("references", [])
    return {f"{r['schedule']} {r['checkpoint']} x{r['chunks']}": r["step_ns_median"] for r in references}


def measured_steps(report):
    """Each measured candidate's median step, by candidate."""
    return {json.dumps(c["candidate"], sort_keys=True): c["measurement"]["step_ns_median"] for c in measured(report)}


def machine_ratio(first, second):
    """The median ratio of the same reference pipelines' steps, second run over first: the
    machine's (and the process's) speed between the calibrations; 1.0 when none is shared."""
    ratios = [second[k] / first[k] for k in first if k in second and first[k] > 0]
    return statistics.median(ratios) if ratios else 1.0


def differences(ratios):
    """'median, p90, largest' of |ratio - 1| in percent."""
    if not ratios:
        return "-"
    d = sorted(abs(r - 1) * 100 for r in ratios)
    return f"{fmt(statistics.median(d))}%, {fmt(d[int(0.9 * (len(d) - 1))])}%, {fmt(d[-1])}%"


def paired_runs(rows):
    """Each sweep's runs that did not fail, where it has two or more: {sweep: [run 1, run 2, ...]}."""
    by_sweep = {}
    for row in rows:
        if "error" not in row:
            by_sweep.setdefault(row["sweep"], []).append(row)
    return {name: runs for name, runs in by_sweep.items() if len(runs) >= 2}


def run_ratios(runs):
    """A sweep's two runs: the machine's speed between them (machine_ratio) and each candidate's
    predicted step before drift, run 2 over run 1, raw and with that speed divided out."""
    first, second = runs[0]["predicted_before_drift"], runs[1]["predicted_before_drift"]
    shared = [key for key in first if key in second]
    machine = machine_ratio(runs[0].get("references", {}), runs[1].get("references", {}))
    raw = [second[k] / first[k] for k in shared]
    return machine, raw, [ratio / machine for ratio in raw]


# Fewer candidates measured by both runs than this leave their median ratio (the machine's speed
# while they measured) too close to each of them to say how far apart they lie.
MIN_REMEASURED = 4


def remeasured_apart(runs):
    """The candidates both runs measured: their measured steps, run 2 over run 1, each over the
    median of those ratios (the machine's speed between the runs' measuring phases): how far
    one measurement of a candidate lies from another, the floor under any prediction's error.
    (count, [|ratio - 1| ...]); the list is empty below MIN_REMEASURED."""
    first, second = runs[0].get("measured_steps", {}), runs[1].get("measured_steps", {})
    ratios = [second[k] / first[k] for k in first if k in second and first[k] > 0]
    if len(ratios) < MIN_REMEASURED:
        return len(ratios), []
    machine = statistics.median(ratios)
    return len(ratios), [ratio / machine for ratio in ratios]


# The accuracy issue's targets (docs/performance.md, "The accuracy suite"): per run, its value
# and the bound it must not pass; None where the run has no such figure.
RUN_TARGETS = [
    ("step MAPE after the drift factor <= 5%", lambda row: row["step_mape"], 5.0),
    ("step MAPE before it <= 7%", lambda row: row["step_mape_before"], 7.0),
    ("every schedule family <= 10%", lambda row: max(row["family_mape"].values(), default=None), 10.0),
    ("peak MAPE <= 2%", lambda row: row["peak_mape"], 2.0),
    ("the predicted-best within 3% of the best measured", lambda row: row["best_predicted_loss_pct"], 3.0),
    ("each candidate within 5% of itself alone (the median)",
     lambda row: statistics.median(row["alone_pct"]) if row.get("alone_pct") else None, 5.0),
]


def correction_outside(row):
    """The run's scales outside 0.8-1.25, as 'loss 1.62' (empty where all are inside)."""
    ranges = row.get("corrections") or {}
    out = []
    for name in SCALES:
        if ranges.get(name):
            low, high = ranges[name]
            out += [f"{name} {value:.2f}" for value in (low, high) if not 0.8 <= value <= 1.25]
    return out


def print_targets(rows):
    """How many runs (sweeps, for the runs' agreement) meet each of the issue's targets, and
    which do not."""
    runs = [row for row in rows if "error" not in row]
    print("| target | met | not met |")
    print("|---|---|---|")
    for name, value_of, bound in RUN_TARGETS:
        values = [(row, value_of(row)) for row in runs]
        values = [(row, value) for row, value in values if value is not None and value == value]
        if not values:
            continue
        misses = [f"{row['sweep']}-{row['run']} {fmt(value)}%" for row, value in values if value > bound]
        print(f"| {name} | {len(values) - len(misses)} of {len(values)} | {', '.join(misses) or '-'} |")
    apart = {}
    for name, pair in paired_runs(rows).items():
        _, _, at_speed = run_ratios(pair)
        if at_speed:
            apart[name] = statistics.median(abs(ratio - 1) * 100 for ratio in at_speed)
    if apart:
        misses = [f"{name} {fmt(value)}%" for name, value in apart.items() if value > 3.0]
        print(f"| the two runs' predictions within 3% at the machine's speed (the median) | "
              f"{len(apart) - len(misses)} of {len(apart)} | {', '.join(misses) or '-'} |")
    scaled = [(row, correction_outside(row)) for row in runs if row.get("corrections")]
    misses = [f"{row['sweep']}-{row['run']} {' '.join(outside)}" for row, outside in scaled if outside]
    if scaled:
        print(f"| the corrections within 0.8-1.25 | {len(scaled) - len(misses)} of {len(scaled)} | "
              f"{', '.join(misses) or '-'} |")


def fmt(value, pattern="{:.1f}"):
    return "n/a" if value is None or value != value else pattern.format(value)


def print_table(rows):
    print("| sweep | run | measured | step MAPE (before drift) | worst family | peak MAPE | Spearman "
          "| predicted-best's loss | machine speed (refs) | rounds agree | measured again | run-off (tied after) "
          "| alone vs sweep |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['sweep']} | {row['run']} | {row['error']} ||||||||||")
            continue
        worst = max(row["family_mape"].items(), key=lambda item: item[1], default=("-", float("nan")))
        c = row["conditions"]
        speed = (f"{fmt(c.get('reference_ratio_low'), '{:.2f}')}-{fmt(c.get('reference_ratio_high'), '{:.2f}')}x"
                 if c.get("reference_ratio_median") else "-")
        lone = row.get("alone_pct")
        alone_text = f"{fmt(statistics.median(lone))}% (max {fmt(max(lone))}%)" if lone else "-"
        if lone and row.get("alone_paired"):
            alone_text += ", paired"
        lone_peaks = row.get("alone_peak_pct") or []
        if lone_peaks:
            alone_text += f"; peaks within 1%: {sum(d <= 1 for d in lone_peaks)}/{len(lone_peaks)}"
        print(f"| {row['sweep']} | {row['run']} | {row['measured']} | {fmt(row['step_mape'])}% "
              f"({fmt(row['step_mape_before'])}%) | {worst[0]} {fmt(worst[1])}% | {fmt(row['peak_mape'])}% "
              f"| {fmt(row['spearman'], '{:.2f}')} | {fmt(row['best_predicted_loss_pct'])}% | {speed} "
              f"| {c.get('rounds_agree')}/{row['measured']} | {c.get('rounds_measured_again')} "
              f"| {c.get('run_off_candidates', 0)} ({len(c.get('tied_with_best_measured') or [])}) | {alone_text} |")
    print()
    print("| sweep | candidates | machine, run 2 / run 1 | prediction, run 2 / run 1: median, p90, largest difference "
          "| the same at the machine's speed | measured by both: how many, their steps apart at the machine's speed "
          "| step MAPE, run 1 / run 2 |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in paired_runs(rows).items():
        machine, raw, at_speed = run_ratios(runs)
        both, apart = remeasured_apart(runs)
        print(f"| {name} | {len(raw)} | {fmt(machine, '{:.3f}')} | {differences(raw)} | {differences(at_speed)} | "
              f"{both}: {differences(apart)} | {fmt(runs[0]['step_mape'])}% / {fmt(runs[1]['step_mape'])}% |")
    print()
    print("| sweep | run | forward scale | backward scale | loss scale | stage switch | first in step | step overhead |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        ranges = row.get("corrections")
        if not ranges:
            continue
        cells = [f"{ranges[name][0]:.2f}-{ranges[name][1]:.2f}" if ranges.get(name) else "-" for name in SCALES]
        overhead = ranges["overhead_ms"]
        cells.append(f"{overhead[0]:.1f}-{overhead[1]:.1f} ms" if overhead else "-")
        print(f"| {row['sweep']} | {row['run']} | " + " | ".join(cells) + " |")
    print()
    print_targets(rows)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="accuracy-suite")
    parser.add_argument("--sweeps", nargs="+", default=list(SWEEPS), choices=list(SWEEPS))
    parser.add_argument("--runs", type=int, default=2, help="runs of each sweep, one after the other")
    parser.add_argument("--flags", default="",
                        help="flags every sweep (and every lone `pipeprof run`) takes too, e.g. '--cpu-bind cores'")
    lone = parser.add_mutually_exclusive_group()
    lone.add_argument("--alone", action="store_true", help="also run each measured candidate alone after the sweep")
    lone.add_argument("--paired", action="store_true",
                      help="run each measured candidate alone beside each of its rounds (bench/sweep_vs_run.py)")
    parser.add_argument("--report-only", action="store_true", help="re-read OUT/suite.json")
    args = parser.parse_args()
    suite_path = os.path.join(args.out, "suite.json")
    if args.report_only:
        with open(suite_path) as file:
            suite = json.load(file)
        for row in suite["rows"]:  # a suite written before rows kept their references or measured steps
            report_path = os.path.join(args.out, f"{row['sweep']}-{row['run']}", "report.json")
            if ("references" not in row or "measured_steps" not in row) and os.path.exists(report_path):
                with open(report_path) as file:
                    report = json.load(file)
                row.setdefault("references", reference_medians(report.get("calibration")))
                row.setdefault("measured_steps", measured_steps(report))
    else:
        os.makedirs(args.out, exist_ok=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        lm_path = os.path.abspath(os.path.join(args.out, "transformer_lm.pt"))
        sweeps = list(args.sweeps)
        if "transformer-lm" in sweeps and not os.path.exists(lm_path):
            made = subprocess.run(["/usr/bin/python3", "-c", "import sys; sys.path.insert(0, 'bench'); "
                                   f"import imported_models as m; m.save_model('transformer_lm', {lm_path!r})"],
                                  capture_output=True, text=True)
            if made.returncode != 0:
                print("transformer-lm skipped: scripting it needs /usr/bin/python3 with torch "
                      "(PIPEPROF_BOOTSTRAP_PYTHON=1 ./scripts/bootstrap.sh): " + made.stderr.strip()[-200:],
                      file=sys.stderr)
                sweeps.remove("transformer-lm")
        suite = {"cpu": cpu_name(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
        for name in sweeps:
            for run in range(1, args.runs + 1):
                suite["rows"].append(run_sweep(args, name, run, env, lm_path))
                with open(suite_path, "w") as file:
                    json.dump(suite, file, indent=1)
        suite["ended"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        with open(suite_path, "w") as file:
            json.dump(suite, file, indent=1)
    print(f"{suite['cpu']}, {suite['started']} to {suite.get('ended', '?')}")
    print()
    print_table(suite["rows"])


if __name__ == "__main__":
    main()
