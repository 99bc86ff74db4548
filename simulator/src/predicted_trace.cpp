// Builds the predicted timeline (core trace events) from one engine run.
#include "predicted_trace.h"

#include <cstddef>
#include <map>
#include <string>
#include <utility>

namespace pipeprof::sim {
namespace {

/// Launches: the host's span launching compute op `index` (its op span is `opEvent`), on the
/// lane of the thread that launches it, named like the measured "cuda api" lanes: its
/// pipeline device's worker (forward, recompute, loss) or its cluster device's autograd thread
/// (backward). An op that launches nothing in no time (a loss) has none.
void addLaunch(const CompiledSchedule& compiled, const ResolvedCosts& costs, const Engine& engine, std::size_t index,
               const TraceEvent& opEvent, Trace& trace) {
  const CompiledOp& op = compiled.ops[index];
  const auto slot = static_cast<std::size_t>(op.durationSlot);
  const TimeNs launchNs = engine.launchedNs(index) - engine.startNs(index);
  if (launchNs == 0 && costs.kernels[slot] == 0) return;
  TraceEvent launch;
  launch.kind = EventKind::Span;
  launch.name = "launch " + opEvent.name;
  launch.device = opEvent.device;
  launch.lane = op.isBackwardPass() ? "cuda api autograd" : "cuda api worker " + std::to_string(op.lane);
  launch.startNs = engine.startNs(index);
  launch.durationNs = launchNs;
  launch.microBatch = op.i;
  launch.partition = op.j;
  launch.phase = Phase::Launch;
  launch.args["op"] = opEvent.name;
  launch.args["kernels"] = std::to_string(costs.kernels[slot]);
  trace.events.push_back(std::move(launch));
}

}  // namespace

Trace predictedTrace(const CompiledSchedule& compiled, const ResolvedCosts& costs, const Engine& engine,
                     const Cluster& cluster, const std::string& candidateLabel) {
  Trace trace;
  trace.metadata["source"] = "predicted";
  trace.metadata["candidate"] = candidateLabel;
  trace.events.reserve(compiled.ops.size() + engine.memory().samples().size());
  for (std::size_t index = 0; index < compiled.ops.size(); ++index) {
    const CompiledOp& op = compiled.ops[index];
    const std::int32_t from = costs.stageDevice[static_cast<std::size_t>(op.j)];
    TraceEvent event;
    event.kind = EventKind::Span;
    event.name = compiled.labels[index];
    event.device = cluster.devices[static_cast<std::size_t>(from)].name;
    if (op.isCompute()) {
      event.lane = "partition " + std::to_string(op.j);
    } else {
      const std::int32_t to = costs.stageDevice[static_cast<std::size_t>(op.toJ)];
      event.lane = "copy " + std::to_string(from) + "->" + std::to_string(to);
      event.bytes = costs.bytes[static_cast<std::size_t>(compiled.effects[op.startAlloc.begin].slot)];
    }
    event.startNs = engine.startNs(index);
    event.durationNs = engine.endNs(index) - engine.startNs(index);
    event.microBatch = op.i;
    event.partition = op.j;
    event.phase = phaseOf(op.kind);
    if (costs.launches() && op.isCompute()) addLaunch(compiled, costs, engine, index, event, trace);
    trace.events.push_back(std::move(event));
  }
  for (const MemorySample& sample : engine.memory().samples()) {
    TraceEvent event;
    event.kind = EventKind::Counter;
    event.name = "memory";
    event.device = cluster.devices[static_cast<std::size_t>(sample.device)].name;
    event.lane = "memory";
    event.startNs = sample.timeNs;
    event.value = static_cast<double>(sample.bytes);
    trace.events.push_back(std::move(event));
  }
  sortEvents(trace);
  return trace;
}

void appendSharedGradientSpans(Trace& trace, const SharedGradientCosts& shared, TimeNs startNs,
                               const std::vector<std::int32_t>& laneDevice, const Cluster& cluster) {
  if (shared.exchangeNs == 0) return;
  for (std::size_t d = 0; d < shared.exchanges.size(); ++d) {
    if (shared.exchanges[d] == 0) continue;
    TraceEvent span;
    span.kind = EventKind::Span;
    span.name = "shared gradients";
    span.device = cluster.devices[static_cast<std::size_t>(laneDevice[d])].name;
    span.lane = "optimizer";
    span.phase = Phase::Copy;
    span.startNs = startNs;
    span.durationNs = shared.exchangeNs;
    trace.events.push_back(std::move(span));
  }
  sortEvents(trace);
}

void appendOptimizerSpans(Trace& trace, const OptimizerStepCosts& optimizer, TimeNs startNs,
                          const std::vector<std::int32_t>& laneDevice, const Cluster& cluster) {
  if (optimizer.longestNs() == 0) return;
  std::map<std::string, double> lastMemory;  // by device name: the counter before the step
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Counter && event.name == "memory" && event.startNs <= startNs) {
      lastMemory[event.device] = event.value;
    }
  }
  std::map<std::string, Bytes> temporaries;
  for (std::size_t d = 0; d < optimizer.durationNs.size(); ++d) {
    const std::string& device = cluster.devices[static_cast<std::size_t>(laneDevice[d])].name;
    temporaries[device] += optimizer.transientBytes[d];
    if (optimizer.durationNs[d] == 0) continue;
    TraceEvent span;
    span.kind = EventKind::Span;
    span.name = "optimizer";
    span.device = device;
    span.lane = "optimizer";
    span.phase = Phase::Optimizer;
    span.startNs = startNs;
    span.durationNs = optimizer.durationNs[d];
    trace.events.push_back(std::move(span));
  }
  for (const auto& [device, bytes] : temporaries) {
    if (bytes == 0) continue;
    const double before = lastMemory[device];
    for (const auto& [timeNs, value] : {std::pair<TimeNs, double>{startNs, before + static_cast<double>(bytes)},
                                        std::pair<TimeNs, double>{startNs + optimizer.longestNs(), before}}) {
      TraceEvent counter;
      counter.kind = EventKind::Counter;
      counter.name = "memory";
      counter.device = device;
      counter.lane = "memory";
      counter.startNs = timeNs;
      counter.value = value;
      trace.events.push_back(std::move(counter));
    }
  }
  sortEvents(trace);
}

}  // namespace pipeprof::sim
