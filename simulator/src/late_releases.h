// Frees another device sees late: the releases an op makes of tensors another lane allocated.
#pragma once

#include "compiled_schedule.h"

namespace pipeprof::sim {

/// How late a lane sees another lane's frees, as a fraction of the time into the step
/// (docs/simulator.md, "Frees another device makes"): a tensor lane d allocated and an op of
/// another lane frees at time t counts on d until t * (1 + kFreeSkew), or until d starts an op
/// that waits for the freeing one, whichever comes first. The two devices' timelines drift
/// against each other and against the prediction while a step runs; the measured peak of a
/// device is the largest over every step, so a free predicted just before d's busiest moment
/// lands after it in some steps.
inline constexpr double kFreeSkew = 0.1;

/// Moves each compute op's releases of tensors counted on another lane out of endRelease into
/// opLate[op].release (stable: endRelease keeps its order), and records, for every such release,
/// the first op of the tensor's lane that waits for the releasing op (through dependencies or
/// the lanes' orders) in opLate[that op].seen. Leaves opLate empty where no op has such a
/// release. Needs successors, effects and lanes.
void splitLateReleases(CompiledSchedule& out);

}  // namespace pipeprof::sim
