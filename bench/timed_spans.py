"""The spans of a Chrome trace that lie in its timed steps: shared by the bench scripts that read
measured and predicted traces (bench/forward_spans.py, bench/device_split.py)."""
import json


def timed_spans(path):
    """Every complete span ("ph": "X") of the trace at `path` that starts inside one of its
    `step` spans (the timed steps); every complete span where it has none (a predicted trace)."""
    with open(path) as file:
        trace = json.load(file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = [e for e in events if e.get("ph") == "X"]
    steps = [e for e in spans if e.get("name") == "step"]
    return [e for e in spans if not steps or any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps)]
