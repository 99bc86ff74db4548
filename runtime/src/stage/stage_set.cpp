// A Sequential split into its stages on their devices, and each step's start and end.
#include "stage/stage_set.h"

#include "memory/device_memory.h"

#include <pipeprof/runtime/memory_tracker.h>

#include <algorithm>
#include <set>

namespace pipeprof {

StageSet splitIntoStages(const torch::nn::Sequential& module, const PipelineShape& shape, bool deferredBatchNorm,
                         const std::vector<torch::Device>& devices) {
  verifySkips(module);
  StageSet set;
  set.module = deferredBatchNorm ? withDeferredBatchNorm(module, set.deferredBatchNorms) : module;
  installMemoryTracker();
  set.shared = replicateSharedParameters(set.module, shape);
  set.stages = splitModule(set.module, shape, devices);
  set.routes = stageSkipRoutes(set.module, shape.balance);
  set.skips = skipRoutes(set.module);  // in the routes' order, distinct names
  set.stochastic =
      std::any_of(set.stages.begin(), set.stages.end(), [](const Stage& stage) { return stage.stochastic; });
  set.deviceParameterBytes.assign(static_cast<std::size_t>(shape.pipelineDevices()), 0);
  for (const Stage& stage : set.stages) {
    set.deviceParameterBytes[static_cast<std::size_t>(stage.d)] += stage.parameterBytes;
  }
  return set;
}

void StageSet::keepOnly(std::int64_t d) {
  stages.erase(std::remove_if(stages.begin(), stages.end(), [d](const Stage& stage) { return stage.d != d; }),
               stages.end());
  for (SharedParameter& parameter : shared) {
    for (SharedParameter::Copy& copy : parameter.copies) {
      if (copy.d != d) copy.tensor = torch::Tensor();  // another device's, dropped with its stages
    }
  }
  for (std::size_t other = 0; other < deviceParameterBytes.size(); ++other) {
    if (static_cast<std::int64_t>(other) != d) deviceParameterBytes[other] = 0;
  }
  std::set<const torch::nn::Module*> kept;
  for (const Stage& stage : stages) {
    for (const auto& layer : stage.layers) {
      for (const auto& child : layer.ptr()->modules(/*include_self=*/true)) kept.insert(child.get());
    }
  }
  deferredBatchNorms.erase(std::remove_if(deferredBatchNorms.begin(), deferredBatchNorms.end(),
                                          [&kept](const auto& batchNorm) { return kept.count(batchNorm.get()) == 0; }),
                           deferredBatchNorms.end());
}

StageCoreConfig StageSet::coreConfig(std::int64_t stageCount, Precision precision) const {
  StageCoreConfig core;
  core.stages.assign(static_cast<std::size_t>(stageCount), nullptr);
  for (const Stage& stage : stages) core.stages[static_cast<std::size_t>(stage.j)] = &stage;
  core.routes = &routes;
  core.deviceParameterBytes = deviceParameterBytes;
  core.precision = precision;
  core.shared = &shared;
  return core;
}

void StageSet::beginStep() const {
  std::set<std::int64_t> started;
  for (const Stage& stage : stages) {
    if (!started.insert(stage.d).second) continue;
    resetPeakBytes(stage.d);  // a pipeline device's stages count against its one tag
    resetDevicePeakBytes(stage.device);
  }
  for (const auto& batchNorm : deferredBatchNorms) batchNorm->resetStatistics();
}

void StageSet::endStep(bool training) const {
  if (!training) return;
  for (const auto& batchNorm : deferredBatchNorms) batchNorm->commit();
}

}  // namespace pipeprof
