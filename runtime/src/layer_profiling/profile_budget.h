// The whole profile's time budget shared among its passes, and each pass's time.
//
// LayerProfilerOptions::timeBudgetSeconds bounds the whole profile, not only its timed runs.
// Every pass is timed as it runs. The passes the profile cannot do without (the optimizer's,
// and per micro-batch size the memory, skip-gradient and loss passes, and on CUDA the kernels)
// run whatever the budget; the timed runs of each size get an equal share of what those are
// expected to leave: the budget less the time spent so far and the untimed passes of the sizes
// still to come, estimated from the largest size measured so far in proportion to the size.
#pragma once

#include <pipeprof/core/profile.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace pipeprof::layer_profiling {

/// The name of the pass ProfileBudget::timedRunsSeconds shares out.
inline constexpr char kTimedRunsPass[] = "timed runs";

class ProfileBudget {
 public:
  ProfileBudget(double budgetSeconds, std::set<std::int64_t> sizes);

  /// Runs `run()` as pass `name` of micro-batch size `b` (0: of no size), adding its time to
  /// the pass's and, for a size's untimed pass, to the size's.
  template <typename Run>
  auto time(const std::string& name, std::int64_t b, Run run) {
    const Stopwatch watch(*this, name, b);
    return run();
  }

  /// The seconds the timed runs at size `b` may take; the sizes are profiled in ascending order.
  double timedRunsSeconds(std::int64_t b) const;
  /// The runs size `b` recorded, the memory passes' included (the fewest over the sizes is kept).
  void recordTimedRuns(std::int64_t runs);

  /// The budget, the fewest timed runs and every pass's time.
  const ProfilingTime& spent() const { return spent_; }

 private:
  using Clock = std::chrono::steady_clock;
  class Stopwatch {
   public:
    Stopwatch(ProfileBudget& budget, std::string name, std::int64_t b)
        : budget_(budget), name_(std::move(name)), b_(b), start_(Clock::now()) {}
    ~Stopwatch() { budget_.add(name_, b_, std::chrono::duration<double>(Clock::now() - start_).count()); }
    Stopwatch(const Stopwatch&) = delete;
    Stopwatch& operator=(const Stopwatch&) = delete;

   private:
    ProfileBudget& budget_;
    std::string name_;
    std::int64_t b_;
    Clock::time_point start_;
  };

  void add(const std::string& name, std::int64_t b, double seconds);
  double untimedEstimateSeconds(std::int64_t b) const;

  ProfilingTime spent_;
  std::set<std::int64_t> sizes_;
  std::map<std::int64_t, double> untimedSeconds_;  ///< per size, every pass but the timed runs
  Clock::time_point start_ = Clock::now();
};

}  // namespace pipeprof::layer_profiling
