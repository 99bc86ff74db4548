// `pipeprof sweep`: predicted and measured candidates in one JSON report, with a suggestion.
#include "commands.h"
#include "interrupts.h"

#include "comparison_table.h"
#include "model_options.h"
#include "progress_reporter.h"
#include "schedule_options.h"
#include "search_flags.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/units.h>
#include <pipeprof/launch/local_run.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/environment_info.h>
#include <pipeprof/tuner/process_measurer.h>
#include <pipeprof/tuner/sweep.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

namespace pipeprof::cli {
namespace {

namespace fs = std::filesystem;
using tuner::SweepConfig;
using tuner::SweepInputs;

struct SweepFlags {
  ModelFlags model;  ///< --model, --batch, --width, --depth, --seed, --threads
  std::string devices = "cpu,cpu";
  std::string chunks = "1,2,4,8";
  std::string checkpoint = "always,except_last,never";
  std::string balances = "auto";
  ScheduleListFlags schedules;
  std::string measure = "top:12";
  std::int64_t steps = 10;
  std::int64_t warmup = 3;
  std::int64_t rounds = 3;
  std::string deviceMemory;
  std::string profile;
  std::string calibration;
  double profileBudget = 20.0;
  double calibrationBudget = 8.0;
  std::string output = "report.json";
  std::string tracesDir;
  bool resume = false;
  bool json = false;
  int procs = 0;         ///< > 0: one process per pipeline device measures each candidate; 0: left out
  double timeoutS = 120;  ///< --procs: the longest a rank waits for another
};

/// Validates every flag and input file; creates nothing.
SweepConfig validate(const SweepFlags& flags, SweepInputs& inputs) {
  SweepConfig config;
  const ModelOnDevices resolved = resolveModelOnDevices(flags.model, flags.devices);
  config.model = resolved.spec;
  config.devices = resolved.devices;
  config.batch = resolved.batch;
  const std::int64_t layers = resolved.layers;
  const auto pipelineDevices = static_cast<std::int64_t>(config.devices.size());  // p
  if (flags.procs > 0) {
    if (flags.procs != pipelineDevices) {
      throw UsageError("--procs " + std::to_string(flags.procs) + " but --devices " + flags.devices + " names " +
                       std::to_string(pipelineDevices) + " pipeline devices: one process runs each device");
    }
    if (!(flags.timeoutS > 0)) throw UsageError("--timeout must be positive seconds");
    config.processLayout = tuner::processLayout(flags.procs, config.devices);
  }
  SearchSpace schedules;
  applyScheduleListFlags(flags.schedules, schedules);
  config.schedules = schedules.schedules;
  config.stagesPerDevice = schedules.stagesPerDevice;
  const std::vector<std::int64_t> stages = stageCounts(schedules, pipelineDevices);

  config.chunks = parseChunksFlag(flags.chunks);
  config.modes = parseFlag("--checkpoint", [&] { return parseCheckpointList(flags.checkpoint); });
  parseBalancesFlag(flags.balances, schedules);
  config.enumeration = schedules.enumeration;
  for (const std::vector<std::int64_t>& balance : schedules.balances) {
    std::int64_t sum = 0;
    for (const std::int64_t part : balance) sum += part;
    const bool shaped =
        std::find(stages.begin(), stages.end(), static_cast<std::int64_t>(balance.size())) != stages.end();
    if (!shaped || sum != layers) {
      throw UsageError(fmt::format("--balances: '{}' must have {} positive parts ({} devices x the stages per "
                                   "device of --schedules {} --stages-per-device {}) summing to {} (the layers of "
                                   "'{}')",
                                   formatBalance(balance), fmt::join(stages, " or "), pipelineDevices,
                                   flags.schedules.schedules, flags.schedules.stagesPerDevice, layers,
                                   config.model.name));
    }
    config.balances.push_back(balance);
  }
  config.measure = tuner::parseMeasurePolicy(flags.measure);  // std::invalid_argument: exit 2 too
  if (flags.steps < 1) throw UsageError(fmt::format("--steps {}: must be at least 1", flags.steps));
  if (flags.warmup < 0) throw UsageError(fmt::format("--warmup {}: must be at least 0", flags.warmup));
  if (flags.rounds < 1) throw UsageError(fmt::format("--rounds {}: must be at least 1", flags.rounds));
  config.steps = flags.steps;
  config.warmupSteps = flags.warmup;
  config.rounds = std::min(flags.rounds, flags.steps);
  if (!(flags.profileBudget > 0)) {
    throw UsageError(fmt::format("--profile-budget {}: must be a positive number of seconds", flags.profileBudget));
  }
  config.profileBudgetSeconds = flags.profileBudget;
  if (flags.calibrationBudget < 0) {
    throw UsageError(fmt::format("--calibration-budget {}: must not be negative", flags.calibrationBudget));
  }
  config.calibrationBudgetSeconds = flags.calibrationBudget;
  if (!flags.deviceMemory.empty()) {
    config.deviceMemoryBytes = parseFlag("--device-memory", [&] { return parseBytes(flags.deviceMemory); });
  }
  if (flags.output.empty()) throw UsageError("-o: give the report's path, e.g. -o out/report.json");
  if (fs::is_directory(flags.output)) throw UsageError("-o '" + flags.output + "' is a directory; name a file");
  config.reportPath = flags.output;
  if (flags.tracesDir.empty()) {
    const fs::path report(flags.output);
    config.tracesDir = (report.parent_path() / (report.stem().string() + ".traces")).string();
  } else {
    config.tracesDir = flags.tracesDir;
  }
  config.profilePath = flags.profile;

  if (flags.resume && fs::exists(flags.output)) {
    Report resumed = readReport(flags.output);
    const std::string mismatch = tuner::resumeMismatch(resumed, config);
    if (!mismatch.empty()) {
      throw UsageError("--resume: " + flags.output + " is from another sweep (" + mismatch +
                       "); use another -o or drop --resume");
    }
    if (resumed.profile) inputs.cachedProfile = resumed.profile;
    inputs.resumedReport = std::move(resumed);
  }
  if (inputs.cachedProfile) {
    const std::string mismatch =
        tuner::profileMismatch(*inputs.cachedProfile, config.model, config.devices.front().typeName(), layers);
    if (!mismatch.empty()) {
      throw UsageError("the profile of " + flags.output + " does not fit this sweep: " + mismatch +
                       "; use another -o or drop --resume");
    }
  } else {
    inputs.cachedProfile = readCachedProfile(flags.profile, resolved);
  }
  if (!flags.calibration.empty()) {
    if (flags.resume) throw UsageError("--calibration: a resumed sweep keeps its report's calibration; drop one");
    inputs.calibration = readCalibration(flags.calibration);
    config.calibrationPath = flags.calibration;
  }
  return config;
}

void runSweepCommand(const SweepFlags& flags) {
  SweepInputs inputs;
  SweepConfig config = validate(flags, inputs);
  const StopToken stop = interruptToken();
  const std::chrono::milliseconds timeout(static_cast<std::int64_t>(flags.timeoutS * 1000.0));
  ProgressReporter progress(std::cerr, ProgressReporter::stderrIsTerminal(), 0);
  std::unique_ptr<tuner::CandidateMeasurer> measurer;
  if (flags.procs > 0) {
    // The predictions charge the transport's link on every copy: measured first.
    std::cerr << "measuring the link between two ranks (as pipeprof bench-link) ...\n";
    try {
      const Link link = tuner::measureRankLink(config, timeout, stop);
      std::cerr << fmt::format("link: latency {}, bandwidth {:.2f} GB/s\n", formatDuration(link.latencyNs),
                               link.bandwidthBytesPerS / 1e9);
    } catch (const launch::RunInterrupted&) {
      throw Interrupted("interrupted while measuring the link, before any report was written");
    }
    measurer = std::make_unique<tuner::ProcessMeasurer>(config.model, config.devices, timeout);
  } else {
    measurer = std::make_unique<tuner::ThreadedMeasurer>(config.model, config.devices);
  }
  Report report;
  try {
    report = tuner::runSweep(config, inputs, *measurer, progress, stop);
  } catch (const tuner::SweepInterrupted& interrupted) {
    throw Interrupted(interrupted.what());  // says what the report holds
  }
  if (flags.json) {
    std::cout << toJson(report).dump(2) << "\n";
  } else {
    printComparison(report, std::cout);
  }
}

}  // namespace

void addSweepCommand(CLI::App& app) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* command = app.add_subcommand(
      "sweep",
      "Profile a model, simulate every candidate (schedule x stages per device x balance x chunks x\n"
      "checkpoint mode), measure the best predicted ones on the devices, and write one report with the\n"
      "suggestion.\n\n"
      "Examples:\n"
      "  pipeprof sweep --model mlp --devices cpu,cpu --batch 64 -o out/report.json\n"
      "  pipeprof sweep --model resnet --batch 32 --chunks 2,4 --measure top:6 --steps 3\n"
      "  pipeprof sweep --model gpt --balances \"3,4;4,3\" --measure all --profile gpt.profile.json\n"
      "  pipeprof sweep --model mlp --batch 64 --schedules 1f1b,interleaved --stages-per-device 2,3\n"
      "  pipeprof sweep --model mlp --batch 64 -o out/report.json --resume   # after Ctrl-C or a crash\n\n"
      "Threads: unless --threads is given, the sweep uses max(1, cores / devices) intra-op\n"
      "threads (LibTorch and OpenBLAS) so the devices' workers do not oversubscribe the cores;\n"
      "the profile is measured with the same count.");
  addModelFlags(*command, flags->model);
  command->get_option("--threads")->description(
      "Intra-op threads of LibTorch and OpenBLAS, for profiling and measuring (default: max(1, cores / devices))");
  command->add_option("--devices", flags->devices,
                      "The pipeline devices, e.g. cpu,cpu or cuda:0,cuda:1; a candidate with v stages per device "
                      "runs stage j on device j mod devices")
      ->capture_default_str();
  command->add_option("--chunks", flags->chunks, "Chunk counts to try")->capture_default_str();
  command->add_option("--checkpoint", flags->checkpoint, "Checkpoint modes to try")->capture_default_str();
  command->add_option("--balances", flags->balances,
                      "auto, all, or balances such as \"2,6;4,4\" (devices x stages per device entries each)")
      ->capture_default_str();
  addScheduleListFlags(*command, flags->schedules);
  command->add_option("--measure", flags->measure,
                      "Which candidates to measure: top:N (best N/3 predicted, then spread over schedules, "
                      "balances, chunks and modes), all or none")
      ->capture_default_str();
  command->add_option("--steps", flags->steps, "Measured training steps per candidate, over all its rounds")
      ->capture_default_str();
  command->add_option("--warmup", flags->warmup, "Warm-up steps before each round's measured steps")
      ->capture_default_str();
  command->add_option("--rounds", flags->rounds,
                      "Interleaved rounds: each measures every selected candidate once, on a fresh Pipe, with "
                      "its share of the steps (at most --steps)")
      ->capture_default_str();
  command->add_option("--device-memory", flags->deviceMemory, "Memory per device, e.g. 512MiB or 16GiB (default: unbounded)");
  command->add_option("--profile", flags->profile,
                      "Profile cache: reused when it exists (refused if measured on another device type, "
                      "thread count or LibTorch version), written after profiling otherwise");
  command->add_option("--calibration", flags->calibration,
                      "Calibration to predict with (pipeprof.calibration/v1, from `pipeprof calibrate`) instead of "
                      "timing the reference pipelines now");
  command->add_option("--profile-budget", flags->profileBudget, "Seconds the layer profiler may spend")
      ->capture_default_str();
  command->add_option("--calibration-budget", flags->calibrationBudget,
                      "Seconds of reference-pipeline rounds calibrating the simulator (at least 3 rounds)")
      ->capture_default_str();
  command->add_option("-o,--output", flags->output, "Report path (pipeprof.report/v1)")->capture_default_str();
  command->add_option("--traces-dir", flags->tracesDir,
                      "Where measured and predicted traces go (default: <report stem>.traces next to the report)");
  command->add_flag("--resume", flags->resume, "Continue the sweep in -o, keeping finished candidates");
  command->add_flag("--json", flags->json, "Print the report JSON on stdout instead of the table");
  command->add_option("--procs", flags->procs,
                      "Measure every candidate with one process per pipeline device (as pipeprof run --procs), after "
                      "measuring the transport's link, which the predictions then charge on every copy")
      ->check(atLeastOne("threads of one process"));
  command->add_option("--timeout", flags->timeoutS, "With --procs: seconds a rank waits for another")
      ->capture_default_str();
  command->callback([flags] { runSweepCommand(*flags); });
}

}  // namespace pipeprof::cli
