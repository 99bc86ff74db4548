// Fitting a calibration to traced reference pipelines: scales per micro-batch size, device speeds, step overheads.
#include <pipeprof/simulator/calibration_fit.h>

#include <pipeprof/core/statistics.h>
#include <pipeprof/simulator/simulator.h>

#include "cost_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <numeric>
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

std::vector<const TraceEvent*> stepSpans(const Trace& trace) {
  std::vector<const TraceEvent*> steps;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && event.phase == Phase::Step) steps.push_back(&event);
  }
  return steps;
}

/// Calls visit(op, size, step) for every span of a pipeline op in one of `phases` inside a timed
/// step (warm-up ops lie outside every step span), with its micro-batch's size in samples and
/// the index of its step.
template <typename Visit>
void forEachTimedSpan(const ReferenceRun& run, std::initializer_list<Phase> phases, Visit visit) {
  const MicroBatching split = microBatching(run.candidate.batch, run.candidate.chunks);
  const std::vector<const TraceEvent*> steps = stepSpans(run.trace);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (const TraceEvent& op : run.trace.events) {
      if (op.kind != EventKind::Span || op.microBatch < 0 || op.partition < 0) continue;
      if (std::find(phases.begin(), phases.end(), op.phase) == phases.end()) continue;
      if (op.startNs < steps[s]->startNs || op.startNs >= steps[s]->endNs()) continue;
      visit(op, op.microBatch + 1 < split.count ? split.chunkSize : split.lastSize, s);
    }
  }
}

/// The same for the forward and backward spans: the layers' time.
template <typename Visit>
void forEachTimedOp(const ReferenceRun& run, Visit visit) {
  forEachTimedSpan(run, {Phase::Forward, Phase::Backward}, visit);
}

/// Per micro-batch size, the whole model's forward and backward time of every micro-batch of
/// every timed step: the sum of its spans over the stages.
struct WholeModelSamples {
  std::map<std::int64_t, std::vector<TimeNs>> forwardNs;
  std::map<std::int64_t, std::vector<TimeNs>> backwardNs;

  void add(const ReferenceRun& run) {
    // (step, micro-batch, phase) -> (size, time summed over the stages)
    std::map<std::tuple<std::size_t, std::int64_t, Phase>, std::pair<std::int64_t, TimeNs>> sums;
    forEachTimedOp(run, [&](const TraceEvent& op, std::int64_t size, std::size_t step) {
      auto& [sumSize, sumNs] = sums[{step, op.microBatch, op.phase}];
      sumSize = size;
      sumNs += op.durationNs;
    });
    for (const auto& [key, sum] : sums) {
      (std::get<2>(key) == Phase::Forward ? forwardNs : backwardNs)[sum.first].push_back(sum.second);
    }
  }
};

/// What the profile predicts of a layer for a measured forward or backward span: a backward's
/// input or weight half (zero bubble) by the span's name, as the simulator splits it
/// (sim::stageSplitTimes), else the whole pass.
TimeNs profiledSpanNs(const CostSample& cost, const TraceEvent& op) {
  if (op.phase == Phase::Forward) return cost.forwardNs;
  if (!cost.backwardSplit) return cost.backwardNs;
  const sim::SplitTimes times =
      sim::stageSplitTimes(op.partition, cost.backwardSplit->inputNs, cost.backwardSplit->weightNs, cost.backwardNs);
  if (op.name.rfind(opKindName(OpKind::BackwardInput) + "(", 0) == 0) return times.inputNs;
  if (op.name.rfind(opKindName(OpKind::BackwardWeight) + "(", 0) == 0) return times.weightNs;
  return cost.backwardNs;
}

/// Per device d: the calibrated profile's forward + backward time of the layers of its stages
/// over what their spans measured, over every timed step of every run (clamped to [0.5, 2]).
/// Stage j of a run runs on its candidate's deviceOfStage(j).
std::vector<double> deviceSpeeds(const Profile& calibrated, const std::vector<const ReferenceRun*>& runs) {
  std::vector<TimeNs> predictedNs;
  std::vector<TimeNs> measuredNs;
  for (const ReferenceRun* run : runs) {
    const std::vector<std::int64_t>& balance = run->candidate.balance;
    const auto devices = static_cast<std::size_t>(std::max<std::int64_t>(1, run->candidate.pipelineDevices()));
    predictedNs.resize(std::max(predictedNs.size(), devices), 0);
    measuredNs.resize(predictedNs.size(), 0);
    forEachTimedOp(*run, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
      const auto j = static_cast<std::size_t>(op.partition);
      if (j >= balance.size()) return;
      const auto d = static_cast<std::size_t>(run->candidate.deviceOfStage(static_cast<std::int64_t>(j)));
      const auto first =
          std::accumulate(balance.begin(), balance.begin() + static_cast<std::ptrdiff_t>(j), std::int64_t{0});
      for (std::int64_t layer = first; layer < first + balance[j]; ++layer) {
        const CostSample cost = calibrated.layers[static_cast<std::size_t>(layer)].costAt(size);
        predictedNs[d] += profiledSpanNs(cost, op);
      }
      measuredNs[d] += op.durationNs;
    });
  }
  std::vector<double> speeds;
  for (std::size_t j = 0; j < predictedNs.size(); ++j) {
    const double ratio = predictedNs[j] > 0 && measuredNs[j] > 0
                             ? static_cast<double>(predictedNs[j]) / static_cast<double>(measuredNs[j])
                             : 1.0;
    speeds.push_back(std::clamp(ratio, 0.5, 2.0));
  }
  return speeds;
}

/// Per micro-batch size, every timed loss op of every run at the speed of 1 (its time times
/// the speed of the device it ran on: the simulator divides the loss's time by that speed).
std::map<std::int64_t, std::vector<TimeNs>> lossNsAtUnitSpeed(const std::vector<const ReferenceRun*>& runs,
                                                              const std::vector<double>& deviceSpeeds) {
  std::map<std::int64_t, std::vector<TimeNs>> lossNs;
  for (const ReferenceRun* run : runs) {
    forEachTimedSpan(*run, {Phase::Loss}, [&](const TraceEvent& op, std::int64_t size, std::size_t /*step*/) {
      const auto d = static_cast<std::size_t>(run->candidate.deviceOfStage(op.partition));
      const double speed = d < deviceSpeeds.size() ? deviceSpeeds[d] : 1.0;
      lossNs[size].push_back(static_cast<TimeNs>(std::llround(static_cast<double>(op.durationNs) * speed)));
    });
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

/// The whole model's profiled forward and backward time at micro-batch size `size`.
std::pair<TimeNs, TimeNs> profiledModelNs(const Profile& profile, std::int64_t size) {
  TimeNs forwardNs = 0;
  TimeNs backwardNs = 0;
  for (const LayerProfile& layer : profile.layers) {
    const CostSample cost = layer.costAt(size);
    forwardNs += cost.forwardNs;
    backwardNs += cost.backwardNs;
  }
  return {forwardNs, backwardNs};
}

/// log(measured / profiled) of a pass by shape (its index) and micro-batch size: the cells of a
/// two-way table, each from the median of the cell's samples.
using LogTable = std::map<std::size_t, std::map<std::int64_t, double>>;

void addCell(LogTable& table, std::size_t shape, std::int64_t size, const std::vector<TimeNs>& measuredNs,
             TimeNs profiledNs) {
  const TimeNs ns = medianNs(measuredNs);
  if (ns > 0 && profiledNs > 0)
    table[shape][size] = std::log(static_cast<double>(ns) / static_cast<double>(profiledNs));
}

/// Tukey's median polish: each cell ~ its shape's effect + its size's effect, each effect the
/// median of what the other leaves, swept until they settle. Returns the effects; a cell off by
/// itself (one reference timed in a slow spell) moves its shape's and its size's effect by
/// little.
struct PolishEffects {
  std::map<std::size_t, double> shapes;
  std::map<std::int64_t, double> sizes;
};

PolishEffects medianPolish(const LogTable& cells) {
  constexpr int kSweeps = 10;
  LogTable residuals = cells;
  PolishEffects effects;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    for (auto& [shape, row] : residuals) {
      std::vector<double> values;
      for (const auto& [size, value] : row) values.push_back(value);
      const double effect = median(values);
      effects.shapes[shape] += effect;
      for (auto& [size, value] : row) value -= effect;
    }
    std::map<std::int64_t, std::vector<double>> columns;
    for (const auto& [shape, row] : residuals) {
      for (const auto& [size, value] : row) columns[size].push_back(value);
    }
    for (auto& [size, values] : columns) {
      const double effect = median(values);
      effects.sizes[size] += effect;
      for (auto& [shape, row] : residuals) {
        if (auto cell = row.find(size); cell != row.end()) cell->second -= effect;
      }
    }
  }
  return effects;
}

/// The table fitted as a shape's effect plus a size's, at every size of the table for every
/// shape in it. The median polish runs over the complete rows (the shapes timed at every size
/// any shape was); a row with cells missing (a calibration whose budget measured that shape at
/// some chunk counts only) then gets its effect as the median of its cells less the sizes'
/// effects: the one measured cell of shape s at size p and GPipe's row g fill s's size m with
/// c(s, p) - c(g, p) + c(g, m). A table of one shape gives back its cells; with every row
/// complete this is the median polish of the whole table.
LogTable fitShapeBySize(const LogTable& cells) {
  std::set<std::int64_t> sizes;
  for (const auto& [shape, row] : cells) {
    for (const auto& [size, value] : row) sizes.insert(size);
  }
  LogTable complete;
  for (const auto& [shape, row] : cells) {
    if (row.size() == sizes.size()) complete[shape] = row;
  }
  const PolishEffects effects = medianPolish(complete.empty() ? cells : complete);
  LogTable fitted;
  for (const auto& [shape, row] : cells) {
    double shapeEffect = 0.0;
    if (auto polished = effects.shapes.find(shape); polished != effects.shapes.end()) {
      shapeEffect = polished->second;
    } else {
      std::vector<double> values;
      for (const auto& [size, value] : row) {
        if (auto sizeEffect = effects.sizes.find(size); sizeEffect != effects.sizes.end())
          values.push_back(value - sizeEffect->second);
      }
      if (values.empty()) {  // no size in common with the polished rows: its own cells
        fitted[shape] = row;
        continue;
      }
      shapeEffect = median(values);
    }
    for (const auto& [size, sizeEffect] : effects.sizes) fitted[shape][size] = shapeEffect + sizeEffect;
  }
  return fitted;
}

/// One shape's runs and its corrections as the fit fills them in.
struct ShapeFit {
  std::vector<const ReferenceRun*> runs;
  WholeModelSamples samples;
  Calibration calibration;  ///< its scales, speeds and overheads; the message latency
  /// By chunk count: the median step's time beyond the simulated step (fitOverheads).
  std::map<std::int64_t, TimeNs> unexplainedNs;
};

/// Every shape's forward and backward scales (calibration_fit.h): the log-ratio tables fitted
/// as a shape's effect times a size's (fitShapeBySize), one scale per size any shape timed (1.0
/// where a pass has no cell of that shape).
void fitLayerScales(const Profile& profile, std::vector<ShapeFit>& shapes) {
  LogTable forward;
  LogTable backward;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const WholeModelSamples& samples = shapes[k].samples;
    for (const auto& [size, forwardNs] : samples.forwardNs) {
      const auto [profiledForwardNs, profiledBackwardNs] = profiledModelNs(profile, size);
      addCell(forward, k, size, forwardNs, profiledForwardNs);
      if (auto backwardNs = samples.backwardNs.find(size); backwardNs != samples.backwardNs.end())
        addCell(backward, k, size, backwardNs->second, profiledBackwardNs);
    }
  }
  const LogTable forwardFit = fitShapeBySize(forward);
  const LogTable backwardFit = fitShapeBySize(backward);
  auto scaleAt = [](const LogTable& fit, std::size_t k, std::int64_t size) {
    const auto row = fit.find(k);
    if (row == fit.end()) return 1.0;
    const auto cell = row->second.find(size);
    return cell == row->second.end() ? 1.0 : std::clamp(std::exp(cell->second), 0.25, kMaxLayerScale);
  };
  std::set<std::int64_t> sizes;
  for (const ShapeFit& shape : shapes) {
    for (const auto& [size, forwardNs] : shape.samples.forwardNs) sizes.insert(size);
  }
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    for (const std::int64_t size : sizes) {
      MicroBatchScale& scale = shapes[k].calibration.scales[size];
      scale.forward = scaleAt(forwardFit, k, size);
      scale.backward = scaleAt(backwardFit, k, size);
    }
  }
}

/// Every shape's loss scale per size of its scales, after its device speeds: the loss ops' log
/// ratios (each op at its device's speed) to the profiled loss, fitted by fitShapeBySize.
void fitLossScales(const Profile& profile, std::vector<ShapeFit>& shapes) {
  LogTable table;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    for (const auto& [size, ns] : lossNsAtUnitSpeed(shapes[k].runs, shapes[k].calibration.deviceSpeeds)) {
      if (shapes[k].calibration.scales.count(size) == 0) continue;  // no layer timed at that size
      addCell(table, k, size, ns, profile.loss.costAt(size).forwardNs);
    }
  }
  for (const auto& [k, row] : fitShapeBySize(table)) {
    for (const auto& [size, value] : row) {
      if (auto scale = shapes[k].calibration.scales.find(size); scale != shapes[k].calibration.scales.end())
        scale->second.loss = std::clamp(std::exp(value), 0.25, kMaxLossScale);
    }
  }
}

/// A shape's step overheads (calibration_fit.h) with its scales, speeds and loss applied;
/// appends each chunk count's reference to `references`.
void fitOverheads(const Profile& profile, const Cluster& cluster, ShapeFit& shape,
                  std::vector<CalibrationReference>& references) {
  const Profile calibrated = calibratedProfile(profile, shape.calibration);
  const Cluster calibratedDevices = calibratedCluster(cluster, shape.calibration);
  // Runs of one chunk count (several rounds of the same reference) pool their steps.
  std::map<std::int64_t, std::vector<TimeNs>> stepNs;
  std::map<std::int64_t, Candidate> candidates;
  for (const ReferenceRun* run : shape.runs) {
    for (const TraceEvent* step : stepSpans(run->trace)) stepNs[run->candidate.chunks].push_back(step->durationNs);
    candidates[run->candidate.chunks] = run->candidate;
  }
  std::map<std::int64_t, TimeNs> unexplainedNs;
  for (const auto& [chunks, pooledNs] : stepNs) {
    const Candidate& reference = candidates.at(chunks);
    const TimeNs predictedNs = simulate(calibrated, calibratedDevices, reference).prediction.iterationNs;
    const TimeNs medianStepNs = medianNs(pooledNs);
    unexplainedNs[chunks] = medianStepNs - predictedNs;
    references.push_back({ReferenceShape::of(reference), chunks, reference.balance,
                          static_cast<std::int64_t>(pooledNs.size()), medianStepNs});
  }
  shape.calibration.stepOverheadNs = overheadLine(unexplainedNs);
  shape.unexplainedNs = std::move(unexplainedNs);
}

/// The step overhead of `shape` at the chunk counts `own` timed and it did not (a calibration
/// whose budget measured it at some chunk counts only): own's line moved by how far, on
/// average, shape's steps went beyond own's line at the chunk counts it timed; never negative.
void fillOverheads(ShapeFit& shape, const ShapeFit& own) {
  if (shape.unexplainedNs.empty()) return;
  double shiftNs = 0.0;
  for (const auto& [chunks, ns] : shape.unexplainedNs) {
    shiftNs += static_cast<double>(ns - own.calibration.stepOverheadNsFor(chunks));
  }
  shiftNs /= static_cast<double>(shape.unexplainedNs.size());
  for (const auto& [chunks, ns] : own.calibration.stepOverheadNs) {
    if (shape.unexplainedNs.count(chunks) > 0) continue;
    shape.calibration.stepOverheadNs[chunks] =
        std::max<TimeNs>(0, static_cast<TimeNs>(std::llround(static_cast<double>(ns) + shiftNs)));
  }
}

}  // namespace

Calibration calibrationFromRuns(const Profile& profile, const Cluster& cluster, const std::vector<ReferenceRun>& runs) {
  // By shape, in the order gpipe < 1f1b < interleaved (then by stages per device), then by mode.
  using ShapeKey = std::tuple<ScheduleKind, std::int64_t, Checkpoint>;
  std::map<ShapeKey, std::vector<const ReferenceRun*>> runsByShape;
  for (const ReferenceRun& run : runs) {
    runsByShape[{run.candidate.schedule, run.candidate.stagesPerDevice, run.candidate.checkpoint}].push_back(&run);
  }
  Calibration calibration;
  if (runsByShape.empty()) return calibration;
  calibration.messageLatencyNs = messageLatencyNs(cluster, runs);
  std::vector<ShapeKey> keys;
  std::vector<ShapeFit> shapes;
  for (const auto& [key, shapeRuns] : runsByShape) {
    keys.push_back(key);
    ShapeFit& shape = shapes.emplace_back();
    shape.runs = shapeRuns;
    for (const ReferenceRun* run : shapeRuns) shape.samples.add(*run);
    shape.calibration.messageLatencyNs = calibration.messageLatencyNs;
  }
  fitLayerScales(profile, shapes);
  for (ShapeFit& shape : shapes) {
    shape.calibration.deviceSpeeds = deviceSpeeds(calibratedProfile(profile, shape.calibration), shape.runs);
  }
  fitLossScales(profile, shapes);
  for (ShapeFit& shape : shapes) fitOverheads(profile, cluster, shape, calibration.provenance.references);

  const ShapeKey gpipe{ScheduleKind::GPipe, 1, Checkpoint::Never};
  const ShapeKey own = runsByShape.count(gpipe) > 0 ? gpipe : keys.front();
  const auto ownIndex = static_cast<std::size_t>(std::find(keys.begin(), keys.end(), own) - keys.begin());
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    if (k != ownIndex) fillOverheads(shapes[k], shapes[ownIndex]);
  }
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    ScheduleCorrections corrections = std::move(static_cast<ScheduleCorrections&>(shapes[k].calibration));
    if (keys[k] == own) static_cast<ScheduleCorrections&>(calibration) = corrections;
    if (keys[k] != gpipe)
      calibration.byShape[ReferenceShape::of(shapes[k].runs.front()->candidate)] = std::move(corrections);
  }
  return calibration;
}

}  // namespace pipeprof
