// Uses the installed pipeprof: a schedule (core), a simulation (simulator), a Pipe (runtime), and
// a sweep of two candidates each measured by two processes (tuner over launch).
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>
#include <pipeprof/tuner/process_measurer.h>
#include <pipeprof/tuner/sweep.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

namespace {

/// Sweeps a 3-layer mlp over chunks 1 and 2 (balance 2,1, gpipe, never: two candidates), each
/// measured by a ProcessMeasurer as two pipeprof-rank processes. Returns an error, or "".
std::string sweepWithTwoProcesses() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pipeprof_consumer_" + std::to_string(getpid()));
  fs::remove_all(dir);
  pipeprof::tuner::SweepConfig config;
  config.model.name = "mlp";
  config.model.options.width = 16;
  config.model.options.depth = 2;
  config.model.threads = 1;
  config.devices = {pipeprof::DeviceDesc::parse("cpu"), pipeprof::DeviceDesc::parse("cpu")};
  config.batch = 8;
  config.schedules = {pipeprof::ScheduleKind::GPipe};
  config.stagesPerDevice = {1};
  config.chunks = {1, 2};
  config.modes = {pipeprof::Checkpoint::Never};
  config.enumeration = pipeprof::BalanceEnumeration::Given;
  config.balances = {{2, 1}};
  config.measure = pipeprof::tuner::parseMeasurePolicy("all");
  config.warmupSteps = 1;
  config.steps = 1;
  config.rounds = 1;
  config.profileBudgetSeconds = 1;
  config.calibrationBudgetSeconds = 0;
  config.reportPath = (dir / "report.json").string();
  config.tracesDir = (dir / "traces").string();
  config.processLayout = pipeprof::tuner::processLayout(2, config.devices);
  pipeprof::tuner::measureRankLink(config, std::chrono::seconds(60));  // charged on every copy

  const std::string worker = pipeprof::launch::findRankWorker();  // the installed one, compiled in here
  pipeprof::tuner::ProcessMeasurer measurer(config.model, config.devices, std::chrono::seconds(60), {}, worker);
  pipeprof::tuner::SilentProgress progress;
  const pipeprof::Report report =
      pipeprof::tuner::runSweep(config, pipeprof::tuner::SweepInputs{}, measurer, progress, pipeprof::StopToken());
  std::string error;
  int measured = 0;
  for (const pipeprof::CandidateResult& result : report.candidates) {
    if (result.status != pipeprof::CandidateStatus::Measured) {
      error += result.candidate.label() + " was not measured: " + result.error + result.notMeasuredReason + "; ";
      continue;
    }
    ++measured;
    std::set<std::string> ranks;
    const auto trace = pipeprof::readChromeTraceFile((dir / result.measurement->tracePath).string());
    for (const pipeprof::TraceEvent& event : trace.events) ranks.insert(event.device.substr(0, 7));
    if (ranks != std::set<std::string>{"rank 0 ", "rank 1 "}) {
      error += result.candidate.label() + "'s trace is not of two ranks; ";
    }
  }
  if (!report.complete || measured != 2) error += "expected a complete report with 2 measured candidates";
  fs::remove_all(dir);
  if (error.empty()) {
    std::cout << "sweep: 2 candidates measured by 2 processes (worker " << worker << ")\n";
  }
  return error;
}

}  // namespace

int main() {
  try {
    pipeprof::ScheduleSpec spec;
    spec.balance = {1, 1};
    spec.chunks = 2;
    pipeprof::Schedule schedule = pipeprof::Schedule::build(spec);
    if (schedule.label(schedule.ops().front()) != "forward(0,0)") {
      std::cerr << "unexpected first op " << schedule.label(schedule.ops().front()) << "\n";
      return EXIT_FAILURE;
    }

    pipeprof::Profile profile;
    pipeprof::LayerProfile layer;
    layer.name = "fc";
    layer.paramBytes = 40;
    layer.gradBytes = 40;
    pipeprof::CostSample cost;
    cost.microBatch = 2;
    cost.forwardNs = 1000;
    cost.backwardNs = 2000;
    cost.outputBytes = 16;
    layer.costs = {cost};
    profile.layers = {layer};
    pipeprof::Candidate candidate;
    candidate.balance = {1};
    candidate.chunks = 2;
    candidate.batch = 4;
    pipeprof::Cluster cluster = pipeprof::Cluster::uniform(1, std::nullopt, 0.0, 0, "cpu");
    pipeprof::SimulationResult simulated = pipeprof::simulate(profile, cluster, candidate);
    if (simulated.prediction.iterationNs <= 0) {
      std::cerr << "simulation predicted " << simulated.prediction.iterationNs << " ns\n";
      return EXIT_FAILURE;
    }

    torch::nn::Sequential model(torch::nn::Linear(4, 2));
    pipeprof::PipeOptions options;
    options.devices = {torch::Device(torch::kCPU)};
    options.chunks = 2;
    pipeprof::Pipe pipe(model, {1}, options);
    torch::Tensor output = pipe.forward(torch::ones({4, 4}));
    output.sum().backward();
    if (output.size(0) != 4 || output.size(1) != 2) {
      std::cerr << "unexpected output shape " << output.sizes() << "\n";
      return EXIT_FAILURE;
    }
    const std::string sweepError = sweepWithTwoProcesses();
    if (!sweepError.empty()) {
      std::cerr << "sweep: " << sweepError << "\n";
      return EXIT_FAILURE;
    }
    std::cout << "schedule ops: " << schedule.ops().size() << ", predicted step: " << simulated.prediction.iterationNs
              << " ns\npipeprof consumer ok\n";
    return EXIT_SUCCESS;
  } catch (const std::exception& error) {
    std::cerr << "pipeprof consumer failed: " << error.what() << "\n";
    return EXIT_FAILURE;
  }
}
