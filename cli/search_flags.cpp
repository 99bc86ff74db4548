// The search-space flags shared by suggest, sweep and calibrate: --chunks, --checkpoint, --balances,
// --schedules and --stages-per-device.
#include "search_flags.h"

#include "commands.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>

#include <sstream>
#include <stdexcept>

namespace pipeprof::cli {
namespace {

/// --chunks: comma-separated positive counts ("1,2,4,8").
std::vector<std::int64_t> parseChunksFlag(const std::string& text) {
  std::vector<std::int64_t> chunks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    std::int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 1) {
      throw UsageError("--chunks " + text + ": expected comma-separated positive counts, e.g. 1,2,4,8");
    }
    chunks.push_back(value);
  }
  if (chunks.empty()) throw UsageError("--chunks " + text + ": give at least one chunk count, e.g. 1,2,4,8");
  return chunks;
}

/// --balances: "auto", "all" or balances separated by ';' ("2,6;4,4").
void parseBalancesFlag(const std::string& text, SearchSpace& space) {
  if (text == "auto" || text == "all") {
    space.enumeration = text == "auto" ? BalanceEnumeration::Auto : BalanceEnumeration::All;
    return;
  }
  space.enumeration = BalanceEnumeration::Given;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    try {
      space.balances.push_back(parseBalance(item));
    } catch (const std::invalid_argument& error) {
      throw UsageError("--balances " + text +
                       ": expected auto, all or balances separated by ';' (e.g. \"2,6;4,4\"): " + error.what());
    }
  }
  if (space.balances.empty()) throw UsageError("--balances " + text + ": give auto, all or at least one balance");
}

}  // namespace

void addSearchFlags(CLI::App& command, SearchFlags& flags, const std::string& purpose, bool balances) {
  command.add_option("--chunks", flags.chunks, "Chunk counts " + purpose)->capture_default_str()->type_name("LIST");
  command.add_option("--checkpoint", flags.checkpoint, "Checkpoint modes " + purpose)
      ->capture_default_str()
      ->type_name("LIST");
  if (balances) {
    command
        .add_option("--balances", flags.balances,
                    "auto (all when few, else min-bottleneck and its neighbours), all, or balances such as "
                    "\"2,6;4,4\" (devices x stages per device entries each)")
        ->capture_default_str()
        ->type_name("SPEC");
  }
  command.add_option("--schedules", flags.schedules.schedules, "Schedules " + purpose + ": gpipe, 1f1b, interleaved")
      ->capture_default_str()
      ->type_name("LIST");
  command
      .add_option("--stages-per-device", flags.schedules.stagesPerDevice,
                  "Stages per device " + purpose + "; gpipe and 1f1b always run 1, interleaved each v >= 2 of the list")
      ->capture_default_str()
      ->type_name("LIST");
}

SearchSpace searchSpaceFromFlags(const SearchFlags& flags) {
  SearchSpace space;
  space.chunks = parseChunksFlag(flags.chunks);
  space.modes = parseFlag("--checkpoint", [&] { return parseCheckpointList(flags.checkpoint); });
  parseBalancesFlag(flags.balances, space);
  applyScheduleListFlags(flags.schedules, space);
  return space;
}

}  // namespace pipeprof::cli
