// The search-space flags shared by suggest and sweep: --chunks and --balances lists.
#pragma once

#include <pipeprof/simulator/search.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// Parses --chunks: comma-separated positive counts ("1,2,4,8"). Throws UsageError naming the
/// text and the expected form.
std::vector<std::int64_t> parseChunksFlag(const std::string& text);

/// Fills space.enumeration and space.balances from --balances: "auto", "all" or balances
/// separated by ';' ("2,6;4,4"). Throws UsageError naming the text and the expected form.
void parseBalancesFlag(const std::string& text, SearchSpace& space);

}  // namespace pipeprof::cli
