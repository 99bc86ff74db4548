// search(): enumerate balances x chunks x checkpoint modes, simulate each, rank those that fit.
#include <pipeprof/simulator/search.h>

#include "balance.h"
#include "candidate_simulator.h"
#include "cost_model.h"

#include <pipeprof/core/units.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>

namespace pipeprof {
namespace {

void validateSpace(const Profile& profile, const Cluster& cluster, const SearchSpace& space) {
  if (space.batch < 1) throw std::invalid_argument("search: batch must be positive, got " + std::to_string(space.batch));
  if (space.partitions < 1) {
    throw std::invalid_argument("search: partitions must be positive, got " + std::to_string(space.partitions));
  }
  if (space.partitions > profile.layerCount()) {
    throw std::invalid_argument("search: " + std::to_string(space.partitions) + " partitions need at least as many layers; the profile has " +
                                std::to_string(profile.layerCount()));
  }
  if (space.partitions > cluster.deviceCount()) {
    throw std::invalid_argument("search: " + std::to_string(space.partitions) + " partitions need " +
                                std::to_string(space.partitions) + " devices (partition j on device j); the cluster has " +
                                std::to_string(cluster.deviceCount()));
  }
  if (space.chunks.empty()) throw std::invalid_argument("search: no chunk counts to try; give at least one");
  for (std::int64_t chunks : space.chunks) {
    if (chunks < 1) throw std::invalid_argument("search: chunks must be positive, got " + std::to_string(chunks));
  }
  if (space.modes.empty()) throw std::invalid_argument("search: no checkpoint modes to try; give at least one");
  if (space.enumeration == BalanceEnumeration::Given && space.balances.empty()) {
    throw std::invalid_argument("search: enumeration Given needs at least one balance");
  }
}

template <typename T>
std::vector<T> sortedUnique(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

bool rankedBefore(const RankedCandidate& a, const RankedCandidate& b) {
  if (a.prediction.samplesPerS != b.prediction.samplesPerS) return a.prediction.samplesPerS > b.prediction.samplesPerS;
  return std::tie(a.candidate.chunks, a.candidate.checkpoint, a.candidate.balance) <
         std::tie(b.candidate.chunks, b.candidate.checkpoint, b.candidate.balance);
}

}  // namespace

std::vector<double> layerTimesNs(const Profile& profile, std::int64_t microBatch) {
  std::vector<double> times;
  times.reserve(profile.layers.size());
  for (const LayerProfile& layer : profile.layers) {
    const CostSample cost = layer.costAt(microBatch);
    times.push_back(static_cast<double>(cost.forwardNs + cost.backwardNs));
  }
  return times;
}

std::string rejectionReason(const Cluster& cluster, const std::vector<Bytes>& devicePeakBytes) {
  std::string reason;
  for (std::size_t d = 0; d < devicePeakBytes.size() && d < cluster.devices.size(); ++d) {
    const auto& capacity = cluster.devices[d].memoryBytes;
    if (!capacity || devicePeakBytes[d] <= *capacity) continue;
    if (!reason.empty()) reason += "; ";
    reason += "predicted peak " + formatBytes(devicePeakBytes[d]) + " > " + formatBytes(*capacity) + " on device " +
              std::to_string(d);
  }
  return reason;
}

std::vector<std::vector<std::int64_t>> enumerateBalances(const Profile& profile, const Cluster& cluster,
                                                         const SearchSpace& space) {
  validateSpace(profile, cluster, space);
  const std::int64_t layers = profile.layerCount();
  const std::int64_t n = space.partitions;
  std::vector<sim::Balance> balances;
  switch (space.enumeration) {
    case BalanceEnumeration::Given:
      balances = space.balances;
      for (const auto& balance : balances) {
        if (static_cast<std::int64_t>(balance.size()) != n) {
          throw std::invalid_argument("search: balance " + formatBalance(balance) + " has " +
                                      std::to_string(balance.size()) + " partitions but the space asks for " +
                                      std::to_string(n));
        }
        Candidate probe;
        probe.balance = balance;
        probe.batch = space.batch;
        sim::validateCandidate(profile, cluster, probe);
      }
      break;
    case BalanceEnumeration::All:
      balances = sim::allCompositions(layers, n);
      break;
    case BalanceEnumeration::Auto: {
      if (countBalances(layers, n) <= space.maxExhaustiveBalances) {
        balances = sim::allCompositions(layers, n);
        break;
      }
      std::vector<double> speeds;
      for (std::int64_t j = 0; j < n; ++j) speeds.push_back(cluster.devices[static_cast<std::size_t>(j)].relativeSpeed);
      std::vector<std::int64_t> sizes;
      for (std::int64_t chunks : space.chunks) sizes.push_back(microBatching(space.batch, chunks).chunkSize);
      for (std::int64_t size : sortedUnique(sizes)) {
        const sim::Balance base = sim::minBottleneckWithSpeeds(layerTimesNs(profile, size), speeds);
        auto near = sim::boundaryNeighbours(base);
        balances.push_back(base);
        balances.insert(balances.end(), near.begin(), near.end());
      }
      balances.push_back(balanceByTime(layerTimesNs(profile, space.batch), n));
      break;
    }
  }
  sim::sortUnique(balances);
  return balances;
}

SearchResult search(const Profile& profile, const Cluster& cluster, const SearchSpace& space,
                    const SearchProgress& progress) {
  const std::vector<sim::Balance> balances = enumerateBalances(profile, cluster, space);
  const std::vector<std::int64_t> chunkList = sortedUnique(space.chunks);
  const std::vector<Checkpoint> modes = sortedUnique(space.modes);
  const auto total = static_cast<std::int64_t>(balances.size() * chunkList.size() * modes.size());

  // Profile-level checks (skip layers, cost samples) once; every enumerated balance is valid.
  Candidate probe;
  probe.balance = balances.front();
  probe.batch = space.batch;
  sim::validateCandidate(profile, cluster, probe);

  SearchResult result;
  result.ranked.reserve(static_cast<std::size_t>(total));
  sim::CandidateSimulator simulator(profile, cluster);
  SimulationResult simulated;
  Candidate candidate;
  candidate.batch = space.batch;
  constexpr std::int64_t kProgressEvery = 256;
  if (progress && !progress(0, total)) {
    result.cancelled = true;
    return result;
  }
  for (std::int64_t chunks : chunkList) {
    for (Checkpoint mode : modes) {
      for (const sim::Balance& balance : balances) {
        candidate.balance = balance;
        candidate.chunks = chunks;
        candidate.checkpoint = mode;
        simulator.simulate(candidate, true, false, simulated);
        RankedCandidate ranked;
        ranked.candidate = candidate;
        ranked.prediction = simulated.prediction;
        ++result.evaluated;
        result.simulatedEvents += simulated.eventCount;
        if (ranked.prediction.fits) {
          result.ranked.push_back(std::move(ranked));
        } else {
          ranked.rejection = rejectionReason(cluster, simulator.devicePeakBytes());
          result.rejected.push_back(std::move(ranked));
        }
        if (progress && (result.evaluated % kProgressEvery == 0 || result.evaluated == total) &&
            !progress(result.evaluated, total)) {
          result.cancelled = true;
          break;
        }
      }
      if (result.cancelled) break;
    }
    if (result.cancelled) break;
  }
  std::sort(result.ranked.begin(), result.ranked.end(), rankedBefore);
  return result;
}

}  // namespace pipeprof
