// The spans of a traced reference run as the calibration fit reads them: its timed ops, what
// the profile says each should have taken, and which found their stage cold.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/simulator/calibration_fit.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace pipeprof::sim {

/// Calls visit(op, size, step) for every span of a pipeline op in one of `phases` inside a timed
/// step (warm-up ops lie outside every step span), with its micro-batch's size in samples and
/// the index of its step.
template <typename Visit>
void forEachTimedSpan(const ReferenceRun& run, std::initializer_list<Phase> phases, Visit visit) {
  const MicroBatching split = microBatching(run.candidate.batch, run.candidate.chunks);
  const std::vector<const TraceEvent*> steps = stepSpans(run.trace);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (const TraceEvent& op : run.trace.events) {
      if (op.kind != EventKind::Span || op.microBatch < 0 || op.partition < 0) continue;
      if (std::find(phases.begin(), phases.end(), op.phase) == phases.end()) continue;
      if (op.startNs < steps[s]->startNs || op.startNs >= steps[s]->endNs()) continue;
      visit(op, op.microBatch + 1 < split.count ? split.chunkSize : split.lastSize, s);
    }
  }
}

/// The same for the forward and backward spans: the layers' time.
template <typename Visit>
void forEachTimedOp(const ReferenceRun& run, Visit visit) {
  forEachTimedSpan(run, {Phase::Forward, Phase::Backward}, visit);
}

/// Whether a traced op is the forward of a checkpointed micro-batch, which runs without a graph
/// (the reference pipelines train).
bool forwardWithoutGraph(const ReferenceRun& run, const TraceEvent& op);

/// What the profile predicts of a layer for a measured forward or backward span: a forward
/// without a graph by its own figure; a backward's input or weight half (zero bubble) by the
/// span's name, as the simulator splits it (stageSplitTimes), else the whole pass.
TimeNs profiledSpanNs(const CostSample& cost, const TraceEvent& op, bool withoutGraph);

/// The names of a run's ops that find their stage's weights and state out of the caches (its
/// candidate's device orders, which its workers run): those that follow another stage's op on
/// their device (none with one stage per device), and each stage's first op of its kind in the
/// step (Schedule::firstOfKindOnStage).
struct ColdOps {
  std::set<std::string> afterSwitch;
  std::set<std::string> firstInStep;
};
ColdOps coldOpsOf(const Profile& profile, const Candidate& candidate);

/// How much longer such ops ran than warm ones of their kind (1: not charged, or not fitted yet).
struct ColdScales {
  double afterSwitch = 1.0;
  double firstInStep = 1.0;
};

/// A traced op's stage's profiled time: the layers of stage op.partition of the run's balance
/// at `size` (profiledSpanNs each); 0 for a partition past the balance.
TimeNs stageProfiledNs(const Profile& profile, const ReferenceRun& run, const TraceEvent& op, std::int64_t size);

/// An op's span as it would have run warm -- neither after another stage's op nor its stage's
/// first of its kind in the step: divided by each scale of `scales` whose set of `cold` holds it.
TimeNs asWarmOp(const TraceEvent& op, const ColdOps& cold, const ColdScales& scales);

}  // namespace pipeprof::sim
