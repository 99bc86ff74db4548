// Fitting a calibration to traced reference pipelines: scales per micro-batch size, device speeds, step overheads.
#include <pipeprof/simulator/calibration_fit.h>

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/statistics.h>
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/simulator/simulator.h>

#include "cost_model.h"
#include "reference_spans.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace pipeprof {
namespace {

/// The layers' scales stay within [0.25, 4] of the profile. The loss's may go further: a
/// profile from before the loss was timed after the last layer's forward timed it alone, on
/// hot caches, at a fraction of its time in the pipeline (unet's MSE at 2 samples: 13 us
/// profiled, 50-90 us in the pipeline).
constexpr double kMaxLayerScale = 4.0;
constexpr double kMaxLossScale = 64.0;

/// The shapes' disagreement at one size (log scale) assumed where no size has two cells: about
/// what the layers' cells of the accuracy suite of 2026-12-03 06:37 showed (forward 0.060,
/// backward 0.072).
constexpr double kCellSdWithoutSpread = 0.07;

using sim::asWarmOp;
using sim::ColdOps;
using sim::coldOpsOf;
using sim::ColdScales;
using sim::forEachTimedOp;
using sim::forEachTimedSpan;
using sim::forwardWithoutGraph;
using sim::profiledSpanNs;
using sim::stageProfiledNs;

/// The whole model's profiled forward (with its graph and without) and backward time at
/// micro-batch size `size`.
struct ProfiledModel {
  TimeNs forwardNs = 0;
  TimeNs forwardNoGradNs = 0;
  TimeNs backwardNs = 0;

  ProfiledModel(const Profile& profile, std::int64_t size) {
    for (const LayerProfile& layer : profile.layers) {
      const CostSample cost = layer.costAt(size);
      forwardNs += cost.forwardNs;
      forwardNoGradNs += cost.forwardWithoutGraphNs();
      backwardNs += cost.backwardNs;
    }
  }
};

/// Per micro-batch size, the whole model's forward and backward time of every micro-batch of
/// every timed step (the sum of its spans over the stages) over the profile's: a checkpointed
/// micro-batch's forward over the forwards without a graph.
struct WholeModelSamples {
  std::map<std::int64_t, std::vector<double>> forwardRatios;
  std::map<std::int64_t, std::vector<double>> backwardRatios;

  void add(const Profile& profile, const ReferenceRun& run, const ColdOps& cold, const ColdScales& coldScales) {
    // (step, micro-batch, phase) -> (size, time summed over the stages, without a graph)
    struct Sum {
      std::int64_t size = 0;
      TimeNs ns = 0;
      bool withoutGraph = false;
    };
    std::map<std::tuple<std::size_t, std::int64_t, Phase>, Sum> sums;
    forEachTimedOp(run, [&](const TraceEvent& op, std::int64_t size, std::size_t step) {
      Sum& sum = sums[{step, op.microBatch, op.phase}];
      sum.size = size;
      sum.ns += asWarmOp(op, cold, coldScales);
      sum.withoutGraph = forwardWithoutGraph(run, op);
    });
    std::map<std::int64_t, ProfiledModel> profiled;
    for (const auto& [key, sum] : sums) {
      const ProfiledModel& model = profiled.try_emplace(sum.size, profile, sum.size).first->second;
      const bool forward = std::get<2>(key) == Phase::Forward;
      const TimeNs profiledNs =
          forward ? (sum.withoutGraph ? model.forwardNoGradNs : model.forwardNs) : model.backwardNs;
      if (profiledNs <= 0) continue;
      (forward ? forwardRatios : backwardRatios)[sum.size].push_back(static_cast<double>(sum.ns) /
                                                                     static_cast<double>(profiledNs));
    }
  }
};

/// Each device's speed with its part apart from the devices' mean (log terms) drawn toward it:
/// speed(d) = exp(mean + share x split(d)), share = shrinkageShare(kDeviceSplitSd, s^2), s^2 the
/// variance of one run's split (log(predicted / measured) of each device less the run's mean over
/// its devices) about the pooled one, per device. `runLogs`: per run, each device's
/// log(predicted / measured). Fewer than two runs of every device: as pooled.
std::vector<double> splitDrawnTowardTheMean(std::vector<double> speeds,
                                            const std::vector<std::vector<double>>& runLogs) {
  const std::size_t devices = speeds.size();
  if (devices < 2) return speeds;
  double mean = 0;
  for (double speed : speeds) mean += std::log(speed) / static_cast<double>(devices);
  std::vector<double> split;
  for (double speed : speeds) split.push_back(std::log(speed) - mean);
  double squares = 0;
  std::size_t splits = 0;
  for (const std::vector<double>& logs : runLogs) {
    if (logs.size() != devices) continue;
    double runMean = 0;
    for (double value : logs) runMean += value / static_cast<double>(devices);
    for (std::size_t d = 0; d < devices; ++d) squares += std::pow(logs[d] - runMean - split[d], 2);
    ++splits;
  }
  if (splits < 2) return speeds;
  const double share = shrinkageShare(kDeviceSplitSd, squares / static_cast<double>((splits - 1) * devices));
  for (std::size_t d = 0; d < devices; ++d) speeds[d] = std::exp(mean + share * split[d]);
  return speeds;
}

/// Per device d: the calibrated profile's forward + backward time of the layers of its stages
/// over what their spans measured (an op that found its stage cold as asWarmOp counts it),
/// over every timed step of every run (clamped to [0.5, 2]), its part apart from the devices'
/// mean then drawn toward it by how far the runs' own splits wander (splitDrawnTowardTheMean).
/// Stage j of a run runs on its candidate's deviceOfStage(j).
std::vector<double> deviceSpeeds(const Profile& calibrated, const std::vector<const ReferenceRun*>& runs,
                                 const std::map<const ReferenceRun*, ColdOps>& cold, const ColdScales& coldScales) {
  std::vector<TimeNs> predictedNs;
  std::vector<TimeNs> measuredNs;
  std::vector<std::vector<double>> runLogs;  // per run of every device, per device: log(predicted / measured)
  for (const ReferenceRun* run : runs) {
    const auto devices = static_cast<std::size_t>(std::max<std::int64_t>(1, run->candidate.pipelineDevices()));
    std::vector<TimeNs> runPredictedNs(devices, 0);
    std::vector<TimeNs> runMeasuredNs(devices, 0);
    const ColdOps& own = cold.at(run);
    forEachTimedOp(*run, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
      const auto j = static_cast<std::size_t>(op.partition);
      if (j >= run->candidate.balance.size()) return;
      const auto d = static_cast<std::size_t>(run->candidate.deviceOfStage(static_cast<std::int64_t>(j)));
      runPredictedNs[d] += stageProfiledNs(calibrated, *run, op, size);
      runMeasuredNs[d] += asWarmOp(op, own, coldScales);
    });
    predictedNs.resize(std::max(predictedNs.size(), devices), 0);
    measuredNs.resize(predictedNs.size(), 0);
    std::vector<double> logs;
    for (std::size_t d = 0; d < devices; ++d) {
      predictedNs[d] += runPredictedNs[d];
      measuredNs[d] += runMeasuredNs[d];
      if (runPredictedNs[d] > 0 && runMeasuredNs[d] > 0) {
        logs.push_back(std::log(static_cast<double>(runPredictedNs[d]) / static_cast<double>(runMeasuredNs[d])));
      }
    }
    if (logs.size() == devices) runLogs.push_back(std::move(logs));
  }
  std::vector<double> speeds;
  for (std::size_t j = 0; j < predictedNs.size(); ++j) {
    const double ratio = predictedNs[j] > 0 && measuredNs[j] > 0
                             ? static_cast<double>(predictedNs[j]) / static_cast<double>(measuredNs[j])
                             : 1.0;
    speeds.push_back(std::clamp(ratio, 0.5, 2.0));
  }
  return splitDrawnTowardTheMean(std::move(speeds), runLogs);
}

/// One timed loss op: its micro-batch's size and its time at the speed of 1 (its span times
/// the speed of the device it ran on: the simulator divides the loss's time by that speed).
struct LossCall {
  std::int64_t size = 0;  ///< samples
  TimeNs ns = 0;
};

/// Each timed step's loss ops, from the step's first call to its last (by start; of calls that
/// start together, the lower micro-batch first).
using LossSteps = std::vector<std::vector<LossCall>>;

/// A run's LossSteps.
LossSteps lossCallsBySteps(const ReferenceRun& run, const std::vector<double>& deviceSpeeds) {
  struct Timed {
    TimeNs startNs = 0;
    std::int64_t microBatch = 0;
    LossCall call;
  };
  std::map<std::size_t, std::vector<Timed>> bySteps;
  forEachTimedSpan(run, {Phase::Loss}, [&](const TraceEvent& op, std::int64_t size, std::size_t step) {
    const auto d = static_cast<std::size_t>(run.candidate.deviceOfStage(op.partition));
    const double speed = d < deviceSpeeds.size() ? deviceSpeeds[d] : 1.0;
    const auto ns = static_cast<TimeNs>(std::llround(static_cast<double>(op.durationNs) * speed));
    bySteps[step].push_back({op.startNs, op.microBatch, {size, ns}});
  });
  LossSteps steps;
  for (auto& [step, calls] : bySteps) {
    std::sort(calls.begin(), calls.end(), [](const Timed& a, const Timed& b) {
      return std::tie(a.startNs, a.microBatch) < std::tie(b.startNs, b.microBatch);
    });
    std::vector<LossCall>& ordered = steps.emplace_back();
    for (const Timed& timed : calls) ordered.push_back(timed.call);
  }
  return steps;
}

/// The LossSteps of every run, one after another.
LossSteps lossCallsBySteps(const std::vector<const ReferenceRun*>& runs, const std::vector<double>& deviceSpeeds) {
  LossSteps steps;
  for (const ReferenceRun* run : runs) {
    LossSteps own = lossCallsBySteps(*run, deviceSpeeds);
    steps.insert(steps.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
  }
  return steps;
}

/// The loss's cold start the steps imply (calibration_fit.h), or nullopt from fewer than
/// kMinColdStarts steps with a later call of the first one's size.
constexpr std::size_t kMinColdStarts = 3;

std::optional<TimeNs> lossColdStartNs(const LossSteps& steps) {
  std::vector<TimeNs> coldStarts;
  for (const std::vector<LossCall>& step : steps) {
    std::vector<TimeNs> laterNs;
    for (std::size_t k = 1; k < step.size(); ++k) {
      if (step[k].size == step.front().size) laterNs.push_back(step[k].ns);
    }
    if (!laterNs.empty()) coldStarts.push_back(step.front().ns - medianNs(laterNs));
  }
  if (coldStarts.size() < kMinColdStarts) return std::nullopt;
  return std::max<TimeNs>(0, medianNs(coldStarts));
}

/// Per micro-batch size, every loss op of the steps as a step's first call costs: a later call
/// with the cold start added.
std::map<std::int64_t, std::vector<TimeNs>> lossNsAsFirstCalls(const LossSteps& steps, TimeNs coldStartNs) {
  std::map<std::int64_t, std::vector<TimeNs>> lossNs;
  for (const std::vector<LossCall>& step : steps) {
    for (std::size_t k = 0; k < step.size(); ++k) {
      lossNs[step[k].size].push_back(k == 0 ? step[k].ns : step[k].ns + coldStartNs);
    }
  }
  return lossNs;
}

/// The message latency the runs imply (calibration_fit.h), or nullopt when fewer than
/// kMinMessageSamples messages found their receiver waiting.
constexpr std::size_t kMinMessageSamples = 3;

std::optional<TimeNs> messageLatencyNs(const Cluster& cluster, const std::vector<ReferenceRun>& runs) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<TimeNs>> samplesByDirection;
  std::size_t sampleCount = 0;
  for (const ReferenceRun& run : runs) {
    const std::vector<const TraceEvent*> steps = stepSpans(run.trace);
    auto timed = [&](TimeNs ns) {
      return std::any_of(steps.begin(), steps.end(),
                         [&](const TraceEvent* step) { return ns >= step->startNs && ns < step->endNs(); });
    };
    // A flow leaves where its send span starts and lands where its receive span ends.
    std::map<std::pair<std::string, TimeNs>, const TraceEvent*> sends;
    std::map<std::pair<std::string, TimeNs>, const TraceEvent*> receives;
    std::map<std::int64_t, std::pair<const TraceEvent*, const TraceEvent*>> flows;
    for (const TraceEvent& event : run.trace.events) {
      if (event.kind == EventKind::Span && event.phase == Phase::Copy && event.lane == "send") {
        sends[{event.device, event.startNs}] = &event;
      } else if (event.kind == EventKind::Span && event.phase == Phase::Copy && event.lane == "receive") {
        receives[{event.device, event.endNs()}] = &event;
      } else if (event.kind == EventKind::FlowStart) {
        flows[event.correlationId].first = &event;
      } else if (event.kind == EventKind::FlowEnd) {
        flows[event.correlationId].second = &event;
      }
    }
    for (const auto& [id, ends] : flows) {
      if (ends.first == nullptr || ends.second == nullptr) continue;
      const auto send = sends.find({ends.first->device, ends.first->startNs});
      const auto receive = receives.find({ends.second->device, ends.second->startNs});
      if (send == sends.end() || receive == receives.end()) continue;
      const TraceEvent& sent = *send->second;
      const TraceEvent& received = *receive->second;
      // Only a receiver already waiting when the send began times the whole message.
      if (received.startNs > sent.startNs || !timed(sent.startNs)) continue;
      const auto to = sent.args.find("to_rank");
      const auto from = received.args.find("from_rank");
      if (to == sent.args.end() || from == received.args.end()) continue;
      const std::int64_t a = std::stoll(from->second);
      const std::int64_t b = std::stoll(to->second);
      if (a < 0 || b < 0 || a >= cluster.deviceCount() || b >= cluster.deviceCount() || a == b) continue;
      const Link& link = cluster.link(a, b);
      const TimeNs drainNs = std::max<TimeNs>(0, link.transferNs(sent.bytes) - link.latencyNs);
      samplesByDirection[{a, b}].push_back(received.endNs() - sent.startNs - drainNs);
      ++sampleCount;
    }
  }
  if (sampleCount < kMinMessageSamples) return std::nullopt;
  // Rank clocks are aligned to within tens of microseconds: an offset lengthens one direction's
  // messages as much as it shortens the other's, so the directions weigh alike.
  double sumNs = 0.0;
  for (const auto& [direction, samples] : samplesByDirection) sumNs += static_cast<double>(medianNs(samples));
  const double meanNs = sumNs / static_cast<double>(samplesByDirection.size());
  return std::max<TimeNs>(0, static_cast<TimeNs>(std::llround(meanNs)));
}

/// The wake latency the runs imply (calibration_fit.h), or nullopt: with one process per device
/// (a message's latency holds its receiver's wake-up), or from fewer than kMinWakeUps wake-ups.
constexpr std::size_t kMinWakeUps = 3;

std::optional<TimeNs> wakeLatencyNs(const Profile& profile, const Cluster& cluster,
                                    const std::vector<ReferenceRun>& runs) {
  if (cluster.processPerDevice) return std::nullopt;
  std::vector<TimeNs> wakeUps;
  for (const ReferenceRun& run : runs) {
    const Schedule schedule = Schedule::build(run.candidate.scheduleSpec(profile.skipRoutes()));
    const std::vector<TimeNs> own = wakeUpsNs(schedule, run.trace);
    wakeUps.insert(wakeUps.end(), own.begin(), own.end());
  }
  if (wakeUps.size() < kMinWakeUps) return std::nullopt;
  return medianNs(wakeUps);
}

}  // namespace

std::map<std::int64_t, TimeNs> overheadLine(const std::map<std::int64_t, TimeNs>& unexplainedNs) {
  std::map<std::int64_t, TimeNs> overheads;
  if (unexplainedNs.empty()) return overheads;
  // Least squares of unexplained = a + b m; one chunk count: a alone.
  const auto n = static_cast<double>(unexplainedNs.size());
  double meanM = 0.0;
  double meanNs = 0.0;
  for (const auto& [m, ns] : unexplainedNs) {
    meanM += static_cast<double>(m) / n;
    meanNs += static_cast<double>(ns) / n;
  }
  double covariance = 0.0;
  double variance = 0.0;
  for (const auto& [m, ns] : unexplainedNs) {
    covariance += (static_cast<double>(m) - meanM) * (static_cast<double>(ns) - meanNs);
    variance += (static_cast<double>(m) - meanM) * (static_cast<double>(m) - meanM);
  }
  const double slope = variance > 0.0 ? covariance / variance : 0.0;
  for (const auto& [m, ns] : unexplainedNs) {
    const double line = meanNs + slope * (static_cast<double>(m) - meanM);
    overheads[m] = std::max<TimeNs>(0, static_cast<TimeNs>(std::llround(line)));
  }
  return overheads;
}

std::vector<std::int64_t> evenBalance(std::int64_t layers, std::int64_t stages) {
  std::vector<std::int64_t> balance(static_cast<std::size_t>(stages), layers / stages);
  for (std::int64_t j = 0; j < layers % stages; ++j) ++balance[static_cast<std::size_t>(j)];
  return balance;
}

Candidate referenceCandidate(std::int64_t layers, std::int64_t devices, std::int64_t chunks, std::int64_t batch,
                             ScheduleKind schedule, std::int64_t stagesPerDevice, Checkpoint checkpoint) {
  Candidate candidate;
  candidate.schedule = schedule;
  candidate.stagesPerDevice = hasVirtualStages(schedule) ? stagesPerDevice : 1;
  candidate.balance = evenBalance(layers, std::min(devices * candidate.stagesPerDevice, layers));
  candidate.chunks = chunks;
  candidate.checkpoint = checkpoint;
  candidate.batch = batch;
  return candidate;
}

namespace {

/// One shape's runs (schedule, stages per device and checkpoint mode): a cell of every table
/// below, so that a shape timed at a slow moment is one cell among the shapes'.
struct ShapeRuns {
  ReferenceShape shape;
  std::vector<const ReferenceRun*> runs;
  WholeModelSamples samples;
  LossSteps lossSteps;  ///< its runs' loss ops at the speed of 1, once the device speeds are fitted
};

/// By micro-batch size, one log(the shape's median measured time over the profiled time) per
/// shape timed at it.
using LogCells = std::map<std::int64_t, std::vector<double>>;

void addCell(LogCells& cells, std::int64_t size, const std::vector<double>& ratios) {
  if (ratios.empty()) return;
  const double ratio = median(ratios);
  if (ratio > 0.0) cells[size].push_back(std::log(ratio));
}

void addCell(LogCells& cells, std::int64_t size, const std::vector<TimeNs>& measuredNs, TimeNs profiledNs) {
  const TimeNs ns = medianNs(measuredNs);
  if (ns > 0 && profiledNs > 0)
    cells[size].push_back(std::log(static_cast<double>(ns) / static_cast<double>(profiledNs)));
}

/// Each size's scale (calibration_fit.h): its median over the shapes' cells, drawn toward the
/// median over the sizes by the share of its deviation the shapes' disagreement leaves it,
/// clamped to [0.25, maxScale].
std::map<std::int64_t, double> sizeScales(const LogCells& cells, double maxScale) {
  std::map<std::int64_t, double> logScales;
  std::vector<double> sizeMedians;
  for (const auto& [size, logRatios] : cells) sizeMedians.push_back(logScales[size] = median(logRatios));
  if (logScales.size() >= 2) {
    const double common = median(sizeMedians);
    // The shapes' disagreement at one size: the cells' pooled variance about their size's mean.
    const double noise = pooledVariance(cells).value_or(kCellSdWithoutSpread * kCellSdWithoutSpread);
    const double share = shrinkageShare(kSizeScaleSd, noise);
    for (auto& [size, logScale] : logScales) logScale = common + share * (logScale - common);
  }
  std::map<std::int64_t, double> scales;
  for (const auto& [size, logScale] : logScales) scales[size] = std::clamp(std::exp(logScale), 0.25, maxScale);
  return scales;
}

/// The forward and backward scale of every size any shape timed (calibration_fit.h).
void fitLayerScales(const std::vector<ShapeRuns>& shapes, Calibration& calibration) {
  LogCells forward;
  LogCells backward;
  for (const ShapeRuns& shape : shapes) {
    for (const auto& [size, ratios] : shape.samples.forwardRatios) addCell(forward, size, ratios);
    for (const auto& [size, ratios] : shape.samples.backwardRatios) addCell(backward, size, ratios);
  }
  for (const ShapeRuns& shape : shapes) {
    for (const auto& [size, ratios] : shape.samples.forwardRatios) calibration.scales.try_emplace(size);
  }
  for (const auto& [size, scale] : sizeScales(forward, kMaxLayerScale)) calibration.scales[size].forward = scale;
  for (const auto& [size, scale] : sizeScales(backward, kMaxLayerScale)) calibration.scales[size].backward = scale;
}

/// The scale of one kind of cold op (calibration_fit.h, stageSwitch and firstInStep): per shape
/// and size, the median over its ops of that kind of their measured over profiled time, each
/// over the median of its op kind's warm ops (forward, backward, ...) -- for an op after another
/// stage's, those of the shapes of one stage per device, whose devices never switch (the run's
/// own others where none timed that kind and size); one scale for every size, exp(the median
/// over those cells' logs). 1 without such cells. Fitting the stage switch leaves a step's first
/// ops out (not fitted yet); fitting those divides a span by the stage switch's scale where it
/// followed another stage's op.
constexpr std::size_t kMinColdSpans = 5;

enum class Coldness { AfterSwitch, FirstInStep };

/// "forward" of "forward(0,1)".
std::string kindOf(const TraceEvent& op) { return op.name.substr(0, op.name.find('(')); }

/// An op's span as it would have run warm (asWarmOp) over its stage's profiled time; 0 where
/// either is unknown.
double warmRatio(const Profile& profile, const ReferenceRun& run, const TraceEvent& op, std::int64_t size,
                 const ColdOps& cold, const ColdScales& known) {
  const TimeNs profiledNs = stageProfiledNs(profile, run, op, size);
  const TimeNs measuredNs = asWarmOp(op, cold, known);
  if (profiledNs <= 0 || measuredNs <= 0) return 0.0;
  return static_cast<double>(measuredNs) / static_cast<double>(profiledNs);
}

/// size -> op kind -> ratios (warmRatio).
using KindRatios = std::map<std::int64_t, std::map<std::string, std::vector<double>>>;

/// The ratios of the ops of the references of one stage per device, a step's first ops left
/// out: what an op runs at where its device holds one stage and never switches.
KindRatios oneStageRatios(const Profile& profile, const std::vector<ShapeRuns>& shapes,
                          const std::map<const ReferenceRun*, ColdOps>& cold, const ColdScales& known) {
  KindRatios ratios;
  for (const ShapeRuns& shape : shapes) {
    for (const ReferenceRun* run : shape.runs) {
      if (run->candidate.stagesPerDevice != 1) continue;
      const ColdOps& own = cold.at(run);
      forEachTimedOp(*run, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
        if (own.firstInStep.count(op.name) > 0) return;
        const double ratio = warmRatio(profile, *run, op, size, own, known);
        if (ratio > 0.0) ratios[size][kindOf(op)].push_back(ratio);
      });
    }
  }
  return ratios;
}

/// What a cold op of `kind` at `size` is set against: `preferred`'s ratios where it has
/// kMinColdSpans of them, else `fallback`.
const std::vector<double>& baselineRatios(const KindRatios& preferred, std::int64_t size, const std::string& kind,
                                          const std::vector<double>& fallback) {
  const auto sized = preferred.find(size);
  if (sized == preferred.end()) return fallback;
  const auto kinds = sized->second.find(kind);
  return kinds != sized->second.end() && kinds->second.size() >= kMinColdSpans ? kinds->second : fallback;
}

double coldOpScale(const Profile& profile, const std::vector<ShapeRuns>& shapes,
                   const std::map<const ReferenceRun*, ColdOps>& cold, Coldness coldness, const ColdScales& known) {
  const KindRatios oneStage =
      coldness == Coldness::AfterSwitch ? oneStageRatios(profile, shapes, cold, known) : KindRatios{};
  std::vector<double> cells;  // log(median relative ratio), one per shape and size
  for (const ShapeRuns& shape : shapes) {
    // size -> op kind -> (the cold ones, the others)
    std::map<std::int64_t, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>> ratios;
    for (const ReferenceRun* run : shape.runs) {
      const ColdOps& own = cold.at(run);
      const std::set<std::string>& fitted = coldness == Coldness::AfterSwitch ? own.afterSwitch : own.firstInStep;
      if (fitted.empty()) continue;
      forEachTimedOp(*run, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
        if (coldness == Coldness::AfterSwitch && own.firstInStep.count(op.name) > 0) return;
        const double ratio = warmRatio(profile, *run, op, size, own, known);
        if (ratio <= 0.0) return;
        auto& [coldOnes, others] = ratios[size][kindOf(op)];
        (fitted.count(op.name) > 0 ? coldOnes : others).push_back(ratio);
      });
    }
    for (const auto& [size, byKind] : ratios) {
      std::vector<double> relative;
      for (const auto& [kind, pair] : byKind) {
        const std::vector<double>& baseline = baselineRatios(oneStage, size, kind, pair.second);
        if (baseline.size() < kMinColdSpans) continue;
        const double baselineMedian = median(baseline);
        for (const double ratio : pair.first) relative.push_back(ratio / baselineMedian);
      }
      if (relative.size() >= kMinColdSpans) cells.push_back(std::log(median(relative)));
    }
  }
  return cells.empty() ? 1.0 : std::exp(median(cells));
}

/// Each shape's loss cold start from its own runs, and the median over the shapes for any
/// other (calibration_fit.h).
void fitLossColdStarts(const std::vector<ShapeRuns>& shapes, Calibration& calibration) {
  std::vector<TimeNs> shapesNs;
  for (const ShapeRuns& shape : shapes) {
    const std::optional<TimeNs> ns = lossColdStartNs(shape.lossSteps);
    if (!ns) continue;
    calibration.lossColdStartByShape[shape.shape] = *ns;
    shapesNs.push_back(*ns);
  }
  if (!shapesNs.empty()) calibration.lossColdStartNs = medianNs(shapesNs);
}

/// The loss scale of every size of the scales, after the device speeds and the loss's cold
/// start: each shape's loss ops (each at its device's speed, a later call with the cold start
/// added) against the profiled loss, drawn toward the other sizes alike.
void fitLossScales(const Profile& profile, const std::vector<ShapeRuns>& shapes, Calibration& calibration) {
  LogCells cells;
  for (const ShapeRuns& shape : shapes) {
    const TimeNs coldStartNs = calibration.lossColdStartNsFor(shape.shape).value_or(0);
    for (const auto& [size, ns] : lossNsAsFirstCalls(shape.lossSteps, coldStartNs)) {
      if (calibration.scales.count(size) > 0) addCell(cells, size, ns, profile.loss.costAt(size).forwardNs);
    }
  }
  for (const auto& [size, scale] : sizeScales(cells, kMaxLossScale)) calibration.scales.at(size).loss = scale;
}

/// The step overhead per chunk count (calibration_fit.h) with the scales, speeds and message
/// latency applied; appends each shape's and chunk count's reference to `references`.
void fitOverheads(const Profile& profile, const Cluster& cluster, const std::vector<ShapeRuns>& shapes,
                  Calibration& calibration) {
  const Cluster calibratedDevices = calibratedCluster(cluster, calibration);
  std::map<std::int64_t, std::vector<TimeNs>> unexplainedByChunks;
  for (const ShapeRuns& shape : shapes) {
    const Profile calibrated = calibratedProfile(profile, calibration.forShape(shape.shape));
    // Runs of one chunk count (several rounds of the same reference) pool their steps.
    std::map<std::int64_t, std::vector<TimeNs>> stepNs;
    std::map<std::int64_t, Candidate> candidates;
    for (const ReferenceRun* run : shape.runs) {
      for (const TraceEvent* step : stepSpans(run->trace)) stepNs[run->candidate.chunks].push_back(step->durationNs);
      candidates[run->candidate.chunks] = run->candidate;
    }
    for (const auto& [chunks, pooledNs] : stepNs) {
      const Candidate& reference = candidates.at(chunks);
      const TimeNs predictedNs = simulate(calibrated, calibratedDevices, reference).prediction.iterationNs;
      const TimeNs medianStepNs = medianNs(pooledNs);
      unexplainedByChunks[chunks].push_back(medianStepNs - predictedNs);
      calibration.provenance.references.push_back({ReferenceShape::of(reference), chunks, reference.balance,
                                                   static_cast<std::int64_t>(pooledNs.size()), medianStepNs});
    }
  }
  std::map<std::int64_t, TimeNs> unexplainedNs;
  for (const auto& [chunks, values] : unexplainedByChunks) unexplainedNs[chunks] = medianNs(values);
  calibration.stepOverheadNs = overheadLine(unexplainedNs);
}

}  // namespace

Calibration calibrationFromRuns(const Profile& profile, const Cluster& cluster, const std::vector<ReferenceRun>& runs) {
  // By shape, in the order gpipe < 1f1b < interleaved (then by stages per device), then by mode.
  using ShapeKey = std::tuple<ScheduleKind, std::int64_t, Checkpoint>;
  std::map<ShapeKey, ShapeRuns> byShape;
  std::vector<const ReferenceRun*> allRuns;
  std::map<const ReferenceRun*, ColdOps> cold;
  for (const ReferenceRun& run : runs) {
    ShapeRuns& shape = byShape[{run.candidate.schedule, run.candidate.stagesPerDevice, run.candidate.checkpoint}];
    shape.shape = ReferenceShape::of(run.candidate);
    shape.runs.push_back(&run);
    allRuns.push_back(&run);
    cold[&run] = coldOpsOf(profile, run.candidate);
  }
  Calibration calibration;
  if (runs.empty()) return calibration;
  std::vector<ShapeRuns> shapes;
  for (auto& [key, shape] : byShape) shapes.push_back(std::move(shape));
  calibration.messageLatencyNs = messageLatencyNs(cluster, runs);
  calibration.wakeLatencyNs = wakeLatencyNs(profile, cluster, runs);
  ColdScales coldScales;
  coldScales.afterSwitch = coldOpScale(profile, shapes, cold, Coldness::AfterSwitch, coldScales);
  coldScales.firstInStep = coldOpScale(profile, shapes, cold, Coldness::FirstInStep, coldScales);
  for (ShapeRuns& shape : shapes) {
    for (const ReferenceRun* run : shape.runs) shape.samples.add(profile, *run, cold.at(run), coldScales);
  }
  fitLayerScales(shapes, calibration);
  for (auto& [size, scale] : calibration.scales) {
    scale.afterStageSwitch = coldScales.afterSwitch;
    scale.firstInStep = coldScales.firstInStep;
  }
  calibration.deviceSpeeds = deviceSpeeds(calibratedProfile(profile, calibration), allRuns, cold, coldScales);
  for (ShapeRuns& shape : shapes) shape.lossSteps = lossCallsBySteps(shape.runs, calibration.deviceSpeeds);
  if (profile.loss.measured()) fitLossColdStarts(shapes, calibration);
  fitLossScales(profile, shapes, calibration);
  fitOverheads(profile, cluster, shapes, calibration);
  return calibration;
}

}  // namespace pipeprof
