// What a compute op costs beyond its slot's duration where it finds its stage's weights and
// state out of the caches: after another stage's op on its device, or as its stage's first op
// of its kind in the step.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"

#include <pipeprof/core/profile.h>

namespace pipeprof::sim {

/// ResolvedCosts::afterSwitchExtraNs and firstInStepExtraNs of both size classes: (the scale at
/// the class's micro-batch size - 1) x each slot's duration, from Profile::stageSwitchScales
/// where the schedule runs two or more stages per device and from Profile::firstInStepScales;
/// each left empty where its scales are all 1 (nothing is charged).
void addColdCacheCosts(const CompiledSchedule& compiled, const Profile& profile, const MicroBatching& batching,
                       ResolvedCosts& out);

}  // namespace pipeprof::sim
