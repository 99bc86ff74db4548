// Builds the predicted timeline (core trace events) from one engine run.
#include "predicted_trace.h"

#include <cstddef>
#include <utility>

namespace pipeprof::sim {

Trace predictedTrace(const CompiledSchedule& compiled, const ResolvedCosts& costs, const Engine& engine,
                     const Cluster& cluster, const std::string& candidateLabel) {
  Trace trace;
  trace.metadata["source"] = "predicted";
  trace.metadata["candidate"] = candidateLabel;
  trace.events.reserve(compiled.ops.size() + engine.memory().samples().size());
  for (std::size_t index = 0; index < compiled.ops.size(); ++index) {
    const CompiledOp& op = compiled.ops[index];
    const std::int32_t from = costs.partitionDevice[static_cast<std::size_t>(op.j)];
    TraceEvent event;
    event.kind = EventKind::Span;
    event.name = compiled.labels[index];
    event.device = cluster.devices[static_cast<std::size_t>(from)].name;
    if (op.isCompute()) {
      event.lane = "partition " + std::to_string(op.j);
    } else {
      const std::int32_t to = costs.partitionDevice[static_cast<std::size_t>(op.toJ)];
      event.lane = "copy " + std::to_string(from) + "->" + std::to_string(to);
      event.bytes = costs.bytes[static_cast<std::size_t>(compiled.effects[op.startAlloc.begin].slot)];
    }
    event.startNs = engine.startNs(index);
    event.durationNs = engine.endNs(index) - engine.startNs(index);
    event.microBatch = op.i;
    event.partition = op.j;
    event.phase = phaseOf(op.kind);
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

}  // namespace pipeprof::sim
