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
  simulator.simulate(candidate, options.training, options.recordTrace, result);
  return result;
}

std::vector<Bytes> modelStateBytes(const Profile& profile, const Candidate& candidate) {
  Cluster cluster;
  cluster.devices.resize(static_cast<std::size_t>(candidate.pipelineDevices()));
  Candidate unplaced = candidate;
  unplaced.devices.clear();
  sim::validateCandidate(profile, cluster, unplaced);
  const sim::CostModel costs(profile);
  std::vector<Bytes> bytes(static_cast<std::size_t>(candidate.pipelineDevices()), 0);
  std::int64_t first = 0;
  for (std::size_t j = 0; j < candidate.balance.size(); ++j) {
    const std::int64_t end = first + candidate.balance[j];
    bytes[static_cast<std::size_t>(unplaced.deviceOf(static_cast<std::int64_t>(j)))] += costs.staticBytes(first, end);
    first = end;
  }
  return bytes;
}

}  // namespace pipeprof
