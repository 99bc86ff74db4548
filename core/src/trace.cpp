// The one trace model: host spans, GPU kernels and copies, simulated ops, memory counters, flows.
#include <pipeprof/core/trace.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace pipeprof {
namespace {

constexpr std::array<Phase, 14> kPhases = {
    Phase::Forward, Phase::Recompute, Phase::Backward, Phase::Copy,   Phase::SkipCopy, Phase::Loss,      Phase::Kernel,
    Phase::Memcpy,  Phase::Memset,    Phase::Launch,   Phase::Warmup, Phase::Step,     Phase::Optimizer, Phase::Other};

}  // namespace

Phase phaseOf(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return Phase::Forward;
    case OpKind::Recompute: return Phase::Recompute;
    case OpKind::Backward:
    case OpKind::BackwardInput:
    case OpKind::BackwardWeight: return Phase::Backward;
    case OpKind::Copy: return Phase::Copy;
    case OpKind::SkipCopy: return Phase::SkipCopy;
    case OpKind::Loss: return Phase::Loss;
  }
  return Phase::Other;
}

std::string phaseName(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Recompute: return "recompute";
    case Phase::Backward: return "backward";
    case Phase::Copy: return "copy";
    case Phase::SkipCopy: return "skip-copy";
    case Phase::Loss: return "loss";
    case Phase::Kernel: return "kernel";
    case Phase::Memcpy: return "memcpy";
    case Phase::Memset: return "memset";
    case Phase::Launch: return "launch";
    case Phase::Warmup: return "warmup";
    case Phase::Step: return "step";
    case Phase::Optimizer: return "optimizer";
    case Phase::Other: return "other";
  }
  return "other";
}

Phase parsePhase(const std::string& text) {
  for (Phase phase : kPhases) {
    if (phaseName(phase) == text) return phase;
  }
  throw std::invalid_argument("invalid phase '" + text +
                              "': expected one of forward, recompute, backward, copy, skip-copy, loss, kernel, memcpy, "
                              "memset, launch, warmup, step, optimizer, other");
}

void sortEvents(Trace& trace) {
  std::stable_sort(trace.events.begin(), trace.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::tie(a.startNs, a.device, a.lane, a.name) < std::tie(b.startNs, b.device, b.lane, b.name);
  });
}

std::vector<const TraceEvent*> stepSpans(const Trace& trace) {
  // Each device's step spans in the trace's order: one device in a threaded run, one per rank
  // in a multi-process run's merged trace.
  std::vector<std::pair<std::string, std::vector<const TraceEvent*>>> byDevice;
  for (const TraceEvent& event : trace.events) {
    if (event.kind != EventKind::Span || event.phase != Phase::Step) continue;
    auto device =
        std::find_if(byDevice.begin(), byDevice.end(), [&](const auto& entry) { return entry.first == event.device; });
    if (device == byDevice.end()) device = byDevice.insert(byDevice.end(), {event.device, {}});
    device->second.push_back(&event);
  }
  if (byDevice.size() <= 1) return byDevice.empty() ? std::vector<const TraceEvent*>{} : byDevice.front().second;
  // Every rank times step k from the barrier that opens it to its own last op: the pipeline's
  // step is the longest of them, as the run's measurement takes it (the largest per step).
  std::size_t count = byDevice.front().second.size();
  for (const auto& entry : byDevice) count = std::min(count, entry.second.size());
  std::vector<const TraceEvent*> steps(count);
  for (std::size_t k = 0; k < count; ++k) {
    for (const auto& entry : byDevice) {
      const TraceEvent* step = entry.second[k];
      if (steps[k] == nullptr || step->durationNs > steps[k]->durationNs) steps[k] = step;
    }
  }
  return steps;
}

void scaleTraceTimes(Trace& trace, double factor) {
  auto scaled = [factor](TimeNs ns) { return std::llround(static_cast<double>(ns) * factor); };
  for (TraceEvent& event : trace.events) {
    const TimeNs endNs = scaled(event.endNs());
    event.startNs = scaled(event.startNs);
    event.durationNs = endNs - event.startNs;  // adjacent spans stay adjacent after rounding
  }
}

Trace concatenateTraces(const std::vector<Trace>& traces) {
  Trace merged;
  if (!traces.empty()) {
    merged.baseNs = traces.front().baseNs;
    merged.metadata = traces.front().metadata;
  }
  for (const Trace& trace : traces) {
    for (const TraceEvent& event : trace.events) {
      merged.events.push_back(event);
      merged.events.back().startNs += trace.baseNs - merged.baseNs;
    }
  }
  sortEvents(merged);
  return merged;
}

}  // namespace pipeprof
