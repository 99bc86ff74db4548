// simulate(): one candidate, validated, through the discrete-event engine.
#include <pipeprof/simulator/simulator.h>

#include "candidate_simulator.h"
#include "cost_model.h"

namespace pipeprof {

SimulationResult simulate(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                          const SimulationOptions& options) {
  sim::validateCandidate(profile, cluster, candidate);
  sim::CandidateSimulator simulator(profile, cluster);
  SimulationResult result;
  simulator.simulate(candidate, options.training, options.recordTrace, options.latePeaks, result);
  return result;
}

std::vector<Bytes> modelStateBytes(const Profile& profile, const Candidate& candidate) {
  Cluster cluster;
  cluster.devices.resize(static_cast<std::size_t>(candidate.pipelineDevices()));
  Candidate unplaced = candidate;
  unplaced.devices.clear();
  sim::validateCandidate(profile, cluster, unplaced);
  const sim::CostModel costs(profile);
  const auto p = static_cast<std::int32_t>(candidate.pipelineDevices());
  std::vector<Bytes> bytes(static_cast<std::size_t>(p), 0);
  std::vector<std::int64_t> firstLayer{0};
  std::vector<std::int32_t> lane;
  for (std::size_t j = 0; j < candidate.balance.size(); ++j) {
    firstLayer.push_back(firstLayer.back() + candidate.balance[j]);
    lane.push_back(static_cast<std::int32_t>(unplaced.deviceOf(static_cast<std::int64_t>(j))));
    bytes[static_cast<std::size_t>(lane.back())] += costs.staticBytes(firstLayer[j], firstLayer[j + 1]);
  }
  // A parameter several layers of one device hold is one copy there.
  std::vector<std::int32_t> laneDevice(static_cast<std::size_t>(p));
  for (std::int32_t d = 0; d < p; ++d) laneDevice[static_cast<std::size_t>(d)] = d;
  sim::SharedGradientCosts shared;
  sim::sharedGradientCosts(profile, cluster, firstLayer, lane, laneDevice, p, /*training=*/false, shared);
  for (std::size_t d = 0; d < bytes.size(); ++d) bytes[d] -= shared.duplicateBytes[d];
  return bytes;
}

}  // namespace pipeprof
