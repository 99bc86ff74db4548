// What both executors check and build before a step: micro-batches, schedule, RNG seed.
#include "stage/step_setup.h"

#include "stage/rng.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pipeprof {

void checkMicroBatches(const PipelineShape& shape, std::int64_t m, std::int64_t rows) {
  const std::string error = scheduleShapeError(shape.schedule, shape.stagesPerDevice, shape.stages(), m);
  if (!error.empty()) {
    throw std::invalid_argument("a batch of " + std::to_string(rows) + " rows in " + std::to_string(shape.chunks) +
                                " chunks splits into " + std::to_string(m) +
                                " micro-batches (as torch.chunk does), which the schedule cannot run: " + error);
  }
}

SplitBatch splitStepBatch(const PipelineShape& shape, const torch::Tensor& input, const torch::Tensor& target) {
  if (!target.defined() || target.dim() == 0) {
    throw std::invalid_argument("step() needs a target with a batch dimension (dim 0), split like the input");
  }
  SplitBatch batch;
  batch.inputs = scatter({input}, shape.chunks);  // checks the input
  batch.rows = input.size(0);
  if (target.size(0) != batch.rows) {
    throw std::invalid_argument("the target must have the input's rows along dim 0 (input: " +
                                std::to_string(batch.rows) + " rows, target: " + std::to_string(target.size(0)) + ")");
  }
  checkMicroBatches(shape, static_cast<std::int64_t>(batch.inputs.size()), batch.rows);
  for (const Tensors& piece : scatter({target}, shape.chunks)) batch.targets.push_back(piece.front());
  return batch;
}

ScheduleCache::ScheduleCache(PipelineShape shape, std::vector<SkipRoute> skips)
    : shape_(std::move(shape)), skips_(std::move(skips)) {}

const Schedule& ScheduleCache::get(std::int64_t m, bool gradEnabled, bool training) {
  const auto key = std::make_tuple(m, gradEnabled, training);
  auto it = schedules_.find(key);
  if (it == schedules_.end()) {
    ScheduleSpec spec;
    static_cast<PipelineShape&>(spec) = shape_;
    spec.chunks = m;
    spec.checkpoint = training ? shape_.checkpoint : Checkpoint::Never;
    spec.training = gradEnabled;
    spec.skips = skips_;
    it = schedules_.emplace(key, std::make_unique<Schedule>(Schedule::build(spec))).first;
  }
  return *it->second;
}

std::uint64_t stepSeed(bool stochastic) { return stochastic ? drawSeed() : 0; }

}  // namespace pipeprof
