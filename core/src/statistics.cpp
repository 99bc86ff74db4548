// Small statistics over timings.
#include <pipeprof/core/statistics.h>

#include <algorithm>

namespace pipeprof {

TimeNs medianNs(std::vector<TimeNs> samples) {
  if (samples.empty()) return 0;
  const std::size_t n = samples.size();
  const auto upper = samples.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(samples.begin(), upper, samples.end());
  if (n % 2 == 1) return *upper;
  const TimeNs lower = *std::max_element(samples.begin(), upper);
  return (lower + *upper) / 2;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t n = values.size();
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (n % 2 == 1) return *upper;
  return (*std::max_element(values.begin(), upper) + *upper) / 2.0;
}

}  // namespace pipeprof
