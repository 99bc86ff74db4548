// Balance enumeration, the exact min-bottleneck partition and torchgpipe's block-partition heuristic.
#include "balance.h"

#include <pipeprof/simulator/search.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace sim {
namespace {

void checkSizes(std::int64_t layers, std::int64_t stages, const char* what) {
  if (stages < 1) {
    throw std::invalid_argument(std::string(what) + ": stages must be positive, got " + std::to_string(stages));
  }
  if (layers < stages) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(layers) + " layers cannot fill " +
                                std::to_string(stages) + " stages (each needs at least one layer)");
  }
}

void compose(std::int64_t remaining, std::size_t index, Balance& current, std::vector<Balance>& out) {
  if (index + 1 == current.size()) {
    current[index] = remaining;
    out.push_back(current);
    return;
  }
  const auto partsLeft = static_cast<std::int64_t>(current.size() - index - 1);
  for (std::int64_t size = 1; size <= remaining - partsLeft; ++size) {
    current[index] = size;
    compose(remaining - size, index + 1, current, out);
  }
}

}  // namespace

std::vector<Balance> allCompositions(std::int64_t layers, std::int64_t stages) {
  checkSizes(layers, stages, "enumerating balances");
  std::vector<Balance> out;
  const std::int64_t count = countBalances(layers, stages);
  if (count > 50'000'000) {
    throw std::invalid_argument("enumerating balances: " + std::to_string(count) + " balances of " +
                                std::to_string(layers) + " layers into " + std::to_string(stages) +
                                " stages are too many; use Auto");
  }
  out.reserve(static_cast<std::size_t>(count));
  Balance current(static_cast<std::size_t>(stages), 0);
  compose(layers, 0, current, out);
  return out;
}

Balance minBottleneckWithSpeeds(const std::vector<double>& layerCosts, const std::vector<double>& speeds) {
  const auto layers = static_cast<std::int64_t>(layerCosts.size());
  const auto stages = static_cast<std::int64_t>(speeds.size());
  checkSizes(layers, stages, "min-bottleneck balance");
  for (double speed : speeds) {
    if (!(speed > 0.0)) {
      throw std::invalid_argument("min-bottleneck balance: device speeds must be positive, got " +
                                  std::to_string(speed));
    }
  }
  std::vector<double> prefix(layerCosts.size() + 1, 0.0);
  for (std::size_t l = 0; l < layerCosts.size(); ++l) prefix[l + 1] = prefix[l] + layerCosts[l];

  const auto L = static_cast<std::size_t>(layers);
  const auto n = static_cast<std::size_t>(stages);
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][l]: the smallest bottleneck placing the first l layers on the first k stages;
  // cut[k][l]: where stage k-1 starts in that optimum.
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<std::size_t>> cut(n + 1, std::vector<std::size_t>(L + 1, 0));
  best[0][0] = 0.0;
  for (std::size_t k = 1; k <= n; ++k) {
    for (std::size_t l = k; l <= L; ++l) {
      // Scanning s from the largest start keeps earlier stages as long as possible on ties.
      for (std::size_t s = l - 1 + 1; s-- > k - 1;) {
        if (best[k - 1][s] == inf) continue;
        const double cost = std::max(best[k - 1][s], (prefix[l] - prefix[s]) / speeds[k - 1]);
        if (cost < best[k][l]) {
          best[k][l] = cost;
          cut[k][l] = s;
        }
      }
    }
  }
  Balance balance(n, 0);
  std::size_t end = L;
  for (std::size_t k = n; k >= 1; --k) {
    const std::size_t start = cut[k][end];
    balance[k - 1] = static_cast<std::int64_t>(end - start);
    end = start;
  }
  return balance;
}

std::vector<Balance> boundaryNeighbours(const Balance& base) {
  std::vector<Balance> out;
  for (std::size_t b = 0; b + 1 < base.size(); ++b) {
    for (std::int64_t shift : {-2, -1, 1, 2}) {
      Balance moved = base;
      moved[b] += shift;
      moved[b + 1] -= shift;
      if (moved[b] >= 1 && moved[b + 1] >= 1) out.push_back(std::move(moved));
    }
  }
  return out;
}

void sortUnique(std::vector<Balance>& balances) {
  std::sort(balances.begin(), balances.end());
  balances.erase(std::unique(balances.begin(), balances.end()), balances.end());
}

}  // namespace sim

std::int64_t countBalances(std::int64_t layers, std::int64_t stages) {
  if (stages < 1 || layers < stages) return 0;
  // C(layers - 1, stages - 1), saturating at the largest int64.
  const std::int64_t n = layers - 1;
  std::int64_t k = stages - 1;
  if (k > n - k) k = n - k;
  unsigned __int128 result = 1;
  for (std::int64_t r = 1; r <= k; ++r) {
    result = result * static_cast<unsigned __int128>(n - k + r) / static_cast<unsigned __int128>(r);
    if (result > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return static_cast<std::int64_t>(result);
}

std::vector<std::int64_t> minBottleneckBalance(const std::vector<double>& layerCosts, std::int64_t stages) {
  if (stages < 1) {
    throw std::invalid_argument("min-bottleneck balance: stages must be positive, got " + std::to_string(stages));
  }
  return sim::minBottleneckWithSpeeds(layerCosts, std::vector<double>(static_cast<std::size_t>(stages), 1.0));
}

// torchgpipe.balance.blockpartition.solve (after Barany et al., "Block partitions of
// sequences"), rewritten: normalise the costs to [0, 1], start from equal-length blocks, and
// repeatedly move one element into the lightest block from its neighbour towards the heaviest
// block until the heaviest exceeds the lightest by at most 1. Reproduced faithfully, including
// that the heaviest size is re-read only when the heaviest block itself gave an element, that
// the heaviest block is the last one among equals and the lightest the first one among equals.
std::vector<std::int64_t> balanceByTime(const std::vector<double>& layerTimes, std::int64_t stages) {
  if (stages < 1) {
    throw std::invalid_argument("balance_by_time: stages must be positive, got " + std::to_string(stages));
  }
  const auto n = static_cast<std::int64_t>(layerTimes.size());
  if (n < stages) {
    throw std::invalid_argument("balance_by_time: " + std::to_string(n) + " layers are fewer than " +
                                std::to_string(stages) + " stages");
  }
  const double minimum = *std::min_element(layerTimes.begin(), layerTimes.end());
  const double range = *std::max_element(layerTimes.begin(), layerTimes.end()) - minimum;
  std::vector<double> normal(layerTimes.size(), 0.0);
  if (range != 0.0) {
    for (std::size_t l = 0; l < layerTimes.size(); ++l) normal[l] = (layerTimes[l] - minimum) / range;
  }
  const auto k = static_cast<std::size_t>(stages);
  std::vector<std::int64_t> splits(k);
  for (std::size_t x = 0; x + 1 < k; ++x) splits[x] = n / stages * static_cast<std::int64_t>(x + 1);
  splits[k - 1] = n;

  auto blockSize = [&](std::size_t i) {
    const std::int64_t start = i > 0 ? splits[i - 1] : 0;
    double sum = 0.0;
    for (std::int64_t l = start; l < splits[i]; ++l) sum += normal[static_cast<std::size_t>(l)];
    return sum;
  };
  // Python's max()/min() over (size, index) tuples.
  auto heaviest = [&](double& size) {
    std::size_t p = 0;
    size = blockSize(0);
    for (std::size_t i = 1; i < k; ++i) {
      const double s = blockSize(i);
      if (s >= size) {
        size = s;
        p = i;
      }
    }
    return p;
  };
  auto lightest = [&](double& size) {
    std::size_t q = 0;
    size = blockSize(0);
    for (std::size_t i = 1; i < k; ++i) {
      const double s = blockSize(i);
      if (s < size) {
        size = s;
        q = i;
      }
    }
    return q;
  };

  // torchgpipe has no bound; the bound only turns a (theoretical) endless loop into an error.
  const std::int64_t maxMoves = 1'000'000;
  std::int64_t moves = 0;
  while (true) {
    double maxSize = 0.0;
    const std::size_t p = heaviest(maxSize);
    while (true) {
      double minSize = 0.0;
      const std::size_t q = lightest(minSize);
      if (maxSize <= minSize + 1.0) {
        std::vector<std::int64_t> balance(k);
        std::int64_t start = 0;
        for (std::size_t i = 0; i < k; ++i) {
          balance[i] = splits[i] - start;
          start = splits[i];
        }
        return balance;
      }
      std::size_t h = 0;
      if (p < q) {
        h = q - 1;
        splits[h] -= 1;
      } else {
        h = q + 1;
        splits[q] += 1;
      }
      if (++moves > maxMoves) {
        throw std::logic_error("balance_by_time: the block-partition heuristic did not converge");
      }
      if (p == h) break;
    }
  }
}

}  // namespace pipeprof
