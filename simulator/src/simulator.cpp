// simulate(): one candidate, validated, through the discrete-event engine.
#include <pipeprof/simulator/simulator.h>

#include "candidate_simulator.h"

namespace pipeprof {

SimulationResult simulate(const Profile& profile, const Cluster& cluster, const Candidate& candidate,
                          const SimulationOptions& options) {
  sim::validateCandidate(profile, cluster, candidate);
  sim::CandidateSimulator simulator(profile, cluster);
  SimulationResult result;
  simulator.simulate(candidate, options.training, options.recordTrace, result);
  return result;
}

}  // namespace pipeprof
