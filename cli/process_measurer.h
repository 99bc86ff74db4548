// The sweep's multi-process measurer: each candidate trained by one process per pipeline device.
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/tuner/candidate_measurer.h>

#include <chrono>
#include <vector>

namespace pipeprof::cli {

/// Runs every candidate as `pipeprof run --procs p` does (launchRun): p ranks of this
/// executable on this host over c10d, each building the model from `model` and keeping its
/// stages; the measurement's steps are the slowest rank's, its peaks one per rank, the trace
/// every rank's on rank 0's clock. A stop request stops every rank at once (TrainingStopped).
class ProcessMeasurer : public tuner::CandidateMeasurer {
 public:
  ProcessMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, std::chrono::milliseconds timeout);
  tuner::MeasuredRun measure(const Candidate& candidate, const tuner::MeasureRequest& request) override;

 private:
  ModelSpec model_;
  std::vector<DeviceDesc> devices_;
  std::chrono::milliseconds timeout_;
};

}  // namespace pipeprof::cli
