// How long a candidate's measuring round is expected to take, learned from the rounds so far.
#pragma once

#include <algorithm>

namespace pipeprof::tuner {

/// A round is expected to take the calibration's setup of a run (a fresh pipeline, its
/// threads, tracing: CalibratedSetup::runSetupSeconds) plus its predicted steps, warm-up
/// included, times the pace: how much longer than predicted the rounds so far took beyond their
/// setups (kPriorPace before any was timed, never below 1). It covers what a round costs around
/// its steps: writing the report, a traced last round, its predicted twin.
class RoundPace {
 public:
  /// Before any round: a round lasts its setup and 1.5 x its predicted steps.
  static constexpr double kPriorPace = 1.5;

  explicit RoundPace(double setupSeconds) : setupS_(setupSeconds) {}

  /// The seconds a round whose steps are predicted to take `predictedS` is expected to last.
  double expectedS(double predictedS) const {
    const double pace = predictedS_ > 0 ? std::max(1.0, (measuredS_ - rounds_ * setupS_) / predictedS_) : kPriorPace;
    return setupS_ + predictedS * pace;
  }

  /// A round predicted at `predictedS` took `measuredS`, its report writing included.
  void record(double measuredS, double predictedS) {
    measuredS_ += measuredS;
    predictedS_ += predictedS;
    rounds_ += 1.0;
  }

 private:
  double setupS_;
  double measuredS_ = 0.0;
  double predictedS_ = 0.0;
  double rounds_ = 0.0;
};

}  // namespace pipeprof::tuner
