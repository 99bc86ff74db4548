// The search-space flags shared by suggest and sweep: --chunks and --balances lists.
#include "search_flags.h"

#include "commands.h"

#include <pipeprof/core/candidate.h>

#include <sstream>
#include <stdexcept>

namespace pipeprof::cli {

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

void parseBalancesFlag(const std::string& text, SearchSpace& space) {
  if (text == "auto") {
    space.enumeration = BalanceEnumeration::Auto;
    return;
  }
  if (text == "all") {
    space.enumeration = BalanceEnumeration::All;
    return;
  }
  space.enumeration = BalanceEnumeration::Given;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    try {
      space.balances.push_back(parseBalance(item));
    } catch (const std::invalid_argument& error) {
      throw UsageError("--balances " + text + ": expected auto, all or balances separated by ';' (e.g. \"2,6;4,4\"): " +
                       error.what());
    }
  }
  if (space.balances.empty()) throw UsageError("--balances " + text + ": give auto, all or at least one balance");
}

}  // namespace pipeprof::cli
