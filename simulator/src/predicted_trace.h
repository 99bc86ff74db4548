// Builds the predicted timeline (core trace events) from one engine run.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"
#include "engine.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/trace.h>

#include <string>

namespace pipeprof::sim {

/// Spans for every op (device = the cluster device's name, lane "partition j" or
/// "copy a->b" by device index) and a "memory" counter per device at every change;
/// metadata "source" = "predicted" and "candidate" = candidateLabel. Events sorted. With
/// launches (docs/simulator.md, "Launches") each compute op also has a span "launch <op>"
/// (phase launch) on its host thread's lane, "cuda api worker d" or "cuda api autograd", from
/// its start to its last launch; its op span runs on to its last kernel's end.
Trace predictedTrace(const CompiledSchedule& compiled, const ResolvedCosts& costs, const Engine& engine,
                     const Cluster& cluster, const std::string& candidateLabel);

}  // namespace pipeprof::sim
