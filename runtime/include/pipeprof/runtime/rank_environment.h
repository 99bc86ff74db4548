// Where a rank stands in a multi-process world: the torchrun variables, read and checked.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace pipeprof {

/// The launcher's description of this process: torchrun's RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and TORCHELASTIC_USE_AGENT_STORE, set when the
/// launcher hosts the store).
struct RankEnvironment {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localWorldSize = 0;  ///< ranks on this host; 0 when the launcher does not say
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  bool externalStore = false;  ///< the launcher hosts the TCPStore: rank 0 only connects
};

/// Reads the variables through `lookup` (getenv in the CLI, a map in tests). nullopt when
/// RANK and WORLD_SIZE are both unset (not launched as a rank). Throws std::invalid_argument
/// naming the variable and its value when one is malformed or out of range (RANK >=
/// WORLD_SIZE, a port outside 1..65535), or when only one of RANK and WORLD_SIZE is set.
std::optional<RankEnvironment> rankEnvironmentFrom(const std::function<std::optional<std::string>(const std::string&)>& lookup);

/// This host's name (gethostname), or "localhost" when it has none.
std::string hostName();

/// How a rank appears in traces and messages: "rank 1 (node0, cpu)".
std::string rankLabel(int rank, const std::string& device);

/// rankEnvironmentFrom over the process environment.
std::optional<RankEnvironment> rankEnvironmentFromProcess();

}  // namespace pipeprof
