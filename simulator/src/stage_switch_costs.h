// What an op after another stage's op on its device costs beyond its slot's duration.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"

#include <pipeprof/core/profile.h>

namespace pipeprof::sim {

/// ResolvedCosts::afterSwitchExtraNs of both size classes: (Profile::stageSwitchScales at the
/// class's micro-batch size - 1) x each slot's duration, where the schedule runs two or more
/// stages per device and some such scale is not 1; else left empty (nothing is charged).
void addStageSwitchCosts(const CompiledSchedule& compiled, const Profile& profile, const MicroBatching& batching,
                         ResolvedCosts& out);

}  // namespace pipeprof::sim
