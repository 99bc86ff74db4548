// `pipeprof profile`: measures each layer of a model on a device into a pipeprof.profile/v1 file.
#include "commands.h"
#include "model_options.h"
#include "output_file.h"
#include "training_step_options.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/torch_environment.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace pipeprof::cli {

namespace {

struct ProfileFlags {
  ModelFlags model;
  std::string device = "cpu";
  std::string microBatches;  ///< empty: the batch divided by 1, 2, 4 and 8
  std::string output;
  std::string timeBudget = "10s";
  std::int64_t minRuns = 1;
  std::int64_t warmupRuns = 2;
  TrainingStepFlags trainingStep;
};

/// The sizes a GPipe run of the batch with 1, 2, 4 or 8 chunks gives its micro-batches.
std::vector<std::int64_t> defaultSizes(std::int64_t batch) {
  std::set<std::int64_t> sizes;
  for (std::int64_t chunks : {1, 2, 4, 8}) sizes.insert((batch + chunks - 1) / chunks);
  return {sizes.begin(), sizes.end()};
}

void printSummary(const Profile& profile, std::ostream& out) {
  const std::int64_t largest = profile.layers.empty() || profile.layers.front().costs.empty()
                                   ? 0
                                   : profile.layers.front().costs.back().microBatch;
  const ProfileEnvironment& environment = profile.environment;
  out << fmt::format("{} on {} ({}, {} threads, LibTorch {}), {}, {}, at micro-batch {}:\n", environment.model,
                     environment.deviceType, environment.deviceName, environment.threads, environment.torchVersion,
                     precisionName(environment.precision), describeOptimizer(environment.optimizer), largest);
  out << fmt::format("  {:>3}  {:<16} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}\n", "#", "layer",
                     "params", "forward", "no graph", "backward", "output", "saved", "fwd space", "bwd space");
  for (std::size_t L = 0; L < profile.layers.size(); ++L) {
    const LayerProfile& layer = profile.layers[L];
    const CostSample& c = layer.costs.back();
    out << fmt::format("  {:>3}  {:<16} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11}\n", L, layer.name,
                       formatBytes(layer.paramBytes), formatDuration(c.forwardNs),
                       formatDuration(c.forwardWithoutGraphNs()), formatDuration(c.backwardNs),
                       formatBytes(c.outputBytes), formatBytes(c.savedBytes), formatBytes(c.forwardWorkspaceBytes),
                       formatBytes(c.backwardWorkspaceBytes));
  }
  for (const SkipProfile& skip : profile.skips) {
    out << fmt::format("  skip {}: layer {} -> {}, {} per sample\n", skip.name, skip.stashLayer, skip.popLayer,
                       formatBytes(skip.bytesPerSample));
  }
  Bytes stateBytes = 0, stepBytes = 0, castBytes = 0;
  TimeNs stepNs = 0;
  for (const LayerProfile& layer : profile.layers) {
    stateBytes += layer.optimizerBytes;
    stepNs += layer.optimizerStepNs;
    stepBytes = std::max(stepBytes, layer.optimizerStepBytes);
    castBytes += layer.castCacheBytes;
  }
  out << fmt::format("  optimizer: state {}, step {} (temporaries up to {}); autocast's cast copies {}\n",
                     formatBytes(stateBytes), formatDuration(stepNs), formatBytes(stepBytes), formatBytes(castBytes));
  const OptimizerAtOnce& atOnce = profile.optimizerAtOnce;
  if (atOnce.measured()) {
    std::vector<std::string> kinds;
    for (const auto& [kind, slowdown] : atOnce.slowdown)
      kinds.push_back(fmt::format("{} {:.2f}x", optimizerName(kind), slowdown));
    out << fmt::format("  {} devices stepping at once (sharing this host's memory): {}\n", atOnce.devices,
                       fmt::join(kinds, ", "));
  }
}

void runProfile(const ProfileFlags& flags) {
  if (!flags.output.empty()) checkOutputFile("-o", flags.output);
  Model model = buildModelFromFlags(flags.model);
  const std::int64_t batch = batchFromFlags(flags.model, model);
  const DeviceDesc device = parseFlag("--device", [&] { return DeviceDesc::parse(flags.device); });
  LayerProfilerOptions options;
  options.device = torchDevice(device);
  // --micro-batches is the same "a,b,c" list of positive integers as a balance.
  options.microBatches = flags.microBatches.empty()
                             ? defaultSizes(batch)
                             : parseFlag(
                                   "--micro-batches", [&] { return parseBalance(flags.microBatches); },
                                   " (expected sizes such as 1,2,4,8)");
  options.timeBudgetSeconds =
      static_cast<double>(parseFlag("--time-budget", [&] { return parseDuration(flags.timeBudget); })) / 1e9;
  if (flags.minRuns <= 0) throw UsageError("--min-runs must be positive, got " + std::to_string(flags.minRuns));
  if (flags.warmupRuns < 0)
    throw UsageError("--warmup-runs must not be negative, got " + std::to_string(flags.warmupRuns));
  options.minRuns = flags.minRuns;
  options.warmupRuns = flags.warmupRuns;
  options.optimizer = optimizerFromFlags(flags.trainingStep);
  options.precision = precisionFromFlags(flags.trainingStep);
  requirePrecisionDevices(options.precision, {device});

  Profile profile = profileModel(model, options);
  profile.environment.model = flags.model.model;  // the name or path the user gave
  if (flags.output.empty()) {
    std::cout << toJson(profile).dump(2) << "\n";
    return;
  }
  writeProfile(profile, flags.output);
  printSummary(profile, std::cout);
  std::cout << "profiled in " << describeProfilingTime(profile.environment.profiling) << "\n";
  std::cout << "wrote " << flags.output << "\n";
}

}  // namespace

void addProfileCommand(CLI::App& app) {
  auto [command, flags] = addCommand<ProfileFlags>(
      app, "profile",
      {"Measure each layer's forward/backward time, output, saved and transient bytes at several micro-batch\n"
       "sizes, plus parameter bytes and skip sizes, into a pipeprof.profile/v1 file.",
       {"pipeprof profile --model mlp --batch 64 --device cpu -o profile.json"}},
      runProfile);
  addModelFlags(command, flags.model);
  command.add_option("--device", flags.device, "device to measure on: cpu or cuda:N")->capture_default_str();
  command.add_option("--micro-batches", flags.microBatches,
                     "micro-batch sizes to sample, e.g. 1,2,4,8 (default: the batch divided by 1, 2, 4 and 8)");
  command.add_option("-o,--output", flags.output, "profile file to write (default: print the JSON)");
  command
      .add_option("--time-budget", flags.timeBudget,
                  "time for the whole profile, e.g. 10s, 500ms; the timed runs get what the other passes leave, and "
                  "where every layer cannot run in it, a layer identical to an earlier one takes that one's times")
      ->capture_default_str();
  command
      .add_option("--min-runs", flags.minRuns,
                  "at least this many runs of the backward whole and as many split, per size, past the budget "
                  "(the memory passes' one each counted)")
      ->capture_default_str();
  command.add_option("--warmup-runs", flags.warmupRuns, "untimed runs before timing, as the budget allows")
      ->capture_default_str();
  addTrainingStepFlags(command, flags.trainingStep);
}

}  // namespace pipeprof::cli
