// Stages: validating a Pipe's arguments, splitting the Sequential, moving layers, calling them.
#pragma once

#include "stage/microbatch.h"

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// What a stage's layers do to their input, as far as the runs so far tell.
enum class InputWrites { Unknown, No, InPlace };

/// A contiguous run of layers (a stage) on one device.
struct Stage {
  std::int64_t j = 0;
  std::int64_t d = 0;           ///< pipeline device that runs it (PipelineShape::deviceOfStage)
  std::int64_t firstLayer = 0;  ///< index of its first layer in the Sequential
  torch::Device device = torch::kCPU;
  std::vector<torch::nn::AnyModule> layers;
  std::vector<std::string> names;
  bool stochastic = false;  ///< holds a dropout-like layer: its forward is seeded
  /// Whether its layers write their input in place (a checkpointed forward must then leave the
  /// input to its recompute untouched): learned by the stage core from the input's version
  /// counter, by the one thread that runs the stage's ops.
  mutable InputWrites inputWrites = InputWrites::Unknown;
  /// Its layers' parameters that no earlier stage of its pipeline device holds (a parameter
  /// layers of one device share is theirs once), named "layer.parameter": what the device's
  /// optimizer steps.
  std::vector<torch::Tensor> parameters;
  std::vector<std::string> parameterNames;
  Bytes parameterBytes = 0;  ///< bytes of `parameters` (static memory)
};

/// A skip route between stages (stash stage != pop stage, or the same).
struct StageSkipRoute {
  SkipKey key;
  std::int64_t scheduleIndex = 0;  ///< index into ScheduleSpec::skips (for op labels)
  std::int64_t stashJ = 0;
  std::int64_t popJ = 0;
};

/// The skip routes of a (verified) Sequential split by balance, in skipRoutes' order.
std::vector<StageSkipRoute> stageSkipRoutes(const torch::nn::Sequential& module,
                                            const std::vector<std::int64_t>& balance);

/// The route of `key` that crosses stages and is stashed (stashing) or popped in stage
/// j, or null when the skip stays inside j or is not j's.
const StageSkipRoute* crossRoute(const std::vector<StageSkipRoute>& routes, const SkipKey& key, std::int64_t j,
                                 bool stashing);

/// A tensor handed to another stage as a leaf of that stage's graph: detached, and
/// requiring grad when asked and floating.
torch::Tensor leafOf(const torch::Tensor& tensor, bool requiresGrad);

/// Throws std::invalid_argument with torchgpipe's messages for a bad balance, too few
/// devices, non-positive chunks, duplicate children (parameters shared by children are
/// replicated instead: shared_parameters.h),
/// and with scheduleShapeError's for a (schedule, stages per device) that cannot hold the
/// balance. The shape's p pipeline devices (n / v, or a custom order's ranks) need deviceCount >= p.
void validatePipeArguments(const torch::nn::Sequential& module, const PipelineShape& shape, std::size_t deviceCount);

/// The devices to use: `devices` when given, else every CUDA device (or `pipelineDevices` CPU
/// devices when there is none).
std::vector<torch::Device> resolveDevices(const std::vector<torch::Device>& devices, std::size_t pipelineDevices);

/// Splits the (validated) Sequential by the shape's balance and moves each stage's layers
/// to its device: stage j goes to devices[shape.deviceOfStage(j)] (one device per pipeline device).
std::vector<Stage> splitModule(const torch::nn::Sequential& module, const PipelineShape& shape,
                               const std::vector<torch::Device>& devices);

/// Runs the stage's layers on one micro-batch: a layer gets a Tensor when the boundary
/// holds one tensor and a std::vector<torch::Tensor> otherwise, and may return either.
Tensors runLayers(const Stage& stage, Tensors inputs);

}  // namespace pipeprof
