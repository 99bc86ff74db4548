// Simulates candidates of one profile on one cluster, reusing compiled schedules, cost tables and engine buffers.
#include "candidate_simulator.h"

#include "predicted_trace.h"
#include "weight_deferral.h"

#include <pipeprof/core/pipeline_shape.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace pipeprof::sim {

void validateCandidate(const Profile& profile, const Cluster& cluster, const Candidate& candidate) {
  if (candidate.balance.empty()) throw std::invalid_argument("balance is empty: give at least one stage");
  std::int64_t sum = 0;
  for (std::size_t j = 0; j < candidate.balance.size(); ++j) {
    if (candidate.balance[j] < 1) {
      throw std::invalid_argument("balance " + formatBalance(candidate.balance) + ": stage " + std::to_string(j) +
                                  " has " + std::to_string(candidate.balance[j]) +
                                  " layers; every stage needs at least one");
    }
    sum += candidate.balance[j];
  }
  if (sum != profile.layerCount()) {
    throw std::invalid_argument("balance " + formatBalance(candidate.balance) + " sums to " + std::to_string(sum) +
                                " layers but the profile has " + std::to_string(profile.layerCount()) +
                                "; give a balance whose entries add up to " + std::to_string(profile.layerCount()));
  }
  if (candidate.chunks < 1) {
    throw std::invalid_argument("chunks must be positive, got " + std::to_string(candidate.chunks));
  }
  if (candidate.batch < 1) {
    throw std::invalid_argument("batch must be positive, got " + std::to_string(candidate.batch));
  }
  const auto n = static_cast<std::int64_t>(candidate.balance.size());
  if (candidate.stagesPerDevice < 1) {
    throw std::invalid_argument("stages per device must be positive, got " + std::to_string(candidate.stagesPerDevice));
  }
  const std::string shape = candidate.shapeError(microBatching(candidate.batch, candidate.chunks).count);
  if (!shape.empty()) throw std::invalid_argument(shape);
  const std::int64_t p = candidate.pipelineDevices();
  if (!candidate.devices.empty() && static_cast<std::int64_t>(candidate.devices.size()) != p) {
    throw std::invalid_argument("candidate places " + std::to_string(candidate.devices.size()) +
                                " pipeline devices on cluster devices but it has " + std::to_string(p) + " (" +
                                std::to_string(n) + " stages, at most " + std::to_string(candidate.stagesPerDevice) +
                                " per device); give one cluster device per pipeline device");
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t device = candidate.deviceOf(j);
    if (device < 0 || device >= cluster.deviceCount()) {
      throw std::invalid_argument("stage " + std::to_string(j) + " is placed on device " + std::to_string(device) +
                                  " but the cluster has " + std::to_string(cluster.deviceCount()) + " devices (0.." +
                                  std::to_string(cluster.deviceCount() - 1) + "); add devices or use fewer stages");
    }
  }
  for (const SkipProfile& skip : profile.skips) {
    if (skip.stashLayer < 0 || skip.popLayer >= profile.layerCount() || skip.stashLayer >= skip.popLayer) {
      throw std::invalid_argument("profile skip '" + skip.name + "' stashes at layer " +
                                  std::to_string(skip.stashLayer) + " and pops at layer " +
                                  std::to_string(skip.popLayer) + "; it needs 0 <= stash < pop < " +
                                  std::to_string(profile.layerCount()));
    }
  }
  for (std::size_t l = 0; l < profile.layers.size(); ++l) {
    if (profile.layers[l].costs.empty()) {
      throw std::invalid_argument("profile layer " + std::to_string(l) + " (" + profile.layers[l].name +
                                  ") has no cost samples");
    }
  }
}

CandidateSimulator::CandidateSimulator(const Profile& profile, const Cluster& cluster)
    : profile_(profile), cluster_(cluster), costs_(profile) {
  if (cluster.deviceCount() < 1) throw std::invalid_argument("the cluster has no devices");
  hostIndices(cluster);  // throws for a hosts list that is not one name per device
  for (std::size_t d = 0; d < cluster.devices.size(); ++d) {
    if (!(cluster.devices[d].relativeSpeed > 0.0)) {
      throw std::invalid_argument("device " + std::to_string(d) + " (" + cluster.devices[d].name +
                                  ") has relative speed " + std::to_string(cluster.devices[d].relativeSpeed) +
                                  "; it must be positive");
    }
  }
}

const CompiledSchedule& CandidateSimulator::compiledFor(const Candidate& candidate, std::int64_t count, bool training) {
  scratchKey_.kind = candidate.schedule;
  scratchKey_.stagesPerDevice = candidate.stagesPerDevice;
  scratchKey_.stages = static_cast<std::int64_t>(candidate.balance.size());
  scratchKey_.chunks = count;
  scratchKey_.mode = candidate.checkpoint;
  scratchKey_.training = training;
  scratchKey_.deferredWeights = candidate.deferredWeights;
  scratchKey_.skipStages.clear();
  auto stageOf = [&](std::int64_t layer) {
    std::int32_t j = 0;
    while (firstLayer_[static_cast<std::size_t>(j) + 1] <= layer) ++j;
    return j;
  };
  // Whether a stash or a pop opens its stage changes the compiled holds too.
  auto opens = [&](std::int64_t layer) { return layer > 0 && stageOf(layer - 1) != stageOf(layer) ? 1 : 0; };
  for (const SkipProfile& skip : profile_.skips) {
    scratchKey_.skipStages.push_back(stageOf(skip.stashLayer));
    scratchKey_.skipStages.push_back(stageOf(skip.popLayer));
    scratchKey_.skipStages.push_back(opens(skip.stashLayer) + 2 * opens(skip.popLayer));
  }
  auto found = cache_.find(scratchKey_);
  if (found != cache_.end()) return *found->second;
  const Schedule schedule = Schedule::build(candidate.scheduleSpec(profile_.skipRoutes(), training));
  SkipFacts facts;
  for (const SkipProfile& skip : profile_.skips) facts.gradientSharedWithInput.push_back(skip.gradientSharedWithInput);
  facts.stashReturnsItsInput = costs_.stashReturnsItsInput();
  auto compiled = std::make_unique<CompiledSchedule>(compileSchedule(schedule, facts, cluster_.processPerDevice));
  return *cache_.emplace(scratchKey_, std::move(compiled)).first->second;
}

std::vector<std::int64_t> CandidateSimulator::deferralWithinOneFOneBMemory(const Candidate& candidate) {
  return sim::deferralWithinOneFOneBMemory(costs_, candidate);
}

void CandidateSimulator::simulate(const Candidate& candidate, bool training, bool recordTrace, bool latePeaks,
                                  SimulationResult& out) {
  const MicroBatching batching = microBatching(candidate.batch, candidate.chunks);
  const std::size_t n = candidate.balance.size();
  firstLayer_.resize(n + 1);
  firstLayer_[0] = 0;
  for (std::size_t j = 0; j < n; ++j) firstLayer_[j + 1] = firstLayer_[j] + candidate.balance[j];

  const CompiledSchedule& compiled = compiledFor(candidate, batching.count, training);
  resolveCosts(compiled, costs_, cluster_, candidate, batching, firstLayer_, resolved_);
  const auto deviceCount = static_cast<std::int32_t>(cluster_.deviceCount());
  engine_.run(compiled, resolved_, deviceCount, recordTrace);

  // busyNs, peakBytes and peakOp are per pipeline device (lane): a device's stages together.
  Prediction& p = out.prediction;
  const auto lanes = static_cast<std::size_t>(compiled.lanes);
  // Training ends with the optimizer step of every device, once all of them ran their ops.
  optimizerStepCosts(profile_, cluster_, firstLayer_, compiled.stageLane, resolved_.stageDevice, compiled.lanes,
                     training, optimizer_);
  // Shared parameters: their copies' gradients are summed before it (none without any).
  sharedGradientCosts(profile_, cluster_, firstLayer_, compiled.stageLane, resolved_.stageDevice, compiled.lanes,
                      training, shared_);
  const TimeNs pipelineEndNs = engine_.iterationNs();
  const TimeNs optimizerStartNs = pipelineEndNs + shared_.exchangeNs;
  p.iterationNs = optimizerStartNs + optimizer_.longestNs();
  const double seconds = static_cast<double>(p.iterationNs) * 1e-9;
  p.samplesPerS = seconds > 0.0 ? static_cast<double>(candidate.batch) / seconds : 0.0;
  p.busyNs = engine_.busyNs();
  for (std::size_t d = 0; d < optimizer_.durationNs.size(); ++d) p.busyNs[d] += optimizer_.durationNs[d];
  double idle = 0.0;
  for (TimeNs busy : p.busyNs) {
    // With launches a device's streams may overlap, so busy (the device time) may exceed the
    // step; such a device idles 0. Without them busy never exceeds the step.
    if (p.iterationNs > 0 && busy < p.iterationNs) {
      idle += 1.0 - static_cast<double>(busy) / static_cast<double>(p.iterationNs);
    }
  }
  p.bubbleFraction = idle / static_cast<double>(lanes);
  lanePeaks(compiled, engine_.memory(), p.peakBytes, &p.peakOp);
  devicePeakBytes_.assign(static_cast<std::size_t>(deviceCount), 0);
  for (std::size_t d = 0; d < lanes; ++d) {
    devicePeakBytes_[static_cast<std::size_t>(resolved_.stageDevice[d])] += p.peakBytes[d];
  }
  p.fits = true;
  p.overflowDevices.clear();
  for (std::size_t d = 0; d < devicePeakBytes_.size(); ++d) {
    const auto& capacity = cluster_.devices[d].memoryBytes;
    if (capacity && devicePeakBytes_[d] > *capacity) {
      p.fits = false;
      p.overflowDevices.push_back(static_cast<std::int64_t>(d));
    }
  }
  p.tracePath.clear();
  out.eventCount = engine_.eventCount();
  if (recordTrace) {
    out.trace = predictedTrace(compiled, resolved_, engine_, cluster_, candidate.label());
    appendSharedGradientSpans(out.trace, shared_, pipelineEndNs, resolved_.stageDevice, cluster_);
    appendOptimizerSpans(out.trace, optimizer_, optimizerStartNs, resolved_.stageDevice, cluster_);
  } else {
    out.trace = Trace{};
  }
  // Last, as it runs the engine again: the trace above reads the first run.
  p.latePeakBytes.clear();
  if (!latePeaks) return;
  if (compiled.opLate.empty()) {
    p.latePeakBytes = p.peakBytes;  // no device frees another's tensors
    return;
  }
  engine_.run(compiled, resolved_, deviceCount, /*recordMemorySamples=*/false, LateFrees::kAtTheLatest);
  lanePeaks(compiled, engine_.memory(), p.latePeakBytes, nullptr);
}

void CandidateSimulator::lanePeaks(const CompiledSchedule& compiled, const MemoryTimeline& memory,
                                   std::vector<Bytes>& peakBytes, std::vector<std::string>* peakOp) const {
  const auto lanes = static_cast<std::size_t>(compiled.lanes);
  peakBytes.assign(lanes, 0);
  if (peakOp) peakOp->resize(lanes);
  for (std::size_t j = 0; j < compiled.stageLane.size(); ++j) {
    peakBytes[static_cast<std::size_t>(compiled.stageLane[j])] += resolved_.staticBytes[j];
  }
  for (std::size_t d = 0; d < lanes; ++d) {
    peakBytes[d] -= shared_.duplicateBytes[d];  // one copy a device
    const auto dd = static_cast<std::int32_t>(d);
    // The cast copies live through the ops; the optimizer's temporaries come after them.
    const Bytes stepBytes = optimizer_.transientBytes[d];
    const Bytes opsPeak = memory.peakDynamic(dd) + optimizer_.castCacheBytes[d];
    peakBytes[d] += std::max(opsPeak, stepBytes);
    if (!peakOp) continue;
    const std::int64_t op = memory.peakOp(dd);
    if (stepBytes > opsPeak) {
      (*peakOp)[d] = "optimizer";
    } else if (op >= 0) {
      (*peakOp)[d] = compiled.labels[static_cast<std::size_t>(op)];
    } else {
      (*peakOp)[d].clear();
    }
  }
}

}  // namespace pipeprof::sim
