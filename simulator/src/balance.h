// Balance enumeration and partitioning heuristics (private to the simulator; public entry points in search.h).
#pragma once

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

using Balance = std::vector<std::int64_t>;

/// Every composition of `layers` into `partitions` positive parts, in lexicographic order.
/// Throws std::invalid_argument when partitions < 1 or layers < partitions.
std::vector<Balance> allCompositions(std::int64_t layers, std::int64_t partitions);

/// The exact min-bottleneck balance where partition j's cost is its layers' cost sum divided
/// by speeds[j]. Among equally good balances the one whose earlier partitions are as long as
/// possible is returned (deterministic). Throws std::invalid_argument on bad sizes.
Balance minBottleneckWithSpeeds(const std::vector<double>& layerCosts, const std::vector<double>& speeds);

/// Balances reachable from `base` by moving one partition boundary by 1 or 2 layers (each
/// part stays >= 1); `base` itself is not included.
std::vector<Balance> boundaryNeighbours(const Balance& base);

/// Sorts lexicographically and removes duplicates.
void sortUnique(std::vector<Balance>& balances);

}  // namespace pipeprof::sim
