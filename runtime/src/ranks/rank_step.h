// One training step of one rank: its device's ops in schedule order on the shared stage core.
//
// The same StageCore as the threaded Pipe (pipeline.h), run by one thread: where a worker
// there waits for a tensor another worker hands over, a rank here receives a message
// (rank_channel.h). The rank posts the receives of the next ops while it runs one, so their
// data moves as soon as it is sent.
#pragma once

#include "ranks/rank_channel.h"
#include "stage/microbatch.h"
#include "stage/stage_core.h"

#include <cstdint>
#include <vector>

namespace pipeprof {

/// One step of one rank.
class RankStep {
 public:
  /// core: this rank's stages (config.stages null for the others') and the step's loss;
  /// microBatches: the input's micro-batches (used on the rank of stage 0), targets: the
  /// target's (used on the last stage's rank), rows: every micro-batch's rows.
  RankStep(StageCoreConfig core, const RankChannelContext& context, std::vector<Tensors> microBatches,
           std::vector<torch::Tensor> targets, std::vector<std::int64_t> rows);

  /// Runs this rank's ops in Schedule::deviceOrder(rank), then waits for its sends. Throws
  /// PipeError naming the op, with the original exception (a TransportError, say) nested.
  void run();
  /// The sum of the micro-batches' weighted losses (the last stage's rank), else undefined.
  torch::Tensor lossSum() const;

 private:
  const RankChannelContext& context_;
  RankChannel channel_;
  StageCore core_;
};

}  // namespace pipeprof
