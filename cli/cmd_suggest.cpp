// `pipeprof suggest`: search balances x chunks x checkpoint modes on the simulator and print the best.
#include "cluster_options.h"
#include "commands.h"
#include "model_options.h"
#include "schedule_options.h"
#include "search_flags.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/simulator/simulator.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace pipeprof::cli {
namespace {

struct SuggestFlags {
  ClusterFlags cluster;
  std::int64_t batch = 0;
  std::int64_t pipelineDevices = 0;  ///< p; 0: from the given balances or the cluster
  SearchFlags search;
  std::int64_t top = 5;
  bool json = false;
};

double maxPeak(const Prediction& prediction) {
  Bytes peak = 0;
  for (Bytes bytes : prediction.peakBytes) peak = std::max(peak, bytes);
  return static_cast<double>(peak);
}

nlohmann::json rankedJson(const RankedCandidate& ranked, std::int64_t rank) {
  nlohmann::json json = {{"candidate", toJson(ranked.candidate)},
                         {"label", ranked.candidate.label()},
                         {"schedule", scheduleKindName(ranked.candidate.schedule)},
                         {"stages_per_device", ranked.candidate.stagesPerDevice},
                         {"prediction", toJson(ranked.prediction)}};
  if (rank > 0) json["rank"] = rank;
  if (!ranked.rejection.empty()) json["rejection"] = ranked.rejection;
  return json;
}

void checkFlags(const SuggestFlags& flags) {
  if (flags.batch < 1) throw UsageError("--batch " + std::to_string(flags.batch) + ": give a positive mini-batch size");
  if (flags.top < 1) throw UsageError("--top " + std::to_string(flags.top) + ": give a positive count");
}

/// Every given balance has the stages of p devices with one of the stages per device searched.
void checkGivenBalances(const SuggestFlags& flags, const SearchSpace& space, std::int64_t pipelineDevices) {
  const std::vector<std::int64_t> counts = stageCounts(space, pipelineDevices);
  for (const auto& balance : space.balances) {
    if (std::find(counts.begin(), counts.end(), static_cast<std::int64_t>(balance.size())) != counts.end()) continue;
    const ScheduleListFlags& schedules = flags.search.schedules;
    throw UsageError(fmt::format("--balances {}: balance {} has {} stages but {} devices run {} (devices x the stages "
                                 "per device of --schedules {} --stages-per-device {})",
                                 flags.search.balances, formatBalance(balance), balance.size(), pipelineDevices,
                                 fmt::join(counts, " or "), schedules.schedules, schedules.stagesPerDevice));
  }
}

/// The search, with a note of the schedules it left out; `seconds`: its wall time.
SearchResult timedSearch(const Predictor& predictor, const SearchSpace& space, double& seconds) {
  const auto started = std::chrono::steady_clock::now();
  SearchResult result = predictor.search(space);
  if (!result.leftOut.empty()) {
    const std::string names = scheduleKindList(result.leftOut, "and");
    std::cerr << fmt::format("note: {} {} left out: the profile predates the backward's split into input and "
                             "weight gradients (profile the model again to search them)\n",
                             names, result.leftOut.size() == 1 ? "is" : "are");
  }
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

/// torchgpipe's balance_by_time candidate, its prediction, and its rank among those that fit.
struct ByTime {
  Candidate candidate;
  Prediction prediction;
  std::optional<std::int64_t> rank;
};

/// balance_by_time on per-layer times at the whole batch, with the winner's chunks and mode (or
/// the first of each asked for when nothing fits).
ByTime balanceByTimeOf(const Predictor& predictor, const SearchSpace& space, const SearchResult& result,
                       std::int64_t batch, std::int64_t pipelineDevices) {
  ByTime byTime;
  Candidate& candidate = byTime.candidate;
  candidate.balance = balanceByTime(layerTimesNs(predictor.profile(), batch), pipelineDevices);
  candidate.batch = batch;
  candidate.chunks = result.ranked.empty() ? space.chunks.front() : result.ranked.front().candidate.chunks;
  candidate.checkpoint = result.ranked.empty() ? space.modes.front() : result.ranked.front().candidate.checkpoint;
  byTime.prediction = predictor.predict(candidate).prediction;
  for (std::size_t k = 0; k < result.ranked.size(); ++k) {
    if (result.ranked[k].candidate == candidate) byTime.rank = static_cast<std::int64_t>(k + 1);
  }
  return byTime;
}

void printJson(const Predictor& predictor, const SearchResult& result, const std::vector<RejectionGroup>& groups,
               std::size_t shown, const ByTime& byTime) {
  nlohmann::json ranked = nlohmann::json::array();
  for (std::size_t k = 0; k < shown; ++k)
    ranked.push_back(rankedJson(result.ranked[k], static_cast<std::int64_t>(k + 1)));
  nlohmann::json rejections = nlohmann::json::array();
  for (const RejectionGroup& group : groups) {
    rejections.push_back(
        {{"reason", group.reason}, {"count", group.count}, {"example", rankedJson(*group.example, 0)}});
  }
  nlohmann::json json = {{"calibration", describeCalibration(predictor.calibration())},
                         {"evaluated", result.evaluated},
                         {"fitting_count", static_cast<std::int64_t>(result.ranked.size())},
                         {"rejected_count", static_cast<std::int64_t>(result.rejected.size())},
                         {"simulated_events", result.simulatedEvents},
                         {"ranked", ranked},
                         {"rejections", rejections},
                         {"balance_by_time",
                          {{"candidate", toJson(byTime.candidate)},
                           {"label", byTime.candidate.label()},
                           {"prediction", toJson(byTime.prediction)},
                           {"rank", byTime.rank ? nlohmann::json(*byTime.rank) : nlohmann::json(nullptr)}}}};
  std::cout << json.dump(2) << "\n";
}

/// The best `shown` candidates, the rejections by reason, and balance_by_time.
void printTables(const Predictor& predictor, const SearchResult& result, const std::vector<RejectionGroup>& groups,
                 std::size_t shown, const ByTime& byTime, double seconds) {
  std::cout << fmt::format("Simulated {} candidates in {:.2f} s: {} fit, {} rejected.\n{}\n\n", result.evaluated,
                           seconds, result.ranked.size(), result.rejected.size(),
                           describeCalibration(predictor.calibration()));
  if (shown == 0) {
    std::cout << "No candidate is predicted to fit.\n";
  } else {
    std::cout << fmt::format("{:<5} {:<16} {:<16} {:>6}  {:<12} {:>10} {:>18} {:>11}\n", "rank", "schedule", "balance",
                             "chunks", "checkpoint", "step time", "throughput", "max peak");
    for (std::size_t k = 0; k < shown; ++k) {
      const RankedCandidate& r = result.ranked[k];
      std::cout << fmt::format(
          "{:<5} {:<16} {:<16} {:>6}  {:<12} {:>10} {:>18} {:>11}\n", k + 1, r.candidate.orderLabel(),
          formatBalance(r.candidate.balance), r.candidate.chunks, std::string(checkpointName(r.candidate.checkpoint)),
          formatDuration(r.prediction.iterationNs), fmt::format("{:.1f} samples/s", r.prediction.samplesPerS),
          formatBytes(static_cast<Bytes>(maxPeak(r.prediction))));
    }
  }
  if (!groups.empty()) {
    std::cout << fmt::format("\nRejected {} candidates:\n", result.rejected.size());
    for (const RejectionGroup& group : groups) {
      // A shape rejection's reason is its group's name: said once.
      const bool shape = group.example->prediction.overflowDevices.empty();
      std::cout << fmt::format("  {} x {}, e.g. {}: {}\n", group.count, shape ? "not schedulable" : group.reason,
                               group.example->candidate.label(), group.example->rejection);
    }
  }
  const Prediction& prediction = byTime.prediction;
  std::cout << fmt::format(
      "\ntorchgpipe balance_by_time: {} -> {}: {}, {:.1f} samples/s, max peak {}, {}\n",
      formatBalance(byTime.candidate.balance), byTime.candidate.label(), formatDuration(prediction.iterationNs),
      prediction.samplesPerS, formatBytes(static_cast<Bytes>(maxPeak(prediction))),
      prediction.fits ? (byTime.rank ? "rank " + std::to_string(*byTime.rank) : "fits") : "does not fit");
}

void runSuggest(const SuggestFlags& flags) {
  checkFlags(flags);
  SearchSpace space = searchSpaceFromFlags(flags.search);
  space.batch = flags.batch;

  Profile rawProfile = loadProfileFromFlags(flags.cluster);
  std::int64_t pipelineDevices = flags.pipelineDevices != 0 ? flags.pipelineDevices : devicesOfGivenBalances(space);
  if (pipelineDevices == 0 && flags.cluster.clusterPath.empty() && flags.cluster.devices == 0) {
    throw UsageError("give --cluster, --devices or --pipeline-devices: how many pipeline devices to search");
  }
  const Predictor predictor =
      predictorFromFlags(flags.cluster, std::move(rawProfile), buildClusterFromFlags(flags.cluster, pipelineDevices));
  if (pipelineDevices == 0) pipelineDevices = predictor.cluster().deviceCount();
  if (pipelineDevices < 1) {
    throw UsageError("--pipeline-devices " + std::to_string(pipelineDevices) + ": give a positive count");
  }
  space.devices = pipelineDevices;
  checkGivenBalances(flags, space, pipelineDevices);

  double seconds = 0.0;
  const SearchResult result = timedSearch(predictor, space, seconds);
  const ByTime byTime = balanceByTimeOf(predictor, space, result, flags.batch, pipelineDevices);
  const std::vector<RejectionGroup> groups = groupRejections(result.rejected);
  const auto shown = std::min<std::size_t>(result.ranked.size(), static_cast<std::size_t>(flags.top));
  if (flags.json) {
    printJson(predictor, result, groups, shown, byTime);
  } else {
    printTables(predictor, result, groups, shown, byTime, seconds);
  }
  if (result.ranked.empty()) {
    throw NoAnswer(fmt::format("no candidate is predicted to fit: all {} were rejected ({}); more devices, more "
                               "memory per device, more chunks or --checkpoint always may fit",
                               result.rejected.size(), flags.json ? "\"rejections\" says why" : "see above"));
  }
}

}  // namespace

void addSuggestCommand(CLI::App& app) {
  auto [command, flags] = addCommand<SuggestFlags>(
      app, "suggest",
      {"Search schedules x stages per device x balances x chunks x checkpoint modes on the simulator and print\n"
       "the best candidates, why others were rejected, and torchgpipe's balance_by_time for comparison.",
       {"pipeprof suggest --profile profile.json --devices 4 --batch 32",
        "pipeprof suggest --profile profile.json --cluster cluster.json --batch 64 --chunks 4,8,16 \\\n"
        "      --checkpoint except_last,never --top 10",
        "pipeprof suggest --profile profile.json --devices 2 --device-memory 8GiB --batch 32 \\\n"
        "      --balances \"2,6;4,4\" --json",
        "pipeprof suggest --profile profile.json --devices 2 --batch 32 --schedules 1f1b,interleaved \\\n"
        "      --stages-per-device 2,3"}},
      runSuggest);
  addClusterFlags(command, flags.cluster);
  command.add_option("--batch", flags.batch, "Mini-batch size in samples")->required()->type_name("B");
  command
      .add_option("--pipeline-devices,--partitions", flags.pipelineDevices,
                  "Pipeline devices p, each holding v stages (default: the shortest given balance's length over "
                  "its stages per device, else the number of devices); --partitions is its old name")
      ->type_name("N")
      ->check(atLeastOne("the devices or the given balances' length"));
  addSearchFlags(command, flags.search, "to try");
  command.add_option("--top", flags.top, "How many of the best candidates to print")
      ->capture_default_str()
      ->type_name("N");
  command.add_flag("--json", flags.json, "Print one JSON object instead of the tables");
}

}  // namespace pipeprof::cli
