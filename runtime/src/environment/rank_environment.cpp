// Where a rank stands in a multi-process world: the torchrun variables, read and checked.
#include <pipeprof/runtime/rank_environment.h>

#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

namespace pipeprof {
namespace {

int parseInt(const std::string& variable, const std::string& text, int lowest, int highest) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < lowest || value > highest) {
    throw std::invalid_argument(variable + " must be an integer in [" + std::to_string(lowest) + ", " +
                                std::to_string(highest) + "], got '" + text + "'");
  }
  return static_cast<int>(value);
}

}  // namespace

std::optional<RankEnvironment> rankEnvironmentFrom(
    const std::function<std::optional<std::string>(const std::string&)>& lookup) {
  const std::optional<std::string> rank = lookup("RANK");
  const std::optional<std::string> worldSize = lookup("WORLD_SIZE");
  if (!rank && !worldSize) return std::nullopt;
  if (!rank || !worldSize) {
    throw std::invalid_argument(
        std::string(rank ? "RANK is set but WORLD_SIZE is not" : "WORLD_SIZE is set but RANK is not") +
        ": a launcher (torchrun) sets both, with MASTER_ADDR and MASTER_PORT");
  }
  RankEnvironment environment;
  environment.worldSize = parseInt("WORLD_SIZE", *worldSize, 1, 1 << 20);
  environment.rank = parseInt("RANK", *rank, 0, environment.worldSize - 1);
  if (auto localRank = lookup("LOCAL_RANK")) environment.localRank = parseInt("LOCAL_RANK", *localRank, 0, 1 << 20);
  if (auto localWorldSize = lookup("LOCAL_WORLD_SIZE")) {
    environment.localWorldSize = parseInt("LOCAL_WORLD_SIZE", *localWorldSize, 1, environment.worldSize);
  }
  if (auto address = lookup("MASTER_ADDR")) {
    if (address->empty())
      throw std::invalid_argument("MASTER_ADDR is set but empty: give rank 0's host name or address");
    environment.masterAddr = *address;
  }
  if (auto port = lookup("MASTER_PORT")) environment.masterPort = parseInt("MASTER_PORT", *port, 1, 65535);
  if (auto agentStore = lookup("TORCHELASTIC_USE_AGENT_STORE")) {
    environment.externalStore = *agentStore == "True" || *agentStore == "true" || *agentStore == "1";
  }
  return environment;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string rankLabel(int rank, const std::string& device) {
  return "rank " + std::to_string(rank) + " (" + hostName() + ", " + device + ")";
}

std::optional<RankEnvironment> rankEnvironmentFromProcess() {
  return rankEnvironmentFrom([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace pipeprof
