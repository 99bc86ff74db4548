// Frees another device sees late: the releases an op makes of tensors another lane allocated.
#pragma once

#include "compiled_schedule.h"

#include <cstddef>

namespace pipeprof::sim {

/// How late a lane sees another lane's frees (docs/simulator.md, "Frees another device makes"):
/// a tensor counted on lane d that an op of lane e frees at time t counts on d until
/// t + kFreeSkew * (t - s), s being when d and e last waited for each other, or until d starts
/// an op that waits for the freeing one, whichever comes first. Two devices' timelines drift
/// apart while neither waits for the other, and a device's measured peak is the largest over
/// every step, so a free predicted just before d's busiest moment lands after it in some steps.
inline constexpr double kFreeSkew = 0.1;

/// When a lane sees another lane's frees of its tensors: skewed (kFreeSkew, above: the typical
/// step's peak), or at the latest the schedule allows, only when the lane starts an op that waits
/// for the freeing one, else at the step's end (the peak of the unluckiest step, as the two
/// timelines drift: Prediction::latePeakBytes).
enum class LateFrees { kSkewed, kAtTheLatest };

/// Whether a hold (CompiledSchedule::Hold) is ended by an op of another lane than its tensor's:
/// that end is a late release too.
inline bool endsLate(const CompiledSchedule& compiled, const CompiledSchedule::Hold& hold) {
  const CompiledOp& until = compiled.ops[hold.untilOp];
  return until.isCompute() && compiled.stageLane[static_cast<std::size_t>(hold.effect.j)] != until.lane;
}

/// Moves each compute op's releases of tensors counted on another lane out of endRelease into
/// opLate[op].release (stable: endRelease keeps its order), and records, for every such release
/// and every hold that ends late, the first op of the tensor's lane that waits for the releasing
/// op (through dependencies or the lanes' orders) in opLate[that op].seen. Leaves opLate empty
/// where there is none. Needs successors, effects, holds and lanes.
void splitLateReleases(CompiledSchedule& out);

}  // namespace pipeprof::sim
