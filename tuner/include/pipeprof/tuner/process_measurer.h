// The sweep's multi-process measurer: each candidate trained by one process per pipeline device.
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/sweep.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// Runs every candidate as `pipeprof run --procs p` does: p ranks of the pipeprof-rank worker
/// on this host (launch::launchLocalRun, Gloo on CPU, NCCL on CUDA), each building the model
/// from `model` and keeping its stages, each bound to CPUs of its own; pipeline device d runs
/// on devices[candidate.deviceOf(d)]. The measurement's steps are the slowest rank's, its peaks
/// one per rank, the trace every rank's on rank 0's clock. A stop request stops every rank at
/// once and throws TrainingStopped (the sweep then throws SweepInterrupted and the candidate
/// stays to be measured by --resume); a failed rank throws std::runtime_error naming it.
class ProcessMeasurer : public CandidateMeasurer {
 public:
  /// `timeout`: the longest a rank waits for another. `worker`: the pipeprof-rank executable,
  /// found where this constructor is called (launch::findRankWorker; throws when there is none).
  ProcessMeasurer(ModelSpec model, std::vector<DeviceDesc> devices, std::chrono::milliseconds timeout,
                  TrainingStepOptions step = {}, std::string worker = launch::findRankWorker());
  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override;

 private:
  ModelSpec model_;
  std::vector<DeviceDesc> devices_;
  std::chrono::milliseconds timeout_;
  TrainingStepOptions step_;
  std::string worker_;
};

/// The report's process_layout of a sweep measured by `procs` processes on `devices`:
/// {"procs", "transport": "gloo" on CPUs, "nccl" on CUDA devices} (measureRankLink adds "link").
nlohmann::json processLayout(int procs, const std::vector<DeviceDesc>& devices);

/// Charges `link` on every copy between two ranks: config.rankLink, and "link" in
/// config.processLayout (the report's process_layout).
void useRankLink(SweepConfig& config, const Link& link);

/// The link a sweep's report charged between its ranks ("link" in its process_layout), nullopt
/// when it names none (a threaded sweep's). Throws std::invalid_argument when the link is not
/// a non-negative latency and a positive bandwidth.
std::optional<Link> recordedRankLink(const nlohmann::json& processLayout);

/// Measures the transport's link between two local ranks on config.devices' type (a link job
/// of launch::measureLocalLink, five round trips per size) and charges it on every copy
/// between devices (useRankLink). Returns the link.
/// Throws launch::RunInterrupted when `stop` asks, std::runtime_error naming the rank when the
/// measurement fails.
Link measureRankLink(SweepConfig& config, std::chrono::milliseconds timeout, const StopToken& stop = {},
                     const std::string& worker = launch::findRankWorker());

}  // namespace pipeprof::tuner
