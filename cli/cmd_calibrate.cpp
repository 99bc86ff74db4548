// `pipeprof calibrate`: time reference pipelines and write the calibration that simulate, suggest and sweep take.
#include "commands.h"
#include "model_options.h"
#include "search_flags.h"
#include "training_step_options.h"

#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/reference_traces.h>
#include <pipeprof/tuner/sweep.h>
#include <pipeprof/tuner/sweep_setup.h>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace pipeprof::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateFlags {
  ModelFlags model;
  std::string devices = "cpu,cpu";
  SearchFlags search{"1,2,4,8", "never", "auto", {"gpipe", "2"}};
  TrainingStepFlags trainingStep;
  std::string profile;
  double profileBudget = 20.0;
  double budget = 20.0;
  std::int64_t rounds = 0;
  std::string output = "calibration.json";
  bool json = false;
  std::string refit;      ///< a sweep's report: fit again from the reference traces it kept
  std::string tracesDir;  ///< with refit: the report's traces directory, if not the default
};

/// The profile the calibration corrects: --profile when it exists (checked against the model),
/// else measured now (and written to --profile when given).
Profile obtainProfile(const CalibrateFlags& flags, const tuner::SweepModel& model,
                      const std::vector<std::int64_t>& sizes, const tuner::TrainingStepOptions& step) {
  if (std::optional<Profile> cached =
          inFlagWords({}, [&] { return tuner::readCachedProfile(flags.profile, model, step); })) {
    return *cached;
  }
  std::cerr << fmt::format("profiling {} on {} (micro-batches {})\n", model.spec.name, model.devices.front().typeName(),
                           formatBalance(sizes));
  Profile profile = tuner::measureProfile(model.spec, model.devices.front(), sizes, flags.profileBudget, step);
  std::cerr << "profiled in " << describeProfilingTime(profile.environment.profiling) << "\n";
  if (!flags.profile.empty()) writeProfile(profile, flags.profile);
  return profile;
}

/// Writes the calibration to -o and prints it (--json: as JSON), each reference with its steps.
void writeAndDescribe(const Calibration& calibration, const CalibrateFlags& flags) {
  if (const fs::path parent = fs::absolute(flags.output).parent_path(); !parent.empty()) fs::create_directories(parent);
  writeCalibration(calibration, flags.output);
  if (flags.json) {
    std::cout << toJson(calibration).dump(2) << "\n";
    return;
  }
  std::cout << describeCalibration(calibration) << "\n";
  for (const CalibrationReference& reference : calibration.provenance.references) {
    std::cout << fmt::format(
        "  reference {} x{} (balance {}): {} steps, median {}, step overhead {}\n", reference.shape.label(),
        reference.chunks, formatBalance(reference.balance), reference.steps, formatDuration(reference.stepNsMedian),
        formatDuration(calibration.correctionsFor(reference.shape).stepOverheadNsFor(reference.chunks)));
  }
  std::cout << "wrote " << flags.output << "\n";
}

void runCalibrate(const CalibrateFlags& flags) {
  const tuner::SweepModel model = resolveModelOnDevices(flags.model, flags.devices);
  const std::vector<DeviceDesc>& devices = model.devices;
  const SearchSpace space = searchSpaceFromFlags(flags.search);
  if (!(flags.budget >= 0)) throw UsageError(fmt::format("--budget {}: must not be negative", flags.budget));
  if (flags.rounds < 0) throw UsageError(fmt::format("--rounds {}: must not be negative", flags.rounds));
  if (!(flags.profileBudget > 0)) {
    throw UsageError(fmt::format("--profile-budget {}: must be a positive number of seconds", flags.profileBudget));
  }
  for (const std::int64_t m : space.chunks) {
    if (m > model.batch) {
      throw UsageError(fmt::format("--chunks {}: {} exceeds the batch {}", flags.search.chunks, m, model.batch));
    }
  }
  tuner::TrainingStepOptions step;
  step.optimizer = optimizerFromFlags(flags.trainingStep);
  step.precision = precisionFromFlags(flags.trainingStep);
  requirePrecisionDevices(step.precision, devices);
  setIntraOpThreads(model.spec.threads);
  const Profile profile = obtainProfile(flags, model, tuner::microBatchSizes(model.batch, space.chunks), step);

  const auto deviceCount = static_cast<std::int64_t>(devices.size());
  const std::vector<PipelineShape> shapes =
      tuner::referenceShapes(space.schedules, space.stagesPerDevice, space.modes, deviceCount, profile.layerCount());
  std::cerr << fmt::format("calibrating within {:g} s: {} shapes at chunk counts {}, each at its largest first\n",
                           flags.budget, shapes.size(), flags.search.chunks);
  tuner::ThreadedMeasurer measurer(model.spec, devices, step);
  tuner::CalibrationRounds rounds;
  rounds.budgetSeconds = flags.budget;
  rounds.maxRounds = flags.rounds;
  rounds.onRound = [](std::int64_t round, std::size_t measured, std::size_t planned, double seconds) {
    std::cerr << fmt::format("calibration round {}: {} of {} reference pipelines in {:.1f} s\n", round, measured,
                             planned, seconds);
  };
  Calibration calibration = tuner::measureCalibration(measurer, profile, tuner::sweepCluster(devices, std::nullopt),
                                                      model.batch, space.chunks, deviceCount, rounds, shapes);
  tuner::stampProvenance(calibration, model.spec, model.batch, devices);
  writeAndDescribe(calibration, flags);
}

/// --refit: the calibration the sweep's kept reference traces imply with this pipeprof's fit,
/// its provenance the report's but for the references.
void runRefit(const CalibrateFlags& flags) {
  const Report report = readReport(flags.refit);
  if (!report.profile || !report.cluster) {
    throw UsageError("--refit '" + flags.refit + "': the report embeds no profile and cluster to fit against");
  }
  const std::string referencesDir =
      tuner::referenceTracesDir(flags.tracesDir.empty() ? tuner::defaultTracesDir(flags.refit) : flags.tracesDir);
  const std::vector<ReferenceRun> runs = tuner::readReferenceTraces(referencesDir);
  Calibration calibration = calibrationFromRuns(*report.profile, *report.cluster, runs);
  if (report.calibration.is_object()) {
    CalibrationProvenance provenance = calibrationFromJson(report.calibration, flags.refit).provenance;
    provenance.references = std::move(calibration.provenance.references);
    calibration.provenance = std::move(provenance);
  }
  std::cerr << fmt::format("refitted from {} reference runs in {}\n", runs.size(), referencesDir);
  writeAndDescribe(calibration, flags);
}

void runCalibrateOrRefit(const CalibrateFlags& flags) {
  if (flags.output.empty() || fs::is_directory(flags.output)) {
    throw UsageError("-o '" + flags.output + "': name the calibration file to write, e.g. -o calibration.json");
  }
  if (flags.refit.empty()) {
    runCalibrate(flags);
  } else {
    runRefit(flags);
  }
}

}  // namespace

void addCalibrateCommand(CLI::App& app) {
  auto [command, flags] = addCommand<CalibrateFlags>(
      app, "calibrate",
      {"Time reference pipelines (every device, an even balance; one per shape -- schedule and checkpoint\n"
       "mode, GPipe and never unless told -- and chunk count) and write the calibration -- per micro-batch\n"
       "scales, device speeds, step overhead per chunk count -- that `simulate\n"
       "--calibration`, `suggest --calibration` and `sweep --calibration` predict with.",
       {"pipeprof calibrate --model mlp --devices cpu,cpu --batch 64 --profile mlp.profile.json -o "
        "mlp.calibration.json",
        "pipeprof calibrate --model mlp --devices cpu,cpu --batch 64 --schedules gpipe,1f1b,interleaved \\\n"
        "      --checkpoint except_last,never -o mlp.calibration.json",
        "pipeprof simulate --profile mlp.profile.json --calibration mlp.calibration.json --devices 2 --batch 64 \\\n"
        "      --balance 7,8 --chunks 4",
        "pipeprof calibrate --refit out/report.json -o refitted.calibration.json   # from the sweep's references"}},
      runCalibrateOrRefit);
  addModelFlags(command, flags.model);
  addDevicesFlag(command, flags.devices);
  addSearchFlags(command, flags.search, "to time reference pipelines with", /*balances=*/false);
  addTrainingStepFlags(command, flags.trainingStep);
  command.add_option("--profile", flags.profile,
                     "The profile to calibrate: read when it exists, else measured now and written there");
  command.add_option("--profile-budget", flags.profileBudget, "Seconds the whole profile may take")
      ->capture_default_str();
  command
      .add_option(
          "--budget", flags.budget,
          "Seconds the reference pipelines may take, in all (GPipe at every chunk count and every other shape at "
          "its largest first, then the rest, in rounds)")
      ->capture_default_str();
  command.add_option("--rounds", flags.rounds,
                     "At most this many rounds, budget left or not (1: each reference once, whatever it costs; "
                     "default: as many as --budget holds)");
  command.add_option("-o,--output", flags.output, "Calibration path (pipeprof.calibration/v1)")->capture_default_str();
  command.add_flag("--json", flags.json, "Print the calibration JSON on stdout instead of the summary");
  command.add_option("--refit", flags.refit,
                     "A sweep's report: fit its calibration again from the reference traces the sweep kept "
                     "(<traces dir>/calibration), with the report's profile and cluster; nothing is timed, and the "
                     "model, device and search flags do not apply");
  command
      .add_option("--traces-dir", flags.tracesDir,
                  "With --refit: the report's traces directory (default: <report stem>.traces next to it)")
      ->needs("--refit");
}

}  // namespace pipeprof::cli
