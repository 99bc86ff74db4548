// Builds the predicted timeline (core trace events) from one engine run.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"
#include "engine.h"
#include "optimizer_step.h"
#include "shared_gradients.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/trace.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::sim {

/// Spans for every op (device = the cluster device's name, lane "partition j" or
/// "copy a->b" by device index) and a "memory" counter per device at every change;
/// metadata "source" = "predicted" and "candidate" = candidateLabel. Events sorted. With
/// launches (docs/simulator.md, "Launches") each compute op also has a span "launch <op>"
/// (phase launch) on its host thread's lane, "cuda api worker d" or "cuda api autograd", from
/// its start to its last launch; its op span runs on to its last kernel's end.
Trace predictedTrace(const CompiledSchedule& compiled, const ResolvedCosts& costs, const Engine& engine,
                     const Cluster& cluster, const std::string& candidateLabel);

/// The sum of shared parameters' gradients from `startNs` (the pipeline's end): a span "shared
/// gradients" (phase copy) on lane "optimizer" of each cluster device whose pipeline device
/// exchanges, lasting the exchange. Nothing when there is none. Events stay sorted.
void appendSharedGradientSpans(Trace& trace, const SharedGradientCosts& shared, TimeNs startNs,
                               const std::vector<std::int32_t>& laneDevice, const Cluster& cluster);

/// The optimizer step from `startNs` (the pipeline's end, or the shared gradients' sum's): a span "optimizer" (phase
/// optimizer) on lane "optimizer" of each pipeline device's cluster device (laneDevice[d]) that steps for a while, and
/// each cluster device's "memory" counter raised by its devices' temporaries until the longest step ends. Events stay
/// sorted.
void appendOptimizerSpans(Trace& trace, const OptimizerStepCosts& optimizer, TimeNs startNs,
                          const std::vector<std::int32_t>& laneDevice, const Cluster& cluster);

}  // namespace pipeprof::sim
