// The sweep's calibration runs: reference pipelines timed before the candidates (cli/chained_calibration.h)
// and again in every measuring round (cli/calibration_drift.h).
#pragma once

#include "chained_calibration.h"
#include "model_options.h"
#include "training_loop.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace pipeprof::cli {

/// The layers of a `layers`-layer model split as evenly as possible over `partitions`
/// partitions (the first ones take one more); the reference runs' balance.
std::vector<std::int64_t> evenBalance(std::int64_t layers, std::int64_t partitions);

/// The reference pipeline of chunk count `chunks`: every device (at most one per layer), an
/// even balance, `never`.
Candidate referenceCandidate(std::int64_t layers, std::int64_t devices, std::int64_t chunks, std::int64_t batch);

/// Trains `reference` on a fresh model (partition j on devices[j]): `warmupSteps` untimed
/// steps, then `steps` timed ones, traced when `traced`. Throws what the training loop throws.
TrainingResult trainReference(const ModelFlags& flags, const Candidate& reference,
                              const std::vector<torch::Device>& devices, std::int64_t warmupSteps, std::int64_t steps,
                              bool traced, std::function<bool()> shouldStop);

/// How long the reference runs go on: rounds until `budgetSeconds` have passed, and at least
/// `minRounds` (a round trains each reference once, `warmupSteps` + `steps` steps). The sweep
/// warms the references up as it warms the candidates up: a fresh Pipe's first 2-3 steps on
/// this machine run 10-100% slower than the ones after.
struct CalibrationRounds {
  double budgetSeconds = 8.0;
  std::int64_t minRounds = 3;
  std::int64_t warmupSteps = 1;
  std::int64_t steps = 4;
};

/// Trains one reference pipeline per chunk count in `chunks` (every device in `devices`, an
/// even balance, `never`, traced) in interleaved rounds, and derives the calibration from them
/// (chainedCalibrationFromRuns). More rounds spread the reference steps over a longer time, so
/// that a slow spell of a shared machine weighs on the calibration as it will on the measured
/// candidates. Throws what the training loop throws.
ChainedCalibration measureChainedCalibration(const ModelFlags& flags, const Profile& profile, const Cluster& cluster,
                                             std::int64_t batch, const std::vector<std::int64_t>& chunks,
                                             const std::vector<torch::Device>& devices,
                                             const CalibrationRounds& rounds);

/// Adds the calibrated overhead to a prediction: iterationNs += overheadNs, samplesPerS
/// recomputed for `batch`.
void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch);

/// Appends the calibrated step overhead as a host span ("calibration (step overhead)", phase
/// optimizer) after the last event of a predicted trace, so the twin's length matches the
/// predicted step time.
void appendStepOverheadSpan(Trace& trace, TimeNs overheadNs);

}  // namespace pipeprof::cli
