#!/usr/bin/env python3
"""How much of the references' drift a sweep's predictions should take: re-scores sweep reports.

A sweep times its reference pipelines again while it measures the candidates and scales every
prediction by a drift factor, ratio ** share (docs/cli.md, "The drift correction"). This script
re-reads reports and prints the step-time MAPE of their measured candidates over all reports
(mean, median, worst, how many pass 5% and 10%) for fixed shares (0 = no correction, 1 = the whole
ratio, 0.5 = its square root, the sweep's share before 2026-12-02) and for the share the sweep
applies now, tau^2 / (tau^2 + noise^2): noise the standard error of the log ratio the report's
own reference runs show (tuner::CalibrationDrift::referenceNoise), tau the machine's drift
between calibrating and measuring (kMachineDriftSd, 0.085). It then fits tau to the reports (the
spread of their log ratios less their median noise) and scores, on random halves, each fixed
share against the adaptive one with tau fitted on the other half, so that the best share does
not hang on a few sweeps.

    bench/drift_shrinkage.py [--baseline prediction|calibration] REPORT.json [REPORT.json ...]

--baseline says what each reference's steps while measuring are divided by: its calibrated
prediction (`predicted_ns`, what the sweep does; the default) or its median step in the report's
calibration (`calibration.measured.references`, GPipe `never` at that chunk count: the machine's
movement alone, without what the fit leaves unexplained of that pipeline; docs/performance.md,
"Drift against the references' calibrated steps").
Only reports that kept their predictions before drift and timed references are scored.
"""
import json
import math
import random
import statistics
import sys

SHARES = [0.0, 0.25, 0.5, 0.75, 1.0]
MACHINE_DRIFT_SD = 0.085  # tuner/calibration_drift.h, kMachineDriftSd


def baselines(report, rule):
    """Each reference's baseline by chunk count under `rule` (the docstring's --baseline)."""
    if rule == "calibration":
        timed = (report.get("calibration") or {}).get("measured", {}).get("references", [])
        return {r["chunks"]: r["step_ns_median"] for r in timed
                if r["schedule"] == "gpipe" and r["checkpoint"] == "never" and r.get("step_ns_median")}
    drift = report.get("calibration_drift") or {}
    return {r["chunks"]: r["predicted_ns"] for r in drift.get("references", []) if r.get("predicted_ns")}


def reference_noise(drift, baseline):
    """The standard error of the log ratio from the timed runs, or None with fewer than two."""
    by_chunks = {}
    for timing in drift.get("timings", []):
        if timing.get("step_ns") and baseline.get(timing["chunks"]):
            ratio = statistics.median(timing["step_ns"]) / baseline[timing["chunks"]]
            by_chunks.setdefault(timing["chunks"], []).append(math.log(ratio))
    runs = sum(len(values) for values in by_chunks.values())
    if runs < 2:
        return None
    means = [statistics.mean(values) for values in by_chunks.values()]
    squares = sum((x - statistics.mean(values)) ** 2 for values in by_chunks.values() for x in values)
    within = squares / (runs - len(means)) if runs > len(means) else 0.0
    between = statistics.variance(means) if len(means) > 1 else 0.0
    return math.sqrt(between / len(means) + within / runs)


def load(path, rule):
    with open(path) as file:
        report = json.load(file)
    drift = report.get("calibration_drift") or {}
    baseline = baselines(report, rule)
    ratios = [statistics.median(r["step_ns"]) / baseline[r["chunks"]]
              for r in drift.get("references", []) if r.get("step_ns") and baseline.get(r["chunks"])]
    pairs = [(c["prediction_before_drift"]["iteration_ns"], c["measurement"]["step_ns_median"])
             for c in report.get("candidates", [])
             if c.get("status") == "measured" and c.get("prediction_before_drift") and c.get("measurement")]
    if not ratios or not pairs:
        return None
    ratio = min(2.0, max(0.5, statistics.median(ratios)))
    return {"ratio": ratio, "noise": reference_noise(drift, baseline), "pairs": pairs}


def adaptive(tau):
    def share(sweep):
        if sweep["noise"] is None:
            return 0.5
        return tau * tau / (tau * tau + sweep["noise"] ** 2)
    return share


def fitted_tau(sweeps):
    logs = [math.log(sweep["ratio"]) for sweep in sweeps]
    noises = [sweep["noise"] ** 2 for sweep in sweeps if sweep["noise"] is not None]
    return math.sqrt(max(1e-6, statistics.pvariance(logs) - (statistics.median(noises) if noises else 0.0)))


def mape(sweep, share):
    factor = sweep["ratio"] ** share
    return 100.0 * statistics.mean(abs(factor * predicted - measured) / measured for predicted, measured in sweep["pairs"])


def main():
    paths = sys.argv[1:]
    rule = "prediction"
    if paths[:1] == ["--baseline"] and len(paths) > 1:
        rule, paths = paths[1], paths[2:]
        if rule not in ("prediction", "calibration"):
            sys.exit(f"--baseline {rule}: expected prediction or calibration")
    sweeps = [sweep for sweep in (load(path, rule) for path in paths) if sweep]
    if not sweeps:
        sys.exit("no report with measured candidates, predictions before drift and timed references")
    print(f"{len(sweeps)} sweeps; tau fitted to them: {fitted_tau(sweeps):.3f}")
    print("| share of the ratio | mean step MAPE | median | worst | sweeps past 5% | past 10% |")
    print("|---|---|---|---|---|---|")
    rules = [(f"{share:g}", lambda sweep, share=share: share) for share in SHARES]
    rules.append((f"tau^2 / (tau^2 + noise^2), tau {MACHINE_DRIFT_SD}", adaptive(MACHINE_DRIFT_SD)))
    for name, share in rules:
        scores = [mape(sweep, share(sweep)) for sweep in sweeps]
        print(f"| {name} | {statistics.mean(scores):.2f}% | {statistics.median(scores):.2f}% | {max(scores):.1f}% "
              f"| {sum(score > 5 for score in scores)} | {sum(score > 10 for score in scores)} |")
    print()
    halves = 0
    wins = {share: 0 for share in SHARES}
    totals = {share: 0.0 for share in SHARES}
    total_adaptive = 0.0
    for seed in range(50):
        order = list(range(len(sweeps)))
        random.Random(seed).shuffle(order)
        first, second = order[:len(order) // 2], order[len(order) // 2:]
        for fit, score in ((first, second), (second, first)):
            rule = adaptive(fitted_tau([sweeps[i] for i in fit]))
            ours = statistics.mean(mape(sweeps[i], rule(sweeps[i])) for i in score)
            total_adaptive += ours
            halves += 1
            for share in SHARES:
                theirs = statistics.mean(mape(sweeps[i], share) for i in score)
                totals[share] += theirs
                wins[share] += ours < theirs
    print(f"random halves ({halves}; the adaptive share's tau fitted on the other half): mean step MAPE "
          f"adaptive {total_adaptive / halves:.2f}%, " +
          ", ".join(f"w={share:g} {totals[share] / halves:.2f}% (adaptive better in {wins[share]})" for share in SHARES))


if __name__ == "__main__":
    main()
