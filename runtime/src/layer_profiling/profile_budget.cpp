// The whole profile's time budget (profile_budget.h).
#include "layer_profiling/profile_budget.h"

#include <algorithm>
#include <chrono>

namespace pipeprof::layer_profiling {

ProfileBudget::ProfileBudget(double budgetSeconds, std::set<std::int64_t> sizes) : sizes_(std::move(sizes)) {
  spent_.budgetSeconds = budgetSeconds;
}

void ProfileBudget::add(const std::string& name, std::int64_t b, double seconds) {
  auto pass =
      std::find_if(spent_.passes.begin(), spent_.passes.end(), [&](const ProfilePass& p) { return p.name == name; });
  if (pass == spent_.passes.end()) pass = spent_.passes.insert(spent_.passes.end(), ProfilePass{name, 0.0});
  pass->seconds += seconds;
  if (b > 0 && name != kTimedRunsPass) untimedSeconds_[b] += seconds;
}

double ProfileBudget::untimedEstimateSeconds(std::int64_t b) const {
  if (untimedSeconds_.empty()) return 0.0;
  // The largest size measured so far, scaled up in proportion: a pass costs at most in
  // proportion to its rows (a fixed part per layer makes a larger size relatively cheaper).
  const auto& [measured, seconds] = *untimedSeconds_.rbegin();
  return seconds * static_cast<double>(b) / static_cast<double>(measured);
}

double ProfileBudget::timedRunsSeconds(std::int64_t b) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  double left = spent_.budgetSeconds - elapsed;
  std::int64_t sizesLeft = 0;
  for (auto it = sizes_.lower_bound(b); it != sizes_.end(); ++it) {
    ++sizesLeft;
    if (*it != b) left -= untimedEstimateSeconds(*it);
  }
  return std::max(0.0, left / static_cast<double>(std::max<std::int64_t>(1, sizesLeft)));
}

void ProfileBudget::recordTimedRuns(std::int64_t runs) {
  spent_.fewestTimedRuns = spent_.fewestTimedRuns == 0 ? runs : std::min(spent_.fewestTimedRuns, runs);
}

}  // namespace pipeprof::layer_profiling
