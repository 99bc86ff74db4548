// Tests of tuner/reference_calibration's rounds: every reference once a round, each round reported.
#include <pipeprof/tuner/reference_calibration.h>

#include "four_layer_profile.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipeprof::tuner {
namespace {

using test::fourLayerProfile;

/// Trains nothing: counts the references it is asked for and returns an empty traced run.
class CountingMeasurer : public CandidateMeasurer {
 public:
  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override {
    EXPECT_TRUE(request.traced) << "the calibration fits the references' traces";
    chunks.push_back(candidate.chunks);
    MeasuredRun run;
    run.measurement.addRound(std::vector<TimeNs>(static_cast<std::size_t>(request.steps), 1000), {0, 0},
                             candidate.batch);
    return run;
  }

  std::vector<std::int64_t> chunks;
};

TEST(ReferenceCalibration, EachRoundTrainsEveryReferenceOnceAndIsReported) {
  CountingMeasurer measurer;
  CalibrationRounds rounds;
  rounds.budgetSeconds = 0;  // the minimum rounds only
  rounds.minRounds = 2;
  std::vector<std::int64_t> reported;
  rounds.onRound = [&](std::int64_t round, std::size_t references, double seconds) {
    reported.push_back(round);
    EXPECT_EQ(references, 2U) << "chunks 1 and 4 (8 exceeds the batch)";
    EXPECT_GE(seconds, 0.0);
    EXPECT_EQ(measurer.chunks.size(), 2 * static_cast<std::size_t>(round)) << "reported after the round";
  };
  const Cluster cluster = sweepCluster({DeviceDesc{}, DeviceDesc{}}, std::nullopt);
  const Calibration calibration =
      measureCalibration(measurer, fourLayerProfile(), cluster, 4, {1, 4, 8}, 2, rounds, {gpipeReferenceShape()});
  EXPECT_EQ(reported, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(measurer.chunks, (std::vector<std::int64_t>{1, 4, 1, 4})) << "interleaved rounds";
  EXPECT_EQ(calibration.provenance.rounds, 2);
}

}  // namespace
}  // namespace pipeprof::tuner
