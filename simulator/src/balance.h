// Balance enumeration and partitioning heuristics (private to the simulator; public entry points in search.h).
#pragma once

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

using Balance = std::vector<std::int64_t>;

/// Every composition of `layers` into `stages` positive parts, in lexicographic order.
/// Throws std::invalid_argument when stages < 1 or layers < stages.
std::vector<Balance> allCompositions(std::int64_t layers, std::int64_t stages);

/// The exact min-bottleneck balance where stage j's cost is its layers' cost sum divided
/// by speeds[j]. Among equally good balances the one whose earlier stages are as long as
/// possible is returned (deterministic). Throws std::invalid_argument on bad sizes.
Balance minBottleneckWithSpeeds(const std::vector<double>& layerCosts, const std::vector<double>& speeds);

/// Balances reachable from `base` by moving one stage boundary by 1 or 2 layers (each
/// part stays >= 1); `base` itself is not included.
std::vector<Balance> boundaryNeighbours(const Balance& base);

/// Sorts lexicographically and removes duplicates.
void sortUnique(std::vector<Balance>& balances);

}  // namespace pipeprof::sim
