#!/usr/bin/env python3
"""Two calibration fits compared on the same measurements: the accuracy suite's sweeps refitted.

Each sweep of an accuracy suite's output (bench/accuracy_suite.py --out DIR: DIR/<sweep>-<run>/
report.json, its traces in report.traces/ with the calibration's reference pipelines in
report.traces/calibration/) is fitted again with `pipeprof calibrate --refit` by two pipeprof
builds, A and B, and every candidate of the sweep's space is predicted with each refitted
calibration (`pipeprof sweep ... --measure none --calibration`, a --procs sweep with the link its
report recorded). Nothing is timed, so the two fits differ by the fit alone, not by the machine's
speed between two sweeps.

Per sweep and fit it prints:
  between runs  how far run 2's prediction of each candidate lies from run 1's (both refitted by
                that fit), after dividing by the median ratio (the machine's speed between the
                runs): median and 90th percentile over every candidate of the space
  step MAPE     each run's measured candidates (median step) against that fit's predictions
                before the drift factor
  after drift   the same after the sweep's one drift factor as that fit would have made it (its
                references' steps while measuring over that fit's prediction of them, to the
                sweep's share; not each candidate's own factor)
  signed        the mean signed error after that drift factor (predicted over measured, minus 1)
                over both runs' measured candidates of one stage per device and of two or more
  scales        the range of the forward, backward and loss scales over every shape's entries

With several suites (--suite A B ...) each sweep's rows name their suite, and a last table sums
each fit over every run: step MAPE before and after drift, the runs past the accuracy issue's
5% after drift and 7% before it, and the sweeps whose two runs lie within 3% at the median.

  bench/refit_comparison.py --suite /tmp/suite --pipeprof-a old/pipeprof --pipeprof-b build/cli/pipeprof
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accuracy_suite  # noqa: E402  (the suite's sweeps and their flags)


def candidate_key(candidate):
    return json.dumps(candidate, sort_keys=True)


def run_json(command, env):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(shlex.quote, command))} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def recorded_link_flags(pipeprof, run_dir, env):
    """A --procs sweep's link between ranks as its report recorded it, for a build that takes it
    (`sweep --link-latency`, since 2026-12-05): without it the refit measures the loopback link
    afresh, and the predictions move with it from one refit to the next."""
    with open(os.path.join(run_dir, "report.json")) as file:
        link = (json.load(file).get("process_layout") or {}).get("link")
    if not link:
        return []
    if "--link-latency" not in run_json([pipeprof, "sweep", "--help"], env).stdout:
        print(f"note: {pipeprof} measures the link of {run_dir} afresh (it has no --link-latency)", file=sys.stderr)
        return []
    return ["--link-latency", f"{link['latency_ns']}ns", "--link-bandwidth", f"{link['bandwidth_bytes_per_s']}"]


def predict_space(pipeprof, name, run_dir, calibration, tag, env, lm_path):
    """Every candidate's prediction before drift under `calibration`, by candidate."""
    common, sweep = accuracy_suite.SWEEPS[name]
    words = shlex.split(common.format(lm=lm_path)) + shlex.split(sweep)
    flags, skip = [], False
    for word in words:  # the space only: what is measured does not matter here
        if skip:
            skip = False
        elif word in ("--measure", "--warmup", "--steps", "--rounds"):
            skip = True
        else:
            flags.append(word)
    flags += recorded_link_flags(pipeprof, run_dir, env)
    output = os.path.join(run_dir, f"refit-{tag}.report.json")
    run_json([pipeprof, "sweep", *flags, "--measure", "none", "--profile", os.path.join(run_dir, "profile.json"),
              "--calibration", calibration, "-o", output], env)
    with open(output) as file:
        report = json.load(file)
    return {candidate_key(c["candidate"]): (c.get("prediction_before_drift") or c["prediction"])["iteration_ns"]
            for c in report["candidates"] if c.get("prediction")}


def drift_factor(report, predicted):
    """The sweep's one drift factor had it predicted with `predicted` (candidate key -> ns): its
    references' steps while measuring over the prediction of each (GPipe, `never`, the balance its
    calibration timed), the median over chunk counts, to the sweep's own share; 1 without them."""
    drift = report.get("calibration_drift") or {}
    timed = {}
    for reference in report["calibration"]["measured"]["references"]:
        if reference["schedule"] == "gpipe" and reference["checkpoint"] == "never":
            timed[reference["chunks"]] = reference
    ratios = []
    for reference in drift.get("references", []):
        calibrated = timed.get(reference["chunks"])
        if calibrated is None or not reference["step_ns"]:
            continue
        key = candidate_key({"balance": calibrated["balance"], "batch": report["environment"]["batch"],
                             "checkpoint": "never", "chunks": reference["chunks"], "schedule": "gpipe"})
        if key in predicted:
            ratios.append(statistics.median(reference["step_ns"]) / predicted[key])
    return statistics.median(ratios) ** drift.get("share", 0.5) if ratios else 1.0


def scale_ranges(calibration_path):
    with open(calibration_path) as file:
        calibration = json.load(file)
    values = {"forward": [], "backward": [], "loss": []}
    for corrections in [calibration] + calibration.get("shapes", []):
        for scale in corrections.get("micro_batch_scales", []):
            for kind in values:
                values[kind].append(scale[kind])
    return " ".join(f"{min(v):.2f}-{max(v):.2f}" if v else "-" for v in values.values())


def compare(args, suite, name, env):
    rows = []
    run_dirs = [os.path.join(suite, f"{name}-{run}") for run in (1, 2)]
    reports = []
    for run_dir in run_dirs:
        with open(os.path.join(run_dir, "report.json")) as file:
            reports.append(json.load(file))
        with open(os.path.join(run_dir, "profile.json"), "w") as file:
            json.dump(reports[-1]["profile"], file)
    lm_path = os.path.join(suite, "transformer_lm.pt")
    for tag, pipeprof in (("A", args.pipeprof_a), ("B", args.pipeprof_b)):
        predictions, calibrations = [], []
        for run_dir in run_dirs:
            calibration = os.path.join(run_dir, f"refit-{tag}.calibration.json")
            run_json([pipeprof, "calibrate", "--refit", os.path.join(run_dir, "report.json"), "-o", calibration], env)
            calibrations.append(calibration)
            predictions.append(predict_space(pipeprof, name, run_dir, calibration, tag, env, lm_path))
        common = [key for key in predictions[0] if key in predictions[1]]
        ratios = [predictions[1][key] / predictions[0][key] for key in common]
        machine = statistics.median(ratios)
        apart = sorted(abs(ratio / machine - 1) for ratio in ratios)
        errors, drifted = [], []
        signed = {1: [], 2: []}  # by stages per device, both runs: after drift
        for report, predicted in zip(reports, predictions):
            measured = {candidate_key(c["candidate"]): c["measurement"]["step_ns_median"]
                        for c in report["candidates"] if c.get("status") == "measured"}
            factor = drift_factor(report, predicted)
            for errors_of, scale in ((errors, 1.0), (drifted, factor)):
                errors_of.append(statistics.mean(abs(scale * predicted[key] / ns - 1)
                                                 for key, ns in measured.items() if key in predicted))
            for key, ns in measured.items():
                if key in predicted:
                    v = min(2, json.loads(key).get("stages_per_device", 1))
                    signed[v].append(factor * predicted[key] / ns - 1)
        label = name if len(args.suite) == 1 else f"{os.path.basename(suite.rstrip('/'))} {name}"
        rows.append((label, tag, len(common), 100 * apart[len(apart) // 2], 100 * apart[len(apart) * 9 // 10],
                     100 * errors[0], 100 * errors[1], 100 * drifted[0], 100 * drifted[1],
                     *(f"{100 * statistics.mean(signed[v]):+.1f}%" if signed[v] else "-" for v in (1, 2)),
                     scale_ranges(calibrations[0]), scale_ranges(calibrations[1])))
    return rows


def print_totals(rows):
    """Per fit, summed over every run of every sweep compared."""
    print()
    print("| fit | runs | step MAPE summed: before drift / after | runs over 7% before / over 5% after | "
          "sweeps whose two runs lie within 3% (median) |")
    print("|---|---|---|---|---|")
    for tag in ("A", "B"):
        own = [row for row in rows if row[1] == tag]
        before = [value for row in own for value in (row[5], row[6])]
        after = [value for row in own for value in (row[7], row[8])]
        print("| {} | {} | {:.1f} / {:.1f} | {} / {} | {} of {} |".format(
            tag, len(before), sum(before), sum(after), sum(v > 7 for v in before), sum(v > 5 for v in after),
            sum(row[3] <= 3 for row in own), len(own)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", required=True, nargs="+", help="accuracy suites' --out directories")
    parser.add_argument("--pipeprof-a", required=True, help="the pipeprof whose fit is the baseline")
    parser.add_argument("--pipeprof-b", default="build/cli/pipeprof")
    parser.add_argument("--sweeps", nargs="+", help="default: every sweep with both runs in a suite")
    args = parser.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    print("| sweep | fit | candidates | between runs: median, p90 | step MAPE run 1 / run 2 | after drift | "
          "signed after drift: v1 / v2 | scales run 1 (forward backward loss) | run 2 |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for suite in args.suite:
        names = args.sweeps or [name for name in accuracy_suite.SWEEPS
                                if all(os.path.isdir(os.path.join(suite, f"{name}-{run}")) for run in (1, 2))]
        for name in names:
            for row in compare(args, suite, name, env):
                rows.append(row)
                print("| {} | {} | {} | {:.1f}%, {:.1f}% | {:.1f}% / {:.1f}% | {:.1f}% / {:.1f}% | {} / {} | {} | {} |"
                      .format(*row),
                      flush=True)
    if len(args.suite) > 1:
        print_totals(rows)


if __name__ == "__main__":
    main()
