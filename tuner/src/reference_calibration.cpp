// Measuring a calibration: reference pipelines timed in interleaved rounds, then fitted.
#include <pipeprof/tuner/reference_calibration.h>

#include <pipeprof/core/measuring_conditions.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_options.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/tuner/environment_info.h>

#include <algorithm>
#include <chrono>
#include <set>

namespace pipeprof::tuner {

PipelineShape gpipeReferenceShape() {
  PipelineShape shape;
  shape.checkpoint = Checkpoint::Never;
  return shape;
}

std::vector<PipelineShape> referenceShapes(const std::vector<ScheduleKind>& kinds,
                                           const std::vector<std::int64_t>& stagesPerDevice,
                                           const std::vector<Checkpoint>& modes, std::int64_t devices,
                                           std::int64_t layers) {
  std::vector<std::pair<ScheduleKind, std::int64_t>> schedules;
  for (const ScheduleKind kind : std::set<ScheduleKind>(kinds.begin(), kinds.end())) {
    for (const std::int64_t v : stagesPerDeviceChoices(kind, stagesPerDevice)) {
      if (v == 1 || devices * v <= layers) schedules.emplace_back(kind, v);
    }
  }
  std::vector<PipelineShape> shapes{gpipeReferenceShape()};
  for (const auto& [kind, v] : schedules) {
    for (const Checkpoint mode : std::set<Checkpoint>(modes.begin(), modes.end())) {
      if (kind == ScheduleKind::GPipe && mode == Checkpoint::Never) continue;
      PipelineShape shape;
      shape.schedule = kind;
      shape.stagesPerDevice = v;
      shape.checkpoint = mode;
      shapes.push_back(shape);
    }
  }
  return shapes;
}

namespace {

bool sameReferenceShape(const PipelineShape& a, const PipelineShape& b) {
  return a.schedule == b.schedule && a.stagesPerDevice == b.stagesPerDevice && a.checkpoint == b.checkpoint;
}

/// A plan from each shape's references (each list largest chunk count first; the first list is
/// GPipe's without checkpoints, possibly empty), ending with `probe`: see referencePlan.
std::vector<Candidate> orderedPlan(const std::vector<std::vector<Candidate>>& byShape, const Candidate& probe) {
  std::vector<Candidate> plan;
  if (byShape.empty()) return plan;
  // GPipe at its largest chunk count; every other shape at its largest, with GPipe's other
  // chunk counts spread among them; GPipe at its largest again, so that the shapes are compared
  // with GPipe timed over the same seconds (the first references of a sweep ran 5-25% faster
  // than the ones a second later).
  const std::vector<Candidate>& gpipe = byShape.front();
  std::vector<Candidate> others;
  std::size_t longest = gpipe.size();
  for (std::size_t k = 1; k < byShape.size(); ++k) {
    if (!byShape[k].empty()) others.push_back(byShape[k].front());
    longest = std::max(longest, byShape[k].size());
  }
  if (!gpipe.empty()) plan.push_back(gpipe.front());
  const std::size_t spread = gpipe.empty() ? 0 : gpipe.size() - 1;  // GPipe's other chunk counts
  std::size_t placed = 0;
  for (std::size_t k = 0; k <= others.size(); ++k) {
    // GPipe's j-th other chunk count goes before other shape (j + 1) * n / (spread + 1).
    while (placed < spread && (placed + 1) * others.size() / (spread + 1) <= k) plan.push_back(gpipe[1 + placed++]);
    if (k < others.size()) plan.push_back(others[k]);
  }
  if (!gpipe.empty() && !others.empty()) plan.push_back(gpipe.front());
  for (std::size_t index = 1; index < longest; ++index) {  // then the rest, largest first
    for (std::size_t k = 1; k < byShape.size(); ++k) {
      if (index < byShape[k].size()) plan.push_back(byShape[k][index]);
    }
  }
  // The machine's speed sampled at the end of the round too (reference_speed.h).
  const bool endsWithProbe =
      !plan.empty() && plan.back().chunks == probe.chunks && sameReferenceShape(plan.back(), probe);
  if (!plan.empty() && !endsWithProbe) plan.push_back(probe);
  return plan;
}

/// The reference of `shape` at each of `chunks` (largest first) that its schedule can run.
std::vector<Candidate> runnableReferences(std::int64_t layers, std::int64_t batch, std::int64_t devices,
                                          const PipelineShape& shape, const std::set<std::int64_t>& chunks) {
  std::vector<Candidate> runnable;
  for (auto m = chunks.rbegin(); m != chunks.rend(); ++m) {
    if (*m < 1 || *m > batch) continue;
    Candidate reference =
        referenceCandidate(layers, devices, *m, batch, shape.schedule, shape.stagesPerDevice, shape.checkpoint);
    if (reference.shapeError(microBatching(batch, *m).count).empty()) runnable.push_back(std::move(reference));
  }
  return runnable;
}

}  // namespace

std::vector<Candidate> referencePlan(std::int64_t layers, std::int64_t batch, const std::vector<std::int64_t>& chunks,
                                     std::int64_t devices, const std::vector<PipelineShape>& shapes) {
  std::vector<std::vector<Candidate>> byShape;
  const std::set<std::int64_t> counts(chunks.begin(), chunks.end());
  for (const PipelineShape& shape : shapes)
    byShape.push_back(runnableReferences(layers, batch, devices, shape, counts));
  if (byShape.empty() || byShape.front().empty()) return {};
  return orderedPlan(byShape, byShape.front().front());
}

std::vector<Candidate> referencePlanFor(std::int64_t layers, std::int64_t batch, std::int64_t devices,
                                        const std::vector<std::int64_t>& gpipeChunks,
                                        const std::vector<Candidate>& candidates, const std::vector<Candidate>& timed) {
  auto isTimed = [&](const PipelineShape& shape, std::int64_t m) {
    return std::any_of(timed.begin(), timed.end(), [&](const Candidate& reference) {
      return reference.chunks == m && sameReferenceShape(reference, shape);
    });
  };
  std::vector<PipelineShape> shapes{gpipeReferenceShape()};
  std::vector<std::set<std::int64_t>> wanted{{}};
  for (const std::int64_t m : gpipeChunks) {
    if (!isTimed(shapes.front(), m)) wanted.front().insert(m);
  }
  for (const Candidate& candidate : candidates) {
    if (candidate.order || isTimed(candidate, candidate.chunks)) continue;
    auto same = std::find_if(shapes.begin(), shapes.end(),
                             [&](const PipelineShape& shape) { return sameReferenceShape(shape, candidate); });
    if (same == shapes.end()) {
      PipelineShape shape;
      shape.schedule = candidate.schedule;
      shape.stagesPerDevice = candidate.stagesPerDevice;
      shape.checkpoint = candidate.checkpoint;
      shapes.push_back(shape);
      wanted.emplace_back();
      same = shapes.end() - 1;
    }
    wanted[static_cast<std::size_t>(same - shapes.begin())].insert(candidate.chunks);
  }
  const std::vector<Candidate> gpipe = runnableReferences(
      layers, batch, devices, gpipeReferenceShape(), std::set<std::int64_t>(gpipeChunks.begin(), gpipeChunks.end()));
  if (gpipe.empty()) return {};
  std::vector<std::vector<Candidate>> byShape;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    byShape.push_back(runnableReferences(layers, batch, devices, shapes[k], wanted[k]));
  }
  return orderedPlan(byShape, gpipe.front());
}

std::int64_t timeReferences(CandidateMeasurer& measurer, const std::vector<Candidate>& plan,
                            const CalibrationRounds& rounds, std::vector<ReferenceRun>& runs, const StopToken& stop) {
  using Clock = std::chrono::steady_clock;
  auto secondsSince = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  MeasureRequest request;
  request.warmupSteps = rounds.warmupSteps;
  request.steps = rounds.steps;
  request.traced = true;
  request.stop = stop;
  // A reference is expected to take what it took last round, or what the references so far
  // took on average; the next one starts only when it is expected to end within the budget.
  std::vector<double> lastSeconds(plan.size(), -1.0);
  double measuredSeconds = 0.0;
  std::size_t measuredCount = 0;
  const auto start = Clock::now();
  std::int64_t round = 0;
  for (bool budgetLeft = !plan.empty(); budgetLeft && (rounds.maxRounds <= 0 || round < rounds.maxRounds);) {
    ++round;
    const auto roundStart = Clock::now();
    std::size_t measuredThisRound = 0;
    for (std::size_t k = 0; k < plan.size(); ++k) {
      const double expected = lastSeconds[k] >= 0.0 ? lastSeconds[k]
                              : measuredCount > 0   ? measuredSeconds / static_cast<double>(measuredCount)
                                                    : rounds.expectedSeconds;
      if ((measuredCount > 0 || expected > 0.0) && secondsSince(start) + expected > rounds.budgetSeconds) {
        budgetLeft = false;
        break;
      }
      if (stop.stopRequested()) throw TrainingStopped("stopped between the calibration's reference pipelines");
      const auto referenceStart = Clock::now();
      auto kept = referenceStart;  // when the run that is kept began
      ReferenceRun run;
      run.candidate = plan[k];
      MeasuredRun measured = measurer.measure(run.candidate, request);
      const Measurement& timed = measured.measurement;
      if (contendedForCpus(cpuWaitShare(timed.stepNs, timed.stepCpuWaitNs)) &&
          secondsSince(start) + secondsSince(referenceStart) <= rounds.budgetSeconds) {
        // Another process took the CPUs while it ran: time it again, as the measuring rounds
        // do, and keep the second run (one round's reference is its shape's only sample).
        if (rounds.onContended) rounds.onContended(run.candidate);
        kept = Clock::now();
        measured = measurer.measure(run.candidate, request);
      }
      run.trace = std::move(measured.trace);
      run.atS = rounds.startedS + std::chrono::duration<double>(kept - start).count() + secondsSince(kept) / 2.0;
      runs.push_back(std::move(run));
      lastSeconds[k] = secondsSince(referenceStart);
      measuredSeconds += lastSeconds[k];
      ++measuredCount;
      ++measuredThisRound;
    }
    if (measuredThisRound == 0) {
      --round;
      break;
    }
    if (rounds.onRound) rounds.onRound(round, measuredThisRound, plan.size(), secondsSince(roundStart));
  }
  return round;
}

Calibration measureCalibration(CandidateMeasurer& measurer, const Profile& profile, const Cluster& cluster,
                               std::int64_t batch, const std::vector<std::int64_t>& chunks, std::int64_t devices,
                               const CalibrationRounds& rounds, const std::vector<PipelineShape>& shapes,
                               const StopToken& stop) {
  const std::vector<Candidate> plan = referencePlan(profile.layerCount(), batch, chunks, devices, shapes);
  std::vector<ReferenceRun> runs;
  const std::int64_t round = timeReferences(measurer, plan, rounds, runs, stop);
  Calibration calibration = calibrationFromRuns(profile, cluster, runs);
  calibration.provenance.rounds = round;
  return calibration;
}

void stampProvenance(Calibration& calibration, const ModelSpec& model, std::int64_t batch,
                     const std::vector<DeviceDesc>& devices) {
  CalibrationProvenance& provenance = calibration.provenance;
  provenance.model = model.name;
  provenance.batch = batch;
  provenance.devices.clear();
  for (const DeviceDesc& device : devices) provenance.devices.push_back(device.str());
  provenance.threads = model.threads;
  provenance.torchVersion = torchVersion();
  provenance.pipeprofRevision = pipeprofRevision();
  provenance.createdAt = utcNowIso8601();
}

Cluster sweepCluster(const std::vector<DeviceDesc>& devices, std::optional<Bytes> memoryBytes,
                     const std::optional<Link>& rankLink) {
  Cluster cluster;
  const auto n = static_cast<std::int64_t>(devices.size());
  for (std::int64_t j = 0; j < n; ++j) {
    DeviceSpec spec;
    spec.name = devices[static_cast<std::size_t>(j)].typeName() + ":" + std::to_string(j);
    spec.memoryBytes = memoryBytes;
    cluster.devices.push_back(spec);
  }
  cluster.links.assign(static_cast<std::size_t>(n), std::vector<Link>(static_cast<std::size_t>(n)));
  if (rankLink) {
    cluster.processPerDevice = true;
    for (std::int64_t a = 0; a < n; ++a) {
      for (std::int64_t b = 0; b < n; ++b) {
        if (a != b) cluster.links[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = *rankLink;
      }
    }
  }
  return cluster;
}

}  // namespace pipeprof::tuner
