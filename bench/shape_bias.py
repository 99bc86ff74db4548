#!/usr/bin/env python3
"""Which shapes the predictions miss, and on which device: the signed errors of suites' sweeps.

For every measured candidate of every sweep given (accuracy suite directories, or reports) this
takes the signed step error of the prediction before and after the drift factor (predicted over
measured median step, minus 1), and prints its mean per stages per device (v), per schedule
family and checkpoint mode, and per suite. With --devices it also reads each candidate's
breakdown (`pipeprof explain --json`, its measured and predicted steps per device and category)
and prints, per v, the mean over the candidates of measured minus predicted time, as a share of
the measured step: each device's compute (forward, recompute, loss, backward and its I and W),
its waiting for a slower peer, and the waiting of the device whose compute ran less over its
prediction; then, per schedule, device 0's compute over minus device 1's.

    bench/shape_bias.py /tmp/suite9[01]                                 # suites: <dir>/<sweep>-<run>/
    bench/shape_bias.py --devices --pipeprof build/cli/pipeprof /tmp/suite91

docs/performance.md, "Two stages per device read under", has its figures.
"""
import argparse
import collections
import glob
import json
import os
import statistics
import subprocess

COMPUTE = ("forward_ns", "recompute_ns", "loss_ns", "backward_ns", "backward_input_ns", "backward_weight_ns")


def reports(paths):
    """(suite label, report path) of every sweep run under the given suites or reports."""
    for path in paths:
        if os.path.isfile(path):
            yield os.path.dirname(path) or ".", path
            continue
        for report in sorted(glob.glob(os.path.join(path, "*", "report.json"))):
            yield path.rstrip("/"), report


def measured(report):
    for entry in report["candidates"]:
        if entry.get("status") == "measured" and entry.get("measurement"):
            yield entry


def signed_errors(entry):
    step = entry["measurement"]["step_ns_median"]
    after = entry["prediction"]["iteration_ns"]
    before = (entry.get("prediction_before_drift") or entry["prediction"])["iteration_ns"]
    return (before / step - 1) * 100, (after / step - 1) * 100


def print_groups(title, groups):
    print(f"\n| {title} | measured | before drift: mean | after drift: mean (median) |")
    print("|---|---|---|---|")
    for key in sorted(groups, key=str):
        values = groups[key]
        before = statistics.mean(b for b, _ in values)
        after = [a for _, a in values]
        print(f"| {key} | {len(values)} | {before:+.1f}% | {statistics.mean(after):+.1f}% "
              f"({statistics.median(after):+.1f}%) |")


def device_shares(pipeprof, report_path, entry):
    """Per device: (compute, waiting) measured minus predicted, in % of the measured step."""
    result = subprocess.run([pipeprof, "explain", report_path, "--candidate", str(entry["predicted_rank"]), "--json"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None
    breakdown = json.loads(result.stdout)
    measured_devices = breakdown["measured"]["devices"]
    predicted_devices = breakdown["predicted"]["devices"]
    step = max(device.get("step_ns", 0) for device in measured_devices) or 1
    shares = []
    for m, p in zip(measured_devices, predicted_devices):
        compute = sum(m.get(k, 0) - p.get(k, 0) for k in COMPUTE)
        waiting = m.get("waiting_ns", 0) - p.get("waiting_ns", 0)
        shares.append((compute / step * 100, waiting / step * 100))
    return shares


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="accuracy suite directories, or sweep reports")
    parser.add_argument("--devices", action="store_true", help="also break each candidate down per device")
    parser.add_argument("--pipeprof", default="build/cli/pipeprof", help="the pipeprof whose explain reads the reports")
    args = parser.parse_args()
    by_v, by_shape, by_suite = (collections.defaultdict(list) for _ in range(3))
    per_device = collections.defaultdict(list)
    device_gap = collections.defaultdict(list)  # by schedule: device 0's compute over minus device 1's
    for suite, report_path in reports(args.paths):
        with open(report_path) as file:
            report = json.load(file)
        for entry in measured(report):
            candidate = entry["candidate"]
            v = candidate.get("stages_per_device", 1)
            errors = signed_errors(entry)
            by_v[f"v{v}"].append(errors)
            by_shape[f"{candidate['schedule']} {candidate['checkpoint']}"].append(errors)
            by_suite[f"{suite} v{v}"].append(errors)
            if args.devices and len(report["cluster"]["devices"]) == 2:
                shares = device_shares(args.pipeprof, report_path, entry)
                if shares:
                    per_device[f"v{v}"].append(shares)
                    device_gap[candidate["schedule"]].append(shares[0][0] - shares[1][0])
    print_groups("stages per device", by_v)
    print_groups("schedule, checkpoint mode", by_shape)
    print_groups("suite, stages per device", by_suite)
    if not per_device:
        return
    print("\n| v | candidates | compute over, device 0 / 1 | waiting over, device 0 / 1 | "
          "waiting over, the device whose compute ran less over / the other |")
    print("|---|---|---|---|---|")
    for v, rows in sorted(per_device.items()):
        mean = lambda pick: statistics.mean(pick(r) for r in rows)  # noqa: E731
        less = lambda r: 0 if r[0][0] < r[1][0] else 1  # noqa: E731
        print(f"| {v} | {len(rows)} | {mean(lambda r: r[0][0]):+.2f}% / {mean(lambda r: r[1][0]):+.2f}% | "
              f"{mean(lambda r: r[0][1]):+.2f}% / {mean(lambda r: r[1][1]):+.2f}% | "
              f"{mean(lambda r: r[less(r)][1]):+.2f}% / {mean(lambda r: r[1 - less(r)][1]):+.2f}% |")
    print("\ndevice 0's compute over minus device 1's, by schedule: " +
          ", ".join(f"{schedule} {statistics.mean(gaps):+.2f}% ({len(gaps)})" for schedule, gaps in sorted(device_gap.items())))


if __name__ == "__main__":
    main()
