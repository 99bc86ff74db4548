// `pipeprof sweep`: predicted and measured candidates in one JSON report, with a suggestion.
#include "commands.h"
#include "interrupts.h"

#include "comparison_table.h"
#include "model_options.h"
#include "progress_reporter.h"
#include "search_flags.h"
#include "training_step_options.h"

#include <pipeprof/core/units.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/launch/local_run.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/process_measurer.h>
#include <pipeprof/tuner/sweep.h>
#include <pipeprof/tuner/sweep_setup.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

namespace pipeprof::cli {
namespace {

namespace fs = std::filesystem;
using tuner::SweepConfig;
using tuner::SweepInputs;

struct SweepFlags {
  ModelFlags model;  ///< --model, --batch, --width, --depth, --seed, --threads
  std::string devices = "cpu,cpu";
  SearchFlags search;
  TrainingStepFlags trainingStep;
  std::string measure = "top:12";
  std::int64_t steps = 10;
  std::int64_t warmup = 3;
  std::int64_t rounds = 3;
  std::int64_t maxRounds = 0;  ///< 0: twice the rounds
  std::int64_t runOff = tuner::SweepConfig{}.runOffCandidates;
  std::string deviceMemory;
  std::string profile;
  std::string calibration;
  double profileBudget = 20.0;
  /// NaN: not given (SweepConfig's default, or with --time its share of it)
  double calibrationBudget = std::numeric_limits<double>::quiet_NaN();
  std::optional<std::int64_t> calibrationRounds;  ///< nullopt: as many as --rounds
  std::string time;                               ///< --time: the whole sweep's time; empty: no limit
  std::string output = "report.json";
  std::string tracesDir;
  bool resume = false;
  bool json = false;
  int procs = 0;              ///< > 0: one process per pipeline device measures each candidate; 0: left out
  std::string linkLatency;    ///< --procs: the link between ranks to charge instead of measuring it
  std::string linkBandwidth;  ///< (both, or neither)
  double timeoutS = 120;      ///< --procs: the longest a rank waits for another
  std::string cpuBind;        ///< cores | none; empty: cores with --procs, none for threads
};

/// The flags the sweep's config fields come from.
const FlagNames kSweepFlags = {{"steps", "--steps"},
                               {"warmupSteps", "--warmup"},
                               {"rounds", "--rounds"},
                               {"maxRounds", "--max-rounds"},
                               {"runOffCandidates", "--run-off"},
                               {"profileBudgetSeconds", "--profile-budget"},
                               {"calibrationBudgetSeconds", "--calibration-budget"},
                               {"calibrationRounds", "--calibration-rounds"},
                               {"timeLimitSeconds", "--time"}};

/// Checks the config (tuner::checkSweepConfig) in the flags' words.
void checkConfig(const SweepConfig& config, std::int64_t layers, const SweepFlags& flags) {
  try {
    tuner::checkSweepConfig(config, layers);
  } catch (const tuner::ConfigError& error) {
    if (error.field() != "balances") throw usageError(error, kSweepFlags);
    const auto devices = static_cast<std::int64_t>(config.devices.size());
    throw UsageError(fmt::format(
        "--balances: '{}' must have {} positive parts ({} devices x the stages per device of "
        "--schedules {} --stages-per-device {}) summing to {} (the layers of '{}')",
        error.value(), fmt::join(stageCounts(tuner::sweepSearchSpace(config), devices), " or "), devices,
        flags.search.schedules.schedules, flags.search.schedules.stagesPerDevice, layers, config.model.name));
  }
}

/// --time's seconds: a duration with its unit (10m, 90s, 1.5h); a bare number or none at all is refused.
double timeLimitSeconds(const std::string& text) {
  const TimeNs ns = parseFlag("--time", [&] { return parseDuration(text); });
  if (text.find_first_not_of("0123456789. ") == std::string::npos) {
    throw UsageError(fmt::format("--time {}: give the unit, e.g. --time 10m or --time 90s", text));
  }
  if (ns <= 0) throw UsageError(fmt::format("--time {}: give a positive time, e.g. --time 10m", text));
  return static_cast<double>(ns) / 1e9;
}

/// With --procs, the link between ranks the predictions charge, where the flags or the resumed
/// report give one (config.rankLink; else the sweep measures it). Refuses a link without --procs,
/// half of one, and one given to a resumed sweep whose report has its own.
void useGivenRankLink(const SweepFlags& flags, const SweepInputs& inputs, SweepConfig& config) {
  const bool given = !flags.linkLatency.empty() || !flags.linkBandwidth.empty();
  const char* flag = flags.linkLatency.empty() ? "--link-bandwidth" : "--link-latency";
  if (given && flags.procs == 0) {
    throw UsageError(fmt::format("{}: only with --procs (threads of one process pass tensors over no link)", flag));
  }
  if (given && (flags.linkLatency.empty() || flags.linkBandwidth.empty())) {
    throw UsageError(fmt::format("{}: give the link whole, e.g. --link-latency 40us --link-bandwidth 5GB/s", flag));
  }
  std::optional<Link> recorded;
  if (inputs.resumedReport) {
    recorded = inFlagWords({}, [&] {
      try {
        return tuner::recordedRankLink(inputs.resumedReport->processLayout);
      } catch (const std::invalid_argument& error) {
        throw tuner::SweepInputError(tuner::SweepInputError::Input::ResumedReport, config.reportPath, error.what());
      }
    });
  }
  if (recorded && given) throw UsageError(fmt::format("{}: a resumed sweep keeps its report's link", flag));
  if (recorded) tuner::useRankLink(config, *recorded);
  if (!given) return;
  const TimeNs latency = parseFlag("--link-latency", [&] { return parseDuration(flags.linkLatency); });
  const BytesPerS bandwidth = parseFlag("--link-bandwidth", [&] { return parseBandwidth(flags.linkBandwidth); });
  if (latency < 0) throw UsageError("--link-latency " + flags.linkLatency + ": give a time of 0 or more");
  if (!(bandwidth > 0)) throw UsageError("--link-bandwidth " + flags.linkBandwidth + ": give a positive rate");
  tuner::useRankLink(config, Link{latency, bandwidth});
}

/// Validates every flag and input file; creates nothing.
SweepConfig validate(const SweepFlags& flags, SweepInputs& inputs) {
  const tuner::SweepModel model = resolveModelOnDevices(flags.model, flags.devices);
  SweepConfig config;
  config.model = model.spec;
  config.devices = model.devices;
  config.batch = model.batch;
  config.step.optimizer = optimizerFromFlags(flags.trainingStep);
  config.step.precision = precisionFromFlags(flags.trainingStep);
  requirePrecisionDevices(config.step.precision, config.devices);
  if (!flags.cpuBind.empty()) {
    config.step.cpuBinding = parseFlag("--cpu-bind", [&] { return launch::parseCpuBinding(flags.cpuBind); });
  }
  if (flags.procs > 0) {
    checkProcsFlag(flags.procs, flags.devices, config.devices.size());
    if (!(flags.timeoutS > 0)) throw UsageError("--timeout must be positive seconds");
    config.processLayout = tuner::processLayout(flags.procs, config.devices);
  }
  const SearchSpace space = searchSpaceFromFlags(flags.search);
  config.schedules = space.schedules;
  config.stagesPerDevice = space.stagesPerDevice;
  config.chunks = space.chunks;
  config.modes = space.modes;
  config.enumeration = space.enumeration;
  config.balances = space.balances;
  config.steps = flags.steps;
  config.warmupSteps = flags.warmup;
  config.rounds = std::min(flags.rounds, flags.steps);
  config.maxRounds = flags.maxRounds;
  config.runOffCandidates = flags.runOff;
  config.profileBudgetSeconds = flags.profileBudget;
  if (!flags.time.empty()) config.timeLimitSeconds = timeLimitSeconds(flags.time);
  if (!std::isnan(flags.calibrationBudget)) {
    config.calibrationBudgetSeconds = flags.calibrationBudget;
  } else if (config.timeLimitSeconds > 0) {
    config.calibrationBudgetSeconds = tuner::kCalibrationTimeShare * config.timeLimitSeconds;  // all of its share
  }
  config.calibrationRounds = flags.calibrationRounds;
  checkConfig(config, model.layers, flags);
  config.measure = tuner::parseMeasurePolicy(flags.measure);  // std::invalid_argument: exit 2 too
  if (!flags.deviceMemory.empty()) {
    config.deviceMemoryBytes = parseFlag("--device-memory", [&] { return parseBytes(flags.deviceMemory); });
  }
  if (flags.output.empty()) throw UsageError("-o: give the report's path, e.g. -o out/report.json");
  if (fs::is_directory(flags.output)) throw UsageError("-o '" + flags.output + "' is a directory; name a file");
  config.reportPath = flags.output;
  config.tracesDir = flags.tracesDir.empty() ? tuner::defaultTracesDir(flags.output) : flags.tracesDir;
  config.profilePath = flags.profile;
  config.calibrationPath = flags.calibration;
  inputs = inFlagWords({}, [&] { return tuner::loadSweepInputs(config, model.layers, flags.resume); });
  useGivenRankLink(flags, inputs, config);
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
    // The predictions charge the transport's link on every copy: measured first, unless given.
    const char* source = inputs.resumedReport ? "the resumed report's" : "as given";
    if (!config.rankLink) {
      std::cerr << "measuring the link between two ranks (as pipeprof bench-link) ...\n";
      source = "measured";
      try {
        tuner::measureRankLink(config, timeout, stop);
      } catch (const launch::RunInterrupted&) {
        throw Interrupted("interrupted while measuring the link, before any report was written");
      }
    }
    std::cerr << fmt::format("link: latency {}, bandwidth {:.2f} GB/s ({})\n",
                             formatDuration(config.rankLink->latencyNs), config.rankLink->bandwidthBytesPerS / 1e9,
                             source);
    measurer = std::make_unique<tuner::ProcessMeasurer>(config.model, config.devices, timeout, config.step);
  } else {
    measurer = std::make_unique<tuner::ThreadedMeasurer>(config.model, config.devices, config.step);
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
  auto [command, flags] = addCommand<SweepFlags>(
      app, "sweep",
      {"Profile a model, simulate every candidate (schedule x stages per device x balance x chunks x\n"
       "checkpoint mode), measure the best predicted ones on the devices, and write one report with the\n"
       "suggestion.",
       {"pipeprof sweep --model mlp --devices cpu,cpu --batch 64 -o out/report.json",
        "pipeprof sweep --model resnet --batch 32 --chunks 2,4 --measure top:6 --steps 3",
        "pipeprof sweep --model gpt --balances \"3,4;4,3\" --measure all --profile gpt.profile.json",
        "pipeprof sweep --model mlp --batch 64 --schedules 1f1b,interleaved --stages-per-device 2,3",
        "pipeprof sweep --model gpt --devices cpu,cpu --time 3m -o out/report.json",
        "pipeprof sweep --model mlp --batch 64 -o out/report.json --resume   # after Ctrl-C or a crash"},
       "Threads: unless --threads is given, the sweep uses max(1, cores / devices) of LibTorch's\n"
       "intra-op threads (OpenBLAS stays on one) so the devices' workers do not oversubscribe the\n"
       "cores; the profile is measured with the same count."},
      runSweepCommand);
  addModelFlags(command, flags.model,
                "LibTorch's intra-op threads (OpenBLAS stays on one), for profiling and measuring "
                "(default: max(1, cores / devices))");
  addDevicesFlag(command, flags.devices, "; a candidate with v stages per device runs stage j on device j mod devices");
  addSearchFlags(command, flags.search, "to try");
  addTrainingStepFlags(command, flags.trainingStep);
  command
      .add_option("--measure", flags.measure,
                  "Which candidates to measure: top:N (best N/3 predicted, then spread over schedules, "
                  "balances, chunks and modes), all or none")
      ->capture_default_str();
  command.add_option("--steps", flags.steps, "Measured training steps per candidate, over all its rounds")
      ->capture_default_str();
  command.add_option("--warmup", flags.warmup, "Warm-up steps before each round's measured steps")
      ->capture_default_str();
  command
      .add_option("--rounds", flags.rounds,
                  "Interleaved rounds: each measures every selected candidate once, on a fresh Pipe, with "
                  "its share of the steps (at most --steps)")
      ->capture_default_str();
  command.add_option("--max-rounds", flags.maxRounds,
                     "Rounds a candidate may get in all when its rounds disagree by more than 10% (the machine "
                     "changed speed, or the candidate runs in two modes): one more round at a time, each with the "
                     "steps of the last (default: twice --rounds; --rounds for none)");
  command
      .add_option("--run-off", flags.runOff,
                  "Once all are measured, the best measured candidate and at most this many of those whose "
                  "rounds overlap its own (the best predicted first, then the fastest) are measured --rounds more "
                  "rounds each, alternated, so that the suggestion does not rest on a lucky round (0: no run-off)")
      ->capture_default_str();
  command.add_option("--device-memory", flags.deviceMemory,
                     "Memory per device, e.g. 512MiB or 16GiB (default: unbounded)");
  command.add_option("--profile", flags.profile,
                     "Profile cache: reused when it exists (refused if measured on another device type, "
                     "thread count or LibTorch version), written after profiling otherwise");
  command.add_option("--calibration", flags.calibration,
                     "Calibration to predict with (pipeprof.calibration/v1 from `pipeprof calibrate`, or an earlier "
                     "sweep's report: its calibration) instead of timing the reference pipelines now");
  command.add_option("--profile-budget", flags.profileBudget, "Seconds the whole profile may take")
      ->capture_default_str();
  command.add_option("--calibration-budget", flags.calibrationBudget,
                     fmt::format("Seconds the reference pipelines calibrating the simulator may take, in all (GPipe at "
                                 "every chunk count and the shape of each candidate to measure at its chunk count, "
                                 "in rounds); default {:g}, with --time 15% of it",
                                 SweepConfig{}.calibrationBudgetSeconds));
  command.add_option("--calibration-rounds", flags.calibrationRounds,
                     "At most this many rounds of the calibration's reference pipelines a pass, within "
                     "--calibration-budget (default: as many as --rounds, so that a reference is timed as often as a "
                     "measured candidate; 1: each reference once, whatever it costs; 0: as many as the budget holds)");
  command.add_option("--time", flags.time,
                     "The whole sweep's time, e.g. 10m or 90s: the profile's timed runs get at most 20% of it, "
                     "the calibration 15% (unless --calibration-budget says less), and only the best predicted "
                     "candidates whose rounds are expected to end within the rest are measured (--resume measures "
                     "the others later)");
  command.add_option("-o,--output", flags.output, "Report path (pipeprof.report/v1)")->capture_default_str();
  command.add_option("--traces-dir", flags.tracesDir,
                     "Where measured and predicted traces go (default: <report stem>.traces next to the report)");
  command.add_flag("--resume", flags.resume, "Continue the sweep in -o, keeping finished candidates");
  command.add_flag("--json", flags.json, "Print the report JSON on stdout instead of the table");
  addProcsFlags(command, flags.procs, flags.timeoutS,
                "Measure every candidate with one process per pipeline device (as pipeprof run --procs), after "
                "measuring the transport's link, which the predictions then charge on every copy",
                "With --procs: seconds a rank waits for another");
  command
      .add_option("--cpu-bind", flags.cpuBind,
                  "cores (each pipeline device on CPUs of its own, split evenly in blocks: a rank, or a device's "
                  "worker thread; the default with --procs) or none (the default for threads): how every "
                  "measured candidate and reference pipeline runs")
      ->type_name("cores|none");
  command
      .add_option("--link-latency", flags.linkLatency,
                  "With --procs: the latency of the link between ranks to predict with instead of measuring it, "
                  "e.g. 40us, with --link-bandwidth (a report's process_layout.link; a resumed sweep keeps its "
                  "report's)")
      ->type_name("TIME");
  command.add_option("--link-bandwidth", flags.linkBandwidth, "With --procs: that link's bandwidth, e.g. 5GB/s")
      ->type_name("RATE");
}

}  // namespace pipeprof::cli
