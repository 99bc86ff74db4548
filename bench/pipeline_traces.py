"""Reading a sweep's pipeline traces (report.traces/<candidate>.measured.json, .predicted.json and
calibration/ref<k>_<candidate>.measured.json) and `pipeprof run --trace`'s: shared by the bench
scripts that do (bench/forward_spans.py, bench/device_split.py, bench/loss_first_call.py,
bench/ops_after_idle.py, bench/first_in_step.py, bench/two_stage_ops.py)."""
import json
import os
import re

NAME = re.compile(r"b([\d-]+)_m(\d+)_(always|except_last|never)(?:_(.*))?$")


def trace_events(path):
    """The events of the Chrome trace at `path` (its traceEvents, or the list it is)."""
    with open(path) as file:
        trace = json.load(file)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def timed_spans_of(events):
    """Every complete span ("ph": "X") of `events` that starts inside one of their `step` spans
    (the timed steps); every complete span where they have none (a predicted trace)."""
    spans = [e for e in events if e.get("ph") == "X"]
    steps = [e for e in spans if e.get("name") == "step"]
    return [e for e in spans if not steps or any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps)]


def timed_spans(path):
    """timed_spans_of the trace at `path`."""
    return timed_spans_of(trace_events(path))


COMPUTE_KINDS = ("forward", "recompute", "backward", "backward-input", "backward-weight")


def compute_ops_by_step(events):
    """Each timed step's compute spans (COMPUTE_KINDS: not the loss), in the order they began,
    one list per `step` span."""
    spans = timed_spans_of(events)
    steps = sorted((e for e in spans if e.get("name") == "step"), key=lambda e: e["ts"])
    ops = sorted((e for e in spans if e["name"].split("(")[0] in COMPUTE_KINDS), key=lambda e: e["ts"])
    for step in steps:
        yield [e for e in ops if step["ts"] <= e["ts"] < step["ts"] + step["dur"]]


def candidate_of(path):
    """(balance, chunks, checkpoint mode, schedule) of the candidate a trace file is named after
    (`b4-4-4-3_m2_never_zbv.measured.json`; no schedule is gpipe), or None."""
    name = NAME.search(os.path.basename(path).split(".")[0])
    if not name:
        return None
    balance = [int(x) for x in name.group(1).split("-")]
    return balance, int(name.group(2)), name.group(3), name.group(4) or "gpipe"


PROFILE_FIELDS = {"forward": "forward_ns", "recompute": "forward_ns", "backward": "backward_ns",
                  "backward-input": "backward_input_ns", "backward-weight": "backward_weight_ns"}


def profile_field(kind, mode, micro_batch, chunks):
    """The profile's cost field that times compute op `kind` (COMPUTE_KINDS) of micro-batch
    `micro_batch`: a checkpointed micro-batch's forward runs without a graph."""
    if kind == "forward" and checkpointed(mode, micro_batch, chunks):
        return "forward_no_grad_ns"
    return PROFILE_FIELDS[kind]


def checkpointed(mode, micro_batch, chunks):
    """Whether micro-batch i's forward runs without a graph: every one under `always`, all but the
    last under `except_last`."""
    return mode == "always" or (mode == "except_last" and micro_batch < chunks - 1)
