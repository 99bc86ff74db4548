// What a compute op receives from other stages, as the stage core's routing decides it: the one
// place both channels learn it from (a rank posts its receives ahead from this list).
#pragma once

#include "stage/stage.h"

#include <pipeprof/core/schedule.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// One tensor set an op receives: the activations of the stage before, the gradients of its
/// outputs from the stage after, or a skip (or a skip's gradient) travelling on `route`.
struct OpReceive {
  enum class What { Activations, OutputGradients, Skip, SkipGradient };
  What what = What::Activations;
  std::int64_t fromJ = 0;                 ///< the stage that sends it
  const StageSkipRoute* route = nullptr;  ///< Skip and SkipGradient: the route it travels
};

/// What op receives from other stages of an n-stage pipeline with `routes`: forward(i, j) the
/// activations of stage j - 1 (j > 0) and the skips other stages stash for j; B or I (i, j) the
/// gradients of its outputs from stage j + 1 (j + 1 < n) and of the skips it stashed for other
/// stages. The last stage's output gradients, which come from its loss or the caller, and the
/// ops that receive nothing (loss, recompute, W) give an empty list.
std::vector<OpReceive> receivesOf(const Op& op, std::int64_t n, const std::vector<StageSkipRoute>& routes);

}  // namespace pipeprof
