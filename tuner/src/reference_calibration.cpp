// Measuring a calibration: reference pipelines timed in interleaved rounds, then fitted.
#include <pipeprof/tuner/reference_calibration.h>

#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/tuner/environment_info.h>

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

Calibration measureCalibration(CandidateMeasurer& measurer, const Profile& profile, const Cluster& cluster,
                               std::int64_t batch, const std::vector<std::int64_t>& chunks, std::int64_t devices,
                               const CalibrationRounds& rounds, const std::vector<PipelineShape>& shapes,
                               const StopToken& stop) {
  // The references every round trains: each shape's chunk counts that its schedule can run.
  std::vector<Candidate> references;
  for (const PipelineShape& shape : shapes) {
    for (const std::int64_t m : chunks) {
      if (m < 1 || m > batch) continue;
      Candidate reference = referenceCandidate(profile.layerCount(), devices, m, batch, shape.schedule,
                                               shape.stagesPerDevice, shape.checkpoint);
      if (!reference.shapeError(microBatching(batch, m).count).empty()) continue;
      references.push_back(std::move(reference));
    }
  }
  std::vector<ReferenceRun> runs;
  const auto start = std::chrono::steady_clock::now();
  auto budgetLeft = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < rounds.budgetSeconds;
  };
  MeasureRequest request;
  request.warmupSteps = rounds.warmupSteps;
  request.steps = rounds.steps;
  request.traced = true;
  request.stop = stop;
  std::int64_t round = 0;
  for (; round < rounds.minRounds || budgetLeft(); ++round) {
    const auto roundStart = std::chrono::steady_clock::now();
    for (const Candidate& reference : references) {
      ReferenceRun run;
      run.candidate = reference;
      run.trace = measurer.measure(run.candidate, request).trace;
      runs.push_back(std::move(run));
    }
    if (rounds.onRound) {
      rounds.onRound(round + 1, references.size(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - roundStart).count());
    }
  }
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
