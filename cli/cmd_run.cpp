// `pipeprof run`: trains a model on a Pipe for a few steps and reports step time, throughput, peaks.
#include "commands.h"
#include "interrupts.h"
#include "output_file.h"
#include "run_plan.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/launch/run_rank_job.h>
#include <pipeprof/profiler/activity_source.h>
#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/tuner/auto_balance.h>
#include <pipeprof/tuner/environment_info.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <numeric>
#include <string>

namespace pipeprof::cli {

namespace {

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
  const tuner::FastestBalance fastest =
      tuner::fastestBalance(profile, shape, static_cast<std::int64_t>(devices.size()), devices.front().typeName());
  log << fmt::format("balance auto: chose {} of {} evaluated (predicted step {}, {:.1f} samples/s)\n",
                     formatBalance(fastest.best.candidate.balance), fastest.evaluated,
                     formatDuration(fastest.best.prediction.iterationNs), fastest.best.prediction.samplesPerS);
  return fastest.best.candidate.balance;
}

}  // namespace

RunPlan planRun(const RunFlags& flags, std::ostream& log, bool balanceAutoAllowed) {
  RunPlan plan;
  plan.model = buildModelFromFlags(flags.model);
  Model& model = plan.model;
  launch::RankJob& job = plan.job;
  job.model = flags.model.spec();
  job.devices = parseDevicesFlag(flags.devices);
  const auto devices = static_cast<std::int64_t>(job.devices.size());
  // The sweep's thread policy: the devices' workers share the cores (LibTorch's defaults give each
  // worker a thread per core, and a 2-partition CPU step ran ~10x slower). A rank has its device to itself.
  const std::int64_t sharing = flags.procs > 0 || !balanceAutoAllowed ? 1 : devices;
  setIntraOpThreads(tuner::sweepThreads(flags.model.threads, sharing, tuner::hardwareThreads()));
  Candidate& candidate = job.candidate;  // the balance follows
  candidate.chunks = flags.chunks;
  applyScheduleFlags(flags.schedule, candidate);  // a --schedule-file sets the chunks
  candidate.batch = batchFromFlags(flags.model, model);
  candidate.checkpoint = parseFlag("--checkpoint", [&] { return parseCheckpoint(flags.checkpoint); });
  job.cuptiMode = parseFlag("--cupti-mode", [&] { return parseCuptiMode(flags.cuptiMode); });
  const std::int64_t batch = candidate.batch;
  if (candidate.chunks <= 0) throw UsageError("--chunks must be positive, got " + std::to_string(candidate.chunks));
  if (candidate.chunks > batch) {
    throw UsageError(fmt::format("{} {} exceeds --batch {}: every micro-batch needs at least one sample",
                                 candidate.order ? "the micro-batches of --schedule-file" : "--chunks",
                                 candidate.chunks, batch));
  }
  if (flags.steps <= 0) throw UsageError("--steps must be positive, got " + std::to_string(flags.steps));
  if (flags.warmup < 0) throw UsageError("--warmup must not be negative, got " + std::to_string(flags.warmup));
  if (!(flags.timeoutS > 0))
    throw UsageError("--timeout must be positive seconds, got " + fmt::format("{}", flags.timeoutS));
  checkScheduleShape(candidate, batch, devices);

  if (!flags.splitAt.empty()) {
    if (flags.balance != "auto") throw UsageError("give --balance or --split-at, not both");
    candidate.balance =
        parseFlag("--split-at", [&] { return balanceFromSplitPoints(layerNames(model), flags.splitAt); });
  } else if (flags.balance == "auto") {
    if (candidate.order) {
      throw UsageError("--balance auto searches the generated schedules; give --schedule-file its balance (--balance "
                       "or --split-at, " +
                       std::to_string(candidate.order->stages()) + " stages)");
    }
    if (!balanceAutoAllowed) {
      throw UsageError("--balance auto would have every rank measure its own profile and maybe choose another balance: "
                       "give the ranks --balance or --split-at (pipeprof run --procs N chooses one for them)");
    }
    candidate.balance = autoBalance(flags, model, candidate, job.devices, log);
  } else {
    candidate.balance = parseFlag(
        "--balance", [&] { return parseBalance(flags.balance); }, " (or auto)");
  }
  checkScheduleShape(candidate, batch, devices, "--devices " + flags.devices);
  const auto layers = static_cast<std::int64_t>(model.sequential->size());
  const std::int64_t balanced = std::accumulate(candidate.balance.begin(), candidate.balance.end(), std::int64_t{0});
  if (balanced != layers) {
    throw UsageError(fmt::format("--balance {} covers {} layers but {} has {}: the entries must sum to {} (pipeprof "
                                 "models lists the layers)",
                                 formatBalance(candidate.balance), balanced, flags.model.model, layers, layers));
  }
  torchDevices(job.devices);  // present: CUDA available, indices in range
  job.steps = flags.steps;
  job.warmupSteps = flags.warmup;
  job.optimizer = optimizerFromFlags(flags.trainingStep);
  job.precision = precisionFromFlags(flags.trainingStep);
  requirePrecisionDevices(job.precision, job.devices);
  job.tracePath = flags.tracePath;
  job.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeoutS * 1000.0));
  job.cpuBinding = flags.cpuBind == "cores" ? launch::CpuBinding::Cores : launch::CpuBinding::None;
  return plan;
}

void printRun(const RunFlags& flags, const RunPlan& plan, const Measurement& m, const std::vector<double>& losses,
              const nlohmann::json& extra, std::ostream& out) {
  const Candidate& candidate = plan.job.candidate;
  if (flags.json) {
    nlohmann::json json = toJson(m);
    json["candidate"] = toJson(candidate);
    json["model"] = flags.model.model;
    json["devices"] = flags.devices;
    json["schedule"] = scheduleKindName(candidate.schedule);
    json["stages_per_device"] = candidate.stagesPerDevice;
    json["optimizer"] = toJson(plan.job.optimizer);
    json["precision"] = precisionName(plan.job.precision);
    json["losses"] = losses;
    json.update(extra);
    out << json.dump(2) << "\n";
    return;
  }
  out << fmt::format("{} on {}: batch {}, balance {}, chunks {}, checkpoint {}, schedule {}\n", flags.model.model,
                     flags.devices, candidate.batch, formatBalance(candidate.balance), candidate.chunks,
                     checkpointName(candidate.checkpoint), candidate.orderLabel());
  out << "optimizer: " << describeOptimizer(plan.job.optimizer) << ", precision " << precisionName(plan.job.precision)
      << "\n";
  out << fmt::format("step time: median {} (min {}, max {}) over {} steps after {} warm-up\n",
                     formatDuration(m.stepNsMedian), formatDuration(m.stepNsMin), formatDuration(m.stepNsMax),
                     m.stepNs.size(), m.warmupSteps);
  out << fmt::format("throughput: {:.1f} samples/s\n", m.samplesPerS);
  if (!losses.empty()) {
    out << fmt::format("loss: {:.6g} at the first step, {:.6g} at the last ({} steps, warm-up included)\n",
                       losses.front(), losses.back(), losses.size());
  }
  out << "peak memory:";
  for (std::size_t d = 0; d < m.peakBytes.size(); ++d) {
    out << (d == 0 ? " " : ", ") << "device " << d << " " << formatBytes(m.peakBytes[d]);
  }
  out << "\n";
}

namespace {

void runThreaded(const RunFlags& flags) {
  std::ostream& log = flags.json ? std::cerr : std::cout;
  RunPlan plan = planRun(flags, log, /*balanceAutoAllowed=*/true);
  TrainingOptions options = launch::trainingOptions(plan.job);
  options.stop = interruptToken();
  if (plan.job.cpuBinding == launch::CpuBinding::Cores) {
    options.workerCpus = launch::cpuShares(options.devices.size());
    std::vector<std::string> lists;
    for (const std::vector<int>& cpus : options.workerCpus) lists.push_back(launch::formatCpuList(cpus));
    log << (lists.empty() ? std::string("workers: sharing the CPUs (fewer CPUs than devices)\n")
                          : fmt::format("workers: device by device on CPU {}\n", fmt::join(lists, "; ")));
  }
  TrainingResult result;
  try {
    result = trainAndMeasure(plan.model, options);
  } catch (const TrainingStopped&) {
    throw Interrupted("interrupted after a step, nothing was written");
  }
  Measurement& m = result.measurement;
  if (!flags.tracePath.empty()) {
    result.trace.metadata["model"] = flags.model.model;
    result.trace.metadata["candidate"] = plan.job.candidate.label();
    result.trace.metadata["devices"] = flags.devices;
    result.trace.metadata["batch"] = std::to_string(plan.job.candidate.batch);
    writeChromeTraceFile(result.trace, flags.tracePath);
    m.tracePath = flags.tracePath;
  }
  if (!result.collectorNote.empty()) log << result.collectorNote << "\n";
  printRun(flags, plan, m, result.losses, nlohmann::json::object(), std::cout);
  if (flags.json) return;
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

void runRun(RunFlags flags) {
  if (!flags.tracePath.empty()) checkOutputFile("--trace", flags.tracePath);
  if (!flags.cpuBind.empty() && flags.cpuBind != "cores" && flags.cpuBind != "none") {
    throw UsageError("--cpu-bind must be cores or none, got '" + flags.cpuBind + "'");
  }
  if (flags.procs > 0 && !flags.devicesGiven) {
    flags.devices = "cpu";
    for (int r = 1; r < flags.procs; ++r) flags.devices += ",cpu";
  }
  if (rankEnvironmentFromProcess()) {
    if (flags.procs > 0) throw UsageError("--procs starts the ranks itself; a rank (RANK is set) takes no --procs");
    runAsRank(flags);
  } else if (flags.procs > 0) {
    runLaunchedRanks(flags);
  } else {
    runThreaded(flags);
  }
}

}  // namespace

void addRunCommand(CLI::App& app) {
  auto [command, flags] = addCommand<RunFlags>(
      app, "run",
      {"Train a model on a pipeline (GPipe, 1F1B, interleaved 1F1B, zero bubble or a schedule file) for a few\n"
       "steps: median step time, throughput, the loss of every step, per-device peak memory, and the measured\n"
       "timeline as a Chrome trace.",
       {"pipeprof run --model mlp --devices cpu,cpu --balance 7,8 --chunks 4 --batch 64 --trace run.json",
        "pipeprof run --model mlp --devices cpu,cpu --balance 7,8 --chunks 4 --schedule 1f1b",
        "pipeprof run --model mlp --devices cpu,cpu --balance 4,4,4,3 --chunks 4 --schedule interleaved \\\n"
        "      --stages-per-device 2      # 4 stages: 0 and 2 on the first device, 1 and 3 on the second",
        "pipeprof run --model mlp --procs 2 --balance 7,8 --schedule 1f1b   # one process per stage",
        "RANK=0 WORLD_SIZE=2 MASTER_ADDR=host0 MASTER_PORT=29500 pipeprof run --devices cpu,cpu --balance 7,8 ..."}},
      runRun);
  addModelFlags(command, flags.model,
                "LibTorch's intra-op threads; OpenBLAS stays on one (default: max(1, cores / devices), as the sweep)");
  addDevicesFlag(command, flags.devices,
                 "; stage j runs on device j mod devices (with --procs or as a rank: device r is rank r's; default "
                 "with --procs N: N CPUs)")
      ->each([&given = flags.devicesGiven](const std::string&) { given = true; });
  command
      .add_option("--balance", flags.balance,
                  "layers per stage (devices x stages-per-device entries), e.g. 3,5; auto: the simulator's best "
                  "for these devices, schedule, chunks, mode")
      ->capture_default_str();
  command.add_option("--split-at", flags.splitAt,
                     "layer names where a new stage begins, e.g. block2,block4 (instead of --balance; "
                     "pipeprof models lists the layers)");
  command.add_option("--chunks", flags.chunks, "micro-batches per mini-batch")->capture_default_str();
  command.add_option("--checkpoint", flags.checkpoint, "always | except_last | never")->capture_default_str();
  addScheduleFlags(command, flags.schedule);
  addScheduleFileFlag(command, flags.schedule);
  command.add_option("--steps", flags.steps, "measured training steps")->capture_default_str();
  command.add_option("--warmup", flags.warmup, "untimed warm-up steps before them")->capture_default_str();
  addTrainingStepFlags(command, flags.trainingStep);
  command.add_option("--trace", flags.tracePath, "write the measured timeline (Chrome trace JSON) here");
  command
      .add_option("--cupti-mode", flags.cuptiMode,
                  "with --trace on CUDA: cheap (kernels, copies, memsets with queue times; no API records) or "
                  "exact (also the API records of the launch calls)")
      ->capture_default_str();
  command.add_option("--profile", flags.profilePath, "profile for --balance auto (default: measure one now)");
  command.add_flag("--json", flags.json, "print one JSON object (the measurement) instead of text");
  addProcsFlags(command, flags.procs, flags.timeoutS,
                "run one process per pipeline device on this host (c10d: Gloo on CPU, NCCL on CUDA), started and "
                "watched by this one; as torchrun does across hosts, see the README",
                "multi-process: seconds a rank waits for another before the run stops, naming it");
  command.add_option("--cpu-bind", flags.cpuBind,
                     "cores (each pipeline device on CPUs of its own, split evenly in blocks: a rank of this host, "
                     "or a device's worker thread; the default with --procs) or none (the default for threads "
                     "and as a torchrun rank)");
}

}  // namespace pipeprof::cli
