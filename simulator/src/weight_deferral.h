// zb1p within 1F1B's memory: how many W's each device may defer, from what a micro-batch keeps
// for its I and for its W.
#pragma once

#include "cost_model.h"

#include <pipeprof/core/candidate.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// Per pipeline device d of a zb1p candidate, the most W's e_d <= d it may defer while it holds
/// no more than p micro-batches' forward state S_d, which is 1F1B's peak (device 0 holds p
/// forwards): deferring e_d, device d holds after an I the p - d - 1 forwards still waiting for
/// theirs and e_d + 1 micro-batches waiting for their W, each keeping S_W (the W's saved bytes:
/// each Linear's input and its output's gradient), so (e_d + 1) S_W <= (d + 1) S_d. Where W keeps
/// no more than the forward (S_W <= S_d, the zero-bubble paper's case) that is e_d = d, torch's
/// order; the mlp's W keeps twice its forward, so none. S_d is the stage's saved bytes and the
/// part of its output they miss, or with checkpoints its input and output (docs/simulator.md,
/// "Zero bubble"). Empty where that is d on every device (the shape's default).
std::vector<std::int64_t> deferralWithinOneFOneBMemory(CostModel& costs, const Candidate& candidate);

}  // namespace pipeprof::sim
