#!/usr/bin/env python3
"""How far a profile's times are from a reference profile of the same model: per size, the sum
over the layers of the forward, the whole backward and the split backward (I + W), and the median
of every layer's deviation.

    bench/compare_profiles.py REFERENCE.json PROFILE.json [PROFILE.json ...]

A reference is a profile of the same model, sizes and device taken with a long budget
(`pipeprof profile ... --time-budget 40s`): its medians are over tens of runs. The profiles
compared with it are, for example, profiles at the least (`--time-budget 1s`) of two builds,
alternated (docs/performance.md, "The profile's time").
"""
import json
import statistics
import sys


def times_by_size(path):
    """{micro_batch: [(forward, backward, input + weight) per layer]}, the profiling record and
    the layers that pop a skip."""
    with open(path) as f:
        profile = json.load(f)
    sizes = {}
    for layer in profile["layers"]:
        for cost in layer["costs"]:
            split = cost.get("backward_input_ns", 0) + cost.get("backward_weight_ns", 0)
            sizes.setdefault(cost["micro_batch"], []).append((cost["forward_ns"], cost["backward_ns"], split))
    pops = {skip["pop_layer"] for skip in profile.get("skips", [])}
    return sizes, profile["environment"].get("profiling", {}), pops


def ratios(mine, reference, layers):
    """Per kind (forward, backward, I+W): the sum over `layers` against the reference's."""
    out = []
    for k in range(3):
        ref = sum(reference[L][k] for L in layers)
        out.append(sum(mine[L][k] for L in layers) / ref if ref > 0 else float("nan"))
    return out


def percent(x):
    return f"{100 * x:+.1f}%"


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    reference, _, pops = times_by_size(argv[1])
    popRatios = []  # per profile and size: the popping layers' sums against the reference's
    for path in argv[2:]:
        sizes, profiling, _ = times_by_size(path)
        seconds = sum(p["seconds"] for p in profiling.get("passes", []))
        print(f"{path}: profiled in {seconds:.1f} s, {profiling.get('fewest_timed_runs', '?')} runs at the fewest")
        for b in sorted(reference):
            if b not in sizes or len(sizes[b]) != len(reference[b]):
                print(f"  {b}: not in this profile, or other layers")
                continue
            sums = [r - 1 for r in ratios(sizes[b], reference[b], range(len(reference[b])))]
            deviations = [abs(mine[k] / ref[k] - 1) for mine, ref in zip(sizes[b], reference[b])
                          for k in range(3) if ref[k] > 0]
            print(f"  {b:>4} samples: forward {percent(sums[0])}, backward {percent(sums[1])}, "
                  f"I+W {percent(sums[2])}; a layer's median |deviation| {100 * statistics.median(deviations):.1f}%")
            if pops:
                popRatios.append(ratios(sizes[b], reference[b], sorted(pops)))
    if popRatios:
        print(f"the {len(pops)} layers that pop a skip, their sums against the reference's, median over every "
              "profile and size: " + ", ".join(f"{name} {statistics.median(r[k] for r in popRatios):.2f}"
                                                for k, name in enumerate(["forward", "backward", "I+W"])))
if __name__ == "__main__":
    main(sys.argv)
