// What both executors check and build before a step: the micro-batches of its inputs, its
// schedule, its RNG seed. Written once, so the threaded Pipe and a rank agree on every message.
#pragma once

#include "stage/microbatch.h"
#include "stage/stage.h"

#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/schedule.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace pipeprof {

/// The step's input split into micro-batches as torch.chunk splits it, and its target split
/// alike. Throws std::invalid_argument when the input or target has no batch dimension, when
/// their rows differ, or when the micro-batches that exist do not fit the shape's schedule
/// (interleaved: m a multiple of p), naming the values.
struct SplitBatch {
  std::vector<Tensors> inputs;
  std::vector<torch::Tensor> targets;
  std::int64_t rows = 0;  ///< of the mini-batch
};
SplitBatch splitStepBatch(const PipelineShape& shape, const torch::Tensor& input, const torch::Tensor& target);

/// Throws std::invalid_argument when the schedule of `shape` cannot run the m micro-batches
/// that scattering `rows` rows into shape.chunks gave.
void checkMicroBatches(const PipelineShape& shape, std::int64_t m, std::int64_t rows);

/// The schedules of one pipeline by micro-batch count and mode, built once each.
class ScheduleCache {
 public:
  ScheduleCache(PipelineShape shape, std::vector<SkipRoute> skips);
  /// The schedule of m micro-batches. gradEnabled false: forwards only. training false (eval
  /// mode): nothing is checkpointed, whatever the shape's mode.
  const Schedule& get(std::int64_t m, bool gradEnabled, bool training);

 private:
  PipelineShape shape_;
  std::vector<SkipRoute> skips_;
  std::map<std::tuple<std::int64_t, bool, bool>, std::unique_ptr<Schedule>> schedules_;
};

/// The step's RNG seed: drawn from the default CPU generator when `stochastic`, else 0.
std::uint64_t stepSeed(bool stochastic);

}  // namespace pipeprof
