// Shared by the precision tests on CPU and on CUDA: a small model built alike every time, and
// the unpartitioned model's training under the same autocast (and, for fp16, the same loss
// scaling), which every pipeline must equal.
#pragma once

#include "stage/autocast.h"
#include "training/make_optimizer.h"

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/runtime/grad_scaler.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/training_loop.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::test {

/// Linear, tanh, linear, tanh, linear (width 16), initialised from seed 0 every time.
inline Model smallAutocastModel() {
  torch::manual_seed(0);
  Model model;
  model.name = "small";
  model.sequential = torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 16),
                                           torch::nn::Tanh(), torch::nn::Linear(16, 4));
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    torch::Tensor input = torch::randn({batch, 8}, generator);
    return Batch{input, torch::randn({batch, 4}, generator)};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output.to(torch::kFloat), target);
  };
  return model;
}

inline OptimizerSpec adamwWithDecay() {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::AdamW;
  spec.learningRate = 0.05;
  spec.weightDecay = 0.1;
  return spec;
}

/// What the unpartitioned model trains on, and how (AdamW, adamwWithDecay()); the pipelines
/// that must equal it train alike (pipelineTraining).
struct ReferenceTraining {
  torch::Device device = torch::kCPU;
  Precision precision = Precision::Fp32;
  std::int64_t batch = 8;
  std::int64_t chunks = 4;
  std::int64_t dataSeed = 5;
  std::int64_t steps = 3;
  /// Loss scaling as the training loop does it (fp16 uses PyTorch's defaults).
  std::optional<GradScalerOptions> gradScaler;
};

/// The reference on `device` under `precision`, fp16's with the loss scaling the training loop
/// gives it.
inline ReferenceTraining referenceTraining(torch::Device device, Precision precision) {
  ReferenceTraining reference;
  reference.device = device;
  reference.precision = precision;
  if (precision == Precision::Fp16) reference.gradScaler = GradScalerOptions{};
  return reference;
}

/// A schedule of two pipeline devices: its family, the balance of its stages, stages per
/// device and checkpoint mode.
struct ScheduleCase {
  ScheduleKind schedule;
  std::vector<std::int64_t> balance;
  std::int64_t stagesPerDevice;
  Checkpoint checkpoint;

  std::string label() const {
    return std::string(scheduleKindName(schedule)) + " " + std::string(checkpointName(checkpoint));
  }
};

/// Every family of schedules over smallAutocastModel()'s five layers, each mode once.
inline std::vector<ScheduleCase> everyScheduleFamily() {
  return {{ScheduleKind::GPipe, {2, 3}, 1, Checkpoint::Never},
          {ScheduleKind::GPipe, {3, 2}, 1, Checkpoint::Always},
          {ScheduleKind::OneFOneB, {3, 2}, 1, Checkpoint::ExceptLast},
          {ScheduleKind::Interleaved, {1, 1, 2, 1}, 2, Checkpoint::ExceptLast},
          {ScheduleKind::ZeroBubble, {2, 3}, 1, Checkpoint::ExceptLast},
          {ScheduleKind::ZeroBubbleV, {1, 2, 1, 1}, 2, Checkpoint::Never}};
}

/// The training loop's options for `schedule` on `devices` that trains as `reference` does:
/// its batch, micro-batches, data, precision and AdamW, one warm-up step then the rest.
inline TrainingOptions pipelineTraining(const ReferenceTraining& reference, const ScheduleCase& schedule,
                                        std::vector<torch::Device> devices) {
  TrainingOptions options;
  options.balance = schedule.balance;
  options.schedule = schedule.schedule;
  options.stagesPerDevice = schedule.stagesPerDevice;
  options.chunks = reference.chunks;
  options.checkpoint = schedule.checkpoint;
  options.devices = std::move(devices);
  options.batch = reference.batch;
  options.dataSeed = reference.dataSeed;
  options.warmupSteps = 1;
  options.steps = reference.steps - 1;
  options.optimizer = adamwWithDecay();
  options.precision = reference.precision;
  return options;
}

/// A Pipe of smallAutocastModel() in two partitions ([2, 3], except_last) on `devices`, under
/// reference.precision with reference.chunks micro-batches: one step of it is referenceStep's.
inline PipeOptions twoPartitionPipe(const ReferenceTraining& reference, std::vector<torch::Device> devices) {
  PipeOptions options;
  options.balance = {2, 3};
  options.chunks = reference.chunks;
  options.checkpoint = Checkpoint::ExceptLast;
  options.devices = std::move(devices);
  options.precision = reference.precision;
  return options;
}

/// One step's forwards and backwards of the unpartitioned model (on reference.device) on
/// reference.chunks micro-batches as the Pipe splits them: each micro-batch's forward and loss
/// under autocast (its cast cache kept for the step), its loss weighted by its share of the
/// rows, its backward outside autocast from lossScale, as Pipe::step seeds it. Returns the loss.
inline double referenceStep(Model& model, const Batch& batch, const ReferenceTraining& reference,
                            double lossScale = 1.0) {
  const std::vector<torch::Tensor> inputs = torch::chunk(batch.input.to(reference.device), reference.chunks);
  const std::vector<torch::Tensor> targets = torch::chunk(batch.target.to(reference.device), reference.chunks);
  double total = 0;
  AutocastScope autocast(reference.precision, reference.device);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const double weight = static_cast<double>(inputs[i].size(0)) / static_cast<double>(reference.batch);
    torch::Tensor loss = model.loss(model.sequential->forward(inputs[i]), targets[i]) * weight;
    AutocastPause pause;
    loss.backward(torch::full_like(loss, lossScale));
    total += loss.item<double>();
  }
  return total;
}

/// The losses of reference.steps steps of the unpartitioned model with `optimizer`; with loss
/// scaling, a step whose unscaled gradients hold an inf or a NaN is skipped.
inline std::vector<double> referenceLosses(const ReferenceTraining& reference, const OptimizerSpec& optimizer) {
  Model model = smallAutocastModel();
  model.sequential->to(reference.device);
  const Batch batch = model.makeBatch(reference.batch, reference.dataSeed);
  const std::vector<torch::Tensor> parameters = model.sequential->parameters();
  const std::unique_ptr<torch::optim::Optimizer> step = makeOptimizer(optimizer, parameters);
  std::optional<GradScaler> scaler;
  if (reference.gradScaler) scaler.emplace(*reference.gradScaler);
  std::vector<double> losses;
  for (std::int64_t s = 0; s < reference.steps; ++s) {
    step->zero_grad();
    losses.push_back(referenceStep(model, batch, reference, scaler ? scaler->scale() : 1.0));
    bool skip = false;
    if (scaler) {
      skip = GradScaler::unscale(parameters, scaler->scale());
      scaler->update(skip);
    }
    if (!skip) step->step();
  }
  return losses;
}

inline void expectSameLosses(const std::vector<double>& actual, const std::vector<double>& expected,
                             const std::string& what, double relative = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t s = 0; s < expected.size(); ++s) {
    EXPECT_NEAR(actual[s], expected[s], relative * std::abs(expected[s])) << what << ", step " << s;
  }
}

/// Every parameter's gradient is fp32, as its weight is, and equals the reference's.
inline void expectSameFp32Gradients(const std::vector<torch::Tensor>& actual,
                                    const std::vector<torch::Tensor>& expected, double relative = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    ASSERT_TRUE(actual[k].grad().defined()) << "parameter " << k;
    EXPECT_EQ(actual[k].dtype(), torch::kFloat) << "weights stay fp32, parameter " << k;
    EXPECT_EQ(actual[k].grad().dtype(), torch::kFloat) << "gradients stay fp32, parameter " << k;
    EXPECT_TRUE(torch::allclose(actual[k].grad().cpu(), expected[k].grad().cpu(), relative, 1e-9)) << "parameter " << k;
  }
}

}  // namespace pipeprof::test
