// Small statistics over timings and ratios.
#include <pipeprof/core/statistics.h>

#include <algorithm>
#include <numeric>
#include <utility>

namespace pipeprof {

namespace {

/// The middle value, or the mean of the middle two (integer division for integers); 0 for none.
template <typename T>
T middleOf(std::vector<T> values) {
  if (values.empty()) return T{0};
  const std::size_t n = values.size();
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (n % 2 == 1) return *upper;
  return (*std::max_element(values.begin(), upper) + *upper) / T{2};
}

}  // namespace

TimeNs medianNs(std::vector<TimeNs> samples) { return middleOf(std::move(samples)); }

double median(std::vector<double> values) { return middleOf(std::move(values)); }

std::optional<double> pooledVariance(const std::map<std::int64_t, std::vector<double>>& groups) {
  double sumSquares = 0.0;
  std::size_t degreesOfFreedom = 0;
  for (const auto& [key, values] : groups) {
    if (values.empty()) continue;
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    for (const double value : values) sumSquares += (value - mean) * (value - mean);
    degreesOfFreedom += values.size() - 1;
  }
  if (degreesOfFreedom == 0) return std::nullopt;
  return sumSquares / static_cast<double>(degreesOfFreedom);
}

double shrinkageShare(double priorSd, double noiseVariance) {
  const double prior = priorSd * priorSd;
  return prior / (prior + noiseVariance);
}

}  // namespace pipeprof
