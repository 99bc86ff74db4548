// A Sequential split into its stages on their devices: what both executors (the threaded Pipe
// and a rank) build once, at construction, and start and end each step with.
#pragma once

#include "stage/shared_parameters.h"
#include "stage/stage.h"
#include "stage/stage_core.h"

#include <pipeprof/core/units.h>
#include <pipeprof/runtime/deferred_batch_norm.h>
#include <pipeprof/runtime/skip.h>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pipeprof {

/// The stages of one pipeline and what runs with them.
struct StageSet {
  torch::nn::Sequential module;             ///< the Sequential split (its BatchNorms deferred when asked)
  std::vector<Stage> stages;                ///< ascending j: every stage, or one pipeline device's (keepOnly)
  std::vector<SharedParameter> shared;      ///< parameters layers of several pipeline devices hold
  std::vector<StageSkipRoute> routes;       ///< the skips between and inside stages
  std::vector<SkipRoute> skips;             ///< the same skips as ScheduleSpec::skips wants them
  std::vector<Bytes> deviceParameterBytes;  ///< by pipeline device: its (kept) stages' parameters
  /// The deferred BatchNorms of the kept stages (deferredBatchNorm), committed after a
  /// training step.
  std::vector<std::shared_ptr<DeferredBatchNormImpl>> deferredBatchNorms;
  bool stochastic = false;  ///< some stage of the pipeline (kept or not) draws random numbers

  /// Keeps pipeline device d's stages only (a rank's own): the others', their parameters and
  /// their replicas of shared parameters are dropped.
  void keepOnly(std::int64_t d);

  /// The stage core's view of the kept stages: by stage j, null for a stage not kept. The
  /// caller adds the step's schedule, seed, loss and tracer.
  StageCoreConfig coreConfig(std::int64_t stageCount, Precision precision) const;

  /// Before a step: every kept pipeline device's memory windows (the tracked bytes of its tag
  /// and its accelerator's peak) start again, and the deferred BatchNorms forget what a
  /// step that failed half-way accumulated.
  void beginStep() const;
  /// After a step in which every forward ran: the deferred BatchNorms commit their statistics
  /// when `training` (as BatchNorm does in train mode).
  void endStep(bool training) const;
};

/// Splits a Sequential (checked by validatePipeArguments) by the shape's balance: its skips
/// verified, its BatchNorms deferred when asked, the parameters stages of different pipeline
/// devices share replicated, and stage j's layers moved to devices[shape.deviceOfStage(j)]
/// (one device per pipeline device). Installs the memory tracker first, so that what the layers
/// allocate from then on is counted. Throws std::invalid_argument for a skip without its
/// match, a nested BatchNorm to defer, or a shared parameter a layer cannot hold a replica of.
StageSet splitIntoStages(const torch::nn::Sequential& module, const PipelineShape& shape, bool deferredBatchNorm,
                         const std::vector<torch::Device>& devices);

}  // namespace pipeprof
