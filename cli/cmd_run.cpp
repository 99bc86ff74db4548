// `pipeprof run`: trains a model on a Pipe for a few steps and reports step time, throughput, peaks.
#include "commands.h"
#include "model_options.h"
#include "schedule_options.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/tuner/auto_balance.h>
#include <pipeprof/tuner/environment_info.h>

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

namespace pipeprof::cli {

namespace {

struct RunFlags {
  ModelFlags model;
  std::string devices = "cpu,cpu";
  std::string balance = "auto";
  std::int64_t chunks = 4;
  std::string checkpoint = "except_last";
  ScheduleFlags schedule;
  std::int64_t steps = 10;
  std::int64_t warmup = 2;
  double learningRate = 1e-3;
  std::string tracePath;
  std::string profilePath;
  bool json = false;
};

/// The balance the simulator predicts fastest for these devices, schedule, chunks and mode,
/// from the given profile or one measured now on the first device (a short budget).
std::vector<std::int64_t> autoBalance(const RunFlags& flags, Model& model, const Candidate& shape,
                                      const std::vector<DeviceDesc>& devices, std::ostream& log) {
  Profile profile;
  if (!flags.profilePath.empty()) {
    profile = readProfile(flags.profilePath);
    log << "balance auto: using profile " << flags.profilePath << "\n";
  } else {
    profile = tuner::quickProfile(model, devices.front(), shape.batch, shape.chunks);
    log << "balance auto: measured a profile of " << profile.layerCount() << " layers on " << devices.front().str()
        << "\n";
  }
  if (profile.layerCount() != static_cast<std::int64_t>(model.sequential->size())) {
    throw UsageError("--profile " + flags.profilePath + " has " + std::to_string(profile.layerCount()) +
                     " layers but the model has " + std::to_string(model.sequential->size()));
  }
  const tuner::FastestBalance fastest = tuner::fastestBalance(
      profile, shape, static_cast<std::int64_t>(devices.size()), devices.front().typeName());
  log << fmt::format("balance auto: chose {} of {} evaluated (predicted step {}, {:.1f} samples/s)\n",
                     formatBalance(fastest.best.candidate.balance), fastest.evaluated,
                     formatDuration(fastest.best.prediction.iterationNs), fastest.best.prediction.samplesPerS);
  return fastest.best.candidate.balance;
}

void runRun(const RunFlags& flags) {
  Model model = buildModelFromFlags(flags.model);
  const std::vector<DeviceDesc> deviceDescs = parseDevicesFlag(flags.devices);
  const auto devices = static_cast<std::int64_t>(deviceDescs.size());
  // The sweep's thread policy: without it, OpenBLAS's own pool on every worker oversubscribes
  // the cores and a 2-partition CPU step runs ~10x slower.
  setIntraOpThreads(tuner::sweepThreads(flags.model.threads, devices, tuner::hardwareThreads()));
  const ScheduleChoice schedule = scheduleFromFlags(flags.schedule);
  Candidate candidate;  // the balance follows
  candidate.batch = batchFromFlags(flags.model, model);
  candidate.chunks = flags.chunks;
  candidate.checkpoint = parseFlag("--checkpoint", [&] { return parseCheckpoint(flags.checkpoint); });
  candidate.schedule = schedule.kind;
  candidate.stagesPerDevice = schedule.stagesPerDevice;
  const std::int64_t batch = candidate.batch;
  if (flags.chunks <= 0) throw UsageError("--chunks must be positive, got " + std::to_string(flags.chunks));
  if (flags.chunks > batch) {
    throw UsageError("--chunks " + std::to_string(flags.chunks) + " exceeds --batch " + std::to_string(batch) +
                     ": every micro-batch needs at least one sample");
  }
  if (flags.steps <= 0) throw UsageError("--steps must be positive, got " + std::to_string(flags.steps));
  if (flags.warmup < 0) throw UsageError("--warmup must not be negative, got " + std::to_string(flags.warmup));
  checkScheduleShape(schedule, devices, batch, flags.chunks);

  std::ostream& log = flags.json ? std::cerr : std::cout;
  candidate.balance = flags.balance == "auto"
                          ? autoBalance(flags, model, candidate, deviceDescs, log)
                          : parseFlag("--balance", [&] { return parseBalance(flags.balance); }, " (or auto)");
  checkScheduleShape(schedule, candidate.balance, batch, flags.chunks, devices, "--devices " + flags.devices);
  TrainingOptions options;
  options.devices = torchDevices(deviceDescs);
  options.balance = candidate.balance;
  options.schedule = candidate.schedule;
  options.stagesPerDevice = candidate.stagesPerDevice;
  options.chunks = candidate.chunks;
  options.checkpoint = candidate.checkpoint;
  options.batch = batch;
  options.steps = flags.steps;
  options.warmupSteps = flags.warmup;
  options.learningRate = flags.learningRate;
  options.captureTrace = !flags.tracePath.empty();

  TrainingResult result = trainAndMeasure(model, options);
  Measurement& m = result.measurement;
  if (!flags.tracePath.empty()) {
    result.trace.metadata["model"] = flags.model.model;
    result.trace.metadata["candidate"] = candidate.label();
    result.trace.metadata["devices"] = flags.devices;
    result.trace.metadata["batch"] = std::to_string(batch);
    writeChromeTraceFile(result.trace, flags.tracePath);
    m.tracePath = flags.tracePath;
  }
  if (!result.collectorNote.empty()) log << result.collectorNote << "\n";

  if (flags.json) {
    nlohmann::json out = toJson(m);
    out["candidate"] = toJson(candidate);
    out["model"] = flags.model.model;
    out["devices"] = flags.devices;
    out["schedule"] = scheduleKindName(candidate.schedule);
    out["stages_per_device"] = candidate.stagesPerDevice;
    out["losses"] = result.losses;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} on {}: batch {}, balance {}, chunks {}, checkpoint {}, schedule {}\n",
                           flags.model.model, flags.devices, batch, formatBalance(candidate.balance), candidate.chunks,
                           checkpointName(candidate.checkpoint), candidate.scheduleLabel());
  std::cout << fmt::format("step time: median {} (min {}, max {}) over {} steps after {} warm-up\n",
                           formatDuration(m.stepNsMedian), formatDuration(m.stepNsMin), formatDuration(m.stepNsMax),
                           m.stepNs.size(), m.warmupSteps);
  std::cout << fmt::format("throughput: {:.1f} samples/s\n", m.samplesPerS);
  if (!result.losses.empty()) {
    std::cout << fmt::format("loss: {:.6g} at the first step, {:.6g} at the last ({} steps, warm-up included)\n",
                             result.losses.front(), result.losses.back(), result.losses.size());
  }
  std::cout << "peak memory:";
  for (std::size_t d = 0; d < m.peakBytes.size(); ++d) {
    std::cout << (d == 0 ? " " : ", ") << "device " << d << " " << formatBytes(m.peakBytes[d]);
  }
  std::cout << "\n";
  if (!result.devicePeakBytes.empty()) {
    std::cout << "device peak (whole device, caching allocator):";
    const char* separator = " ";
    for (const auto& [device, bytes] : result.devicePeakBytes) {
      std::cout << separator << device << " " << formatBytes(bytes);
      separator = ", ";
    }
    std::cout << "\n";
  }
  if (!flags.tracePath.empty()) {
    std::cout << "trace: " << flags.tracePath << " (" << result.trace.events.size() << " events)\n";
  }
}

}  // namespace

void addRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* command = app.add_subcommand(
      "run",
      "Train a model on a pipeline (GPipe, 1F1B or interleaved 1F1B) for a few steps: median step time,\n"
      "throughput, the loss of every step, per-device peak memory, and the measured timeline as a Chrome trace.\n"
      "Examples:\n"
      "  pipeprof run --model mlp --devices cpu,cpu --balance 7,8 --chunks 4 --batch 64 --trace run.json\n"
      "  pipeprof run --model mlp --devices cpu,cpu --balance 7,8 --chunks 4 --schedule 1f1b\n"
      "  pipeprof run --model mlp --devices cpu,cpu --balance 4,4,4,3 --chunks 4 --schedule interleaved \\\n"
      "      --stages-per-device 2      # 4 stages: 0 and 2 on the first device, 1 and 3 on the second");
  addModelFlags(*command, flags->model);
  command->get_option("--threads")->description(
      "Intra-op threads of LibTorch and OpenBLAS (default: max(1, cores / devices), as the sweep)");
  command->add_option("--devices", flags->devices,
                      "the pipeline devices, e.g. cpu,cpu or cuda:0,cuda:1; stage j runs on device j mod devices")
      ->capture_default_str();
  command->add_option("--balance", flags->balance,
                      "layers per stage (devices x stages-per-device entries), e.g. 3,5; auto: the simulator's best "
                      "for these devices, schedule, chunks, mode")
      ->capture_default_str();
  command->add_option("--chunks", flags->chunks, "micro-batches per mini-batch")->capture_default_str();
  command->add_option("--checkpoint", flags->checkpoint, "always | except_last | never")->capture_default_str();
  addScheduleFlags(*command, flags->schedule);
  command->add_option("--steps", flags->steps, "measured training steps")->capture_default_str();
  command->add_option("--warmup", flags->warmup, "untimed warm-up steps before them")->capture_default_str();
  command->add_option("--lr", flags->learningRate, "SGD learning rate")->capture_default_str();
  command->add_option("--trace", flags->tracePath, "write the measured timeline (Chrome trace JSON) here");
  command->add_option("--profile", flags->profilePath, "profile for --balance auto (default: measure one now)");
  command->add_flag("--json", flags->json, "print one JSON object (the measurement) instead of text");
  command->callback([flags] { runRun(*flags); });
}

}  // namespace pipeprof::cli
