#!/usr/bin/env python3
"""Re-predicts the peak memory of every measured candidate of sweep reports and compares it with the measurement.

The memory model is deterministic and the measured peaks of a report do not depend on the
simulator, so one report with many measured candidates (`--measure all --steps 1 --rounds 1`)
checks a change of the memory model against the same runs, before and after:

    build/cli/pipeprof sweep --model unet --devices cpu,cpu --measure all --warmup 1 --steps 1 \\
        --rounds 1 -o unet/report.json
    bench/peak_accuracy.py build/cli/pipeprof unet/report.json [--profile unet.profile.json]

Without --profile the report's own profile is used. Each candidate is predicted as the sweep
predicted it: on the report's cluster, with its calibration (which orders the ops, so it moves
peaks) and the candidate's deferred weights. --clear-skip-flag FIELD (repeatable) predicts as if
the profile's skips lacked that boolean field, e.g. gradient_slice_of_output: a memory-model change
a profile field switches on, checked against the same runs. Prints, per report, the mean absolute
and signed percentage error of the largest per-partition peak (the sweep's peak MAPE; again
against the late-frees peak, late_peak_bytes: every free another device makes seen at the latest)
and of every partition's peak, how many measured partition peaks pass the prediction and how many
pass its late-frees peak, and the candidates with the largest errors.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MIB = 2**20
# A measured peak this far over a predicted one counts as over it (a 64 MiB peak's 0.3 MiB).
LATE_TOLERANCE = 0.005


def predict_peaks(pipeprof, profile_path, setting, candidate, devices):
    """`setting`: the simulate flags naming the report's cluster and calibration, where it has them."""
    balance = ",".join(str(layers) for layers in candidate["balance"])
    command = [pipeprof, "simulate", "--profile", profile_path, *setting,
               "--batch", str(candidate["batch"]), "--balance", balance, "--chunks", str(candidate["chunks"]),
               "--checkpoint", candidate["checkpoint"], "--schedule", candidate.get("schedule", "gpipe"),
               "--stages-per-device", str(candidate.get("stages_per_device", 1)), "--json"]
    if "--cluster" not in setting:
        command += ["--devices", str(devices)]
    if candidate.get("deferred_weights"):
        command += ["--deferred-weights", ",".join(map(str, candidate["deferred_weights"]))]
    result = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    return result["peak_bytes"], result["peak_op"], result.get("late_peak_bytes") or result["peak_bytes"]


def error_pct(predicted, measured):
    return (predicted - measured) / measured * 100.0


def compare(pipeprof, report_path, profile_path, cleared_skip_flags, worst):
    with open(report_path) as f:
        report = json.load(f)
    with tempfile.TemporaryDirectory() as scratch:
        if profile_path is None:
            profile = report["profile"]
        else:
            with open(profile_path) as f:
                profile = json.load(f)
        for skip in profile.get("skips", []):
            for flag in cleared_skip_flags:
                skip.pop(flag, None)
        profile_path = os.path.join(scratch, "profile.json")
        with open(profile_path, "w") as f:
            json.dump(profile, f)
        setting = []
        for key in ("cluster", "calibration"):
            if report.get(key):
                path = os.path.join(scratch, key + ".json")
                with open(path, "w") as f:
                    json.dump(report[key], f)
                setting += ["--" + key, path]
        largest, largest_late, partitions, rows, late = [], [], [], [], []
        for result in report["candidates"]:
            measurement = result.get("measurement")
            if result.get("status") != "measured" or not measurement or not measurement.get("peak_bytes"):
                continue
            candidate = result["candidate"]
            measured = measurement["peak_bytes"]
            predicted, peak_ops, late_peaks = predict_peaks(pipeprof, profile_path, setting, candidate, len(measured))
            error = error_pct(max(predicted), max(measured))
            largest.append(error)
            largest_late.append(error_pct(max(late_peaks), max(measured)))
            partitions += [error_pct(p, m) for p, m in zip(predicted, measured)]
            late += list(zip(predicted, late_peaks, measured))
            rows.append((error, candidate, predicted, measured, peak_ops))
    if not largest:
        print(f"{report_path}: no measured candidate with peaks")
        return
    print(f"{report_path}: {len(largest)} measured candidates; largest peak: MAPE {statistics.mean(map(abs, largest)):.2f}%"
          f" bias {statistics.mean(largest):+.2f}% (from {min(largest):+.1f}% to {max(largest):+.1f}%);"
          f" every partition: MAPE {statistics.mean(map(abs, partitions)):.2f}% bias {statistics.mean(partitions):+.2f}%")
    # The late-frees peak (Prediction::latePeakBytes) bounds what a long run reaches: how many
    # measured peaks pass the prediction, how many pass that bound, and how far above them it lies.
    over = sum(m > p * (1 + LATE_TOLERANCE) for p, _, m in late)
    over_late = sum(m > q * (1 + LATE_TOLERANCE) for _, q, m in late)
    raised = [error_pct(q, m) for p, q, m in late if q > p]
    print(f"  largest peak against the late-frees peak instead: MAPE {statistics.mean(map(abs, largest_late)):.2f}%"
          f" bias {statistics.mean(largest_late):+.2f}%")
    print(f"  every partition: {over} of {len(late)} measured over the prediction by more than "
          f"{LATE_TOLERANCE * 100:.1f}%, {over_late} over the late-frees peak; that peak above the prediction on "
          f"{len(raised)}, there {statistics.mean(raised) if raised else 0:+.2f}% over the measured on average")
    rows.sort(key=lambda row: -abs(row[0]))
    for error, candidate, predicted, measured, peak_ops in rows[:worst]:
        balance = ",".join(str(layers) for layers in candidate["balance"])
        print(f"  {error:+6.1f}%  [{balance}] x{candidate['chunks']} {candidate['checkpoint']}:"
              f" predicted {' / '.join(f'{b / MIB:.2f}' for b in predicted)} MiB"
              f" (at {', '.join(peak_ops)}), measured {' / '.join(f'{b / MIB:.2f}' for b in measured)} MiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeprof", help="the pipeprof binary whose simulator predicts")
    parser.add_argument("reports", nargs="+", help="pipeprof.report/v1 files with measured candidates")
    parser.add_argument("--profile", help="predict from this profile instead of each report's own")
    parser.add_argument("--clear-skip-flag", action="append", default=[], metavar="FIELD",
                        help="predict as if every skip of the profile lacked this boolean field")
    parser.add_argument("--worst", type=int, default=5, help="candidates with the largest errors to list")
    args = parser.parse_args()
    for report_path in args.reports:
        compare(args.pipeprof, report_path, args.profile, args.clear_skip_flag, args.worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
