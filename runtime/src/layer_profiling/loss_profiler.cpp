// The loss profiler: memory and time of the model's loss on the last layer's output.
#include "layer_profiling/loss_profiler.h"

#include "layer_profiling/profiling_scopes.h"
#include "stage/autocast.h"
#include "stage/microbatch.h"

#include <pipeprof/runtime/memory_tracker.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

/// The loss of `output` as a stage computes it (weighMicroBatchLoss; the weight is any share).
torch::Tensor weighedLoss(const Model& model, const torch::Tensor& output, const torch::Tensor& target) {
  try {
    return weighMicroBatchLoss(model.loss(output, target), 0.5);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("model '" + model.name + "': " + error.what());
  }
}

void backwardOf(const torch::Tensor& loss) {
  if (!loss.requires_grad()) return;
  AutocastPause pause;  // the backward's ops take the types the forward chose
  loss.backward();
}

/// A leaf of `output` that requires grad when it can.
torch::Tensor leafOf(const torch::Tensor& output) { return output.detach().requires_grad_(output.is_floating_point()); }

/// The memory fields, and whether the loss's graph keeps the output alive.
void measureMemory(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                   const LossMeasurement& how, CostSample& cost, bool& keepsOutput) {
  // A stage's output is no leaf: it lives as long as the stage or a graph holds it. So is this
  // one, a copy made outside the tag (the stage's output is counted as the stage's already).
  const torch::Tensor leaf = leafOf(output);
  torch::Tensor input = leaf.clone();
  const c10::weak_intrusive_ptr<c10::StorageImpl> inputStorage = input.storage().getWeakStorageImpl();
  LayerMemoryScope scope(*how.streams, how.tag);
  const Bytes before = liveBytes(how.tag);
  resetPeakBytes(how.tag);
  torch::Tensor loss = weighedLoss(model, input, target);
  input = torch::Tensor();
  synchronize(how.device);
  keepsOutput = !inputStorage.expired();
  const Bytes live = liveBytes(how.tag) - before;
  cost.outputBytes = bytesOf(loss);
  cost.savedBytes = std::max<Bytes>(0, live - cost.outputBytes);
  cost.forwardWorkspaceBytes = std::max<Bytes>(0, peakBytes(how.tag) - before - live);
  const Bytes start = liveBytes(how.tag);
  resetPeakBytes(how.tag);
  backwardOf(loss);
  synchronize(how.device);
  cost.backwardWorkspaceBytes = std::max<Bytes>(0, peakBytes(how.tag) - start);
}

}  // namespace

LossSample measureLossMemory(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                             const LossMeasurement& how) {
  if (!model.loss) throw std::invalid_argument("model '" + model.name + "' has no loss function");
  AutocastScope autocast(how.precision, how.device);
  LossSample sample;
  sample.cost.microBatch = output.size(0);
  measureMemory(model, output, target, how, sample.cost, sample.keepsOutput);
  return sample;
}

LossTime timeLoss(const Model& model, const torch::Tensor& output, const torch::Tensor& target,
                  const torch::Device& device, Precision precision) {
  using Clock = std::chrono::steady_clock;
  auto ns = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
  const torch::Tensor leaf = leafOf(output);
  const torch::Tensor input = uncachedInputs({leaf}, precision).front();  // as a stage's view
  synchronize(device);
  const auto t0 = Clock::now();
  const torch::Tensor loss = weighedLoss(model, input, target);
  synchronize(device);
  const auto t1 = Clock::now();
  backwardOf(loss);
  synchronize(device);
  const auto t2 = Clock::now();
  return {ns(t1 - t0), ns(t2 - t1)};
}

}  // namespace pipeprof
