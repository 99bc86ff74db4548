#!/usr/bin/env python3
"""What the calibration's loss scale changes: re-predicts sweep reports with and without it.

Since 2026-11-28 a calibration scales the loss op by what it took in the reference pipelines
(docs/simulator.md, "Calibration"). For each report this script predicts every measured candidate
twice from the report's profile and cluster with `pipeprof simulate`: with the report's
calibration, and with the same calibration's loss scales set to 1 and each step overhead raised
by what the loss scales added to its reference's simulated step (the overhead the fit would have
found without them). Both take the report's drift factor (it compares the references'
predictions, which the overheads make equal to their medians). Prints, per report, the step MAPE
after drift and the peak MAPE per (candidate, device), with and without.

    bench/loss_scale_effect.py PIPEPROF REPORT.json [REPORT.json ...]
"""
import copy
import json
import os
import subprocess
import sys
import tempfile


def simulate(pipeprof, folder, calibration, candidate):
    """(iteration_ns, peak_bytes) of one candidate under `calibration`."""
    with open(os.path.join(folder, "calibration.json"), "w") as out:
        json.dump(calibration, out)
    command = [pipeprof, "simulate", "--json",
               "--profile", os.path.join(folder, "profile.json"),
               "--cluster", os.path.join(folder, "cluster.json"),
               "--calibration", os.path.join(folder, "calibration.json"),
               "--batch", str(candidate["batch"]),
               "--balance", ",".join(map(str, candidate["balance"])),
               "--chunks", str(candidate["chunks"]),
               "--checkpoint", candidate["checkpoint"],
               "--schedule", candidate["schedule"],
               "--stages-per-device", str(candidate.get("stages_per_device", 1))]
    if candidate.get("deferred_weights"):
        command += ["--deferred-weights", ",".join(map(str, candidate["deferred_weights"]))]
    out = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    return out["iteration_ns"], out["peak_bytes"]


def correction_sets(calibration):
    """The calibration's own corrections and each shape's."""
    return [calibration] + calibration.get("shapes", [])


def shape_set(calibration, reference):
    for shape in calibration.get("shapes", []):
        if shape["schedule"] == reference["schedule"] and shape.get("checkpoint", "never") == reference["checkpoint"]:
            return shape
    return calibration


def reference_candidate(reference, batch):
    schedule, stages = reference["schedule"], 1
    if " v" in schedule:
        schedule, stages = schedule.split(" v")[0], int(schedule.split(" v")[1])
    if schedule == "zbv":
        stages = 2
    return {"batch": batch, "balance": reference["balance"], "chunks": reference["chunks"],
            "checkpoint": reference["checkpoint"], "schedule": schedule, "stages_per_device": stages}


def without_loss_scales(pipeprof, folder, calibration):
    """The calibration with loss scales of 1 and the step overheads refitted to them."""
    no_overhead = copy.deepcopy(calibration)
    for corrections in correction_sets(no_overhead):
        corrections["step_overhead_ns"] = []
    no_loss_no_overhead = copy.deepcopy(no_overhead)
    no_loss = copy.deepcopy(calibration)
    for corrections in correction_sets(no_loss_no_overhead) + correction_sets(no_loss):
        for scale in corrections.get("micro_batch_scales", []):
            scale["loss"] = 1.0
    for reference in calibration["measured"]["references"]:
        candidate = reference_candidate(reference, calibration["measured"]["batch"])
        with_ns, _ = simulate(pipeprof, folder, no_overhead, candidate)
        without_ns, _ = simulate(pipeprof, folder, no_loss_no_overhead, candidate)
        for overhead in shape_set(no_loss, reference)["step_overhead_ns"]:
            if overhead["chunks"] == reference["chunks"] and overhead["ns"] > 0:  # a clamped 0 stays 0
                overhead["ns"] += with_ns - without_ns
    return no_loss


def mean(values):
    return sum(values) / len(values)


def main():
    pipeprof, reports = sys.argv[1], sys.argv[2:]
    for path in reports:
        with open(path) as f:
            report = json.load(f)
        folder = tempfile.mkdtemp()
        for key in ("profile", "cluster"):
            with open(os.path.join(folder, key + ".json"), "w") as out:
                json.dump(report[key], out)
        calibrations = {"with": report["calibration"],
                        "without": without_loss_scales(pipeprof, folder, report["calibration"])}
        drift = report.get("calibration_drift", {}).get("factor", 1.0)
        step_errors = {name: [] for name in calibrations}
        peak_errors = {name: [] for name in calibrations}
        for entry in report["candidates"]:
            if entry["status"] != "measured":
                continue
            measured = entry["measurement"]
            for name, calibration in calibrations.items():
                iteration_ns, peaks = simulate(pipeprof, folder, calibration, entry["candidate"])
                step_errors[name].append(abs(iteration_ns * drift - measured["step_ns_median"])
                                         / measured["step_ns_median"] * 100)
                peak_errors[name] += [abs(p - m) / m * 100 for p, m in zip(peaks, measured["peak_bytes"])]
        print("%s: step MAPE %.1f%% with the loss scale, %.1f%% without; peak MAPE %.1f%% / %.1f%%, worst %.1f%% / %.1f%%"
              % (path, mean(step_errors["with"]), mean(step_errors["without"]), mean(peak_errors["with"]),
                 mean(peak_errors["without"]), max(peak_errors["with"]), max(peak_errors["without"])))


if __name__ == "__main__":
    main()
