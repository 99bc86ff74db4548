#!/usr/bin/python3
"""Does PyTorch take what `pipeprof export` writes? pipeline() with its split_spec, _load_csv with its CSV.

For each candidate of a sweep report of bench/graph_models.py's nanoGPT (its suggestion and
every measured candidate), on this machine

    pipeprof export REPORT --candidate N -o OUT/rank-N.json     (and its CSV rows as OUT/rank-N.csv)

then, in a Debian trixie root with PyTorch 2.6's python3-torch, made once with

    debootstrap --variant=minbase trixie ROOT http://deb.debian.org/debian
    cp /etc/resolv.conf ROOT/etc/ && chroot ROOT sh -c 'apt-get update && apt-get install -y --no-install-recommends python3-torch'

this script again with --check (under chroot), which for each file

- builds the same model in Python (bench/graph_models.py's gpt()) and splits it with
  torch.distributed.pipelining.pipeline(model, mb_args, split_spec=the export's): the stages it
  makes must be as many as the export's parts, and the modules whose parameters each stage
  holds must be the export's module_fqns_per_model_part (the tied embedding and head apart: torch
  names their one weight lm_head.weight in both the first and the last stage);
- loads the CSV with PipelineScheduleMulti._load_csv, torch's own reader and validator
  (_validate_schedule: every stage's F, B or I and W of every micro-batch, in order).

    bench/pytorch_takes_export.py --pipeprof build/cli/pipeprof --report /tmp/graph/gpt/report.json \\
        --root /opt/trixie --out /tmp/pte
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def export(pipeprof, report, out):
    """Exports the suggestion and every measured candidate; returns the files written."""
    with open(report) as f:
        candidates = json.load(f)["candidates"]
    ranks = sorted({c["predicted_rank"] for c in candidates if c.get("status") == "measured"})
    files = []
    os.makedirs(out, exist_ok=True)
    for rank in ranks:
        path = os.path.join(out, f"rank-{rank}.json")
        subprocess.run([pipeprof, "export", report, "--candidate", str(rank), "-o", path], check=True,
                       stdout=subprocess.DEVNULL)
        with open(path) as f:
            config = json.load(f)
        with open(path.replace(".json", ".csv"), "w") as f:
            f.write("\n".join(config["pipeline_parallel_schedule_csv"]) + "\n")
        files.append(path)
    return files


def check(folder):
    import torch
    from torch import nn
    from torch.nn import functional as F
    from torch.distributed.pipelining import SplitPoint, pipeline
    from torch.distributed.pipelining.schedules import PipelineScheduleMulti

    sys.path.insert(0, HERE)
    import graph_models

    print(f"torch {torch.__version__}")
    print("| candidate | stages by pipeline() | modules per stage as exported | CSV loads with _load_csv |")
    print("|---|---|---|---|")
    failures = 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            config = json.load(f)
        torch.manual_seed(0)
        model, _ = graph_models.gpt(torch, nn, F, nn.Sequential)
        example = torch.randint(0, 1000, (16 // config["num_pp_microbatches"], 64))
        pipe = pipeline(model, mb_args=(example,),
                        split_spec={point: SplitPoint.BEGINNING for point in config["split_spec"]})
        parts = config["module_fqns_per_model_part"]
        held = []
        for stage in range(pipe.num_stages):
            submodule = pipe.split_gm.get_submodule(f"submod_{stage}")
            held.append(sorted({".".join(p.split(".")[:2]) if p.startswith("h.") else p.split(".")[0]
                                for p, _ in submodule.named_parameters()}))
        # The tied pair apart: torch names the shared weight lm_head.weight in the first stage too.
        tied = {"wte", "lm_head"}
        expected = [sorted(part) for part in parts]
        modules_match = all(set(h) - tied == set(e) - tied for h, e in zip(held, expected))
        schedule = object.__new__(PipelineScheduleMulti)
        schedule.pipeline_order = {}
        schedule.pp_group_size = config["pipeline_parallel_degree"]
        schedule._num_stages = len(parts)
        schedule._n_microbatches = config["num_pp_microbatches"]
        try:
            PipelineScheduleMulti._load_csv(schedule, os.path.join(folder, name.replace(".json", ".csv")))
            csv_loads = "yes"
        except Exception as error:  # torch's validator raises what it finds
            csv_loads = f"no: {error}"
        ok = pipe.num_stages == len(parts) and modules_match and csv_loads == "yes"
        failures += not ok
        print(f"| {config['candidate']} | {pipe.num_stages} of {len(parts)} | "
              f"{'yes' if modules_match else f'no: {held} against {expected}'} | {csv_loads} |")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--report", help="a sweep report of bench/graph_models.py's gpt")
    parser.add_argument("--root", help="the trixie root with python3-torch 2.6")
    parser.add_argument("--out", default="pytorch-takes-export")
    parser.add_argument("--check", metavar="FOLDER", help="(inside the root) check the exports in FOLDER")
    args = parser.parse_args()
    if args.check:
        sys.exit(1 if check(args.check) else 0)
    if not (args.report and args.root):
        parser.error("give --report and --root (or --check inside the root)")
    export(args.pipeprof, args.report, args.out)
    inside = os.path.join(args.root, "tmp", "pytorch-takes-export")
    shutil.rmtree(inside, ignore_errors=True)
    shutil.copytree(args.out, os.path.join(inside, "exports"))
    for script in ("pytorch_takes_export.py", "graph_models.py", "imported_models.py", "training_step_sweeps.py"):
        shutil.copy(os.path.join(HERE, script), inside)
    done = subprocess.run(["chroot", args.root, "env", "OPENBLAS_NUM_THREADS=1", "python3",
                           "/tmp/pytorch-takes-export/pytorch_takes_export.py", "--check",
                           "/tmp/pytorch-takes-export/exports"])
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
