// How long a measuring round is expected to take (tuner/src/round_pace.h).
#include "round_pace.h"

#include <gtest/gtest.h>

namespace pipeprof::tuner {
namespace {

TEST(RoundPace, BeforeAnyRoundASetupAndOneAndAHalfTimesThePredictedSteps) {
  const RoundPace pace(0.2);
  EXPECT_DOUBLE_EQ(pace.expectedS(1.0), 0.2 + 1.5);
}

TEST(RoundPace, LearnsHowMuchLongerThanPredictedTheRoundsTookBeyondTheirSetups) {
  RoundPace pace(0.2);
  pace.record(2.2, 1.0);  // 2.0 beyond its setup: twice its prediction
  pace.record(1.2, 1.0);  // 1.0: as predicted
  EXPECT_DOUBLE_EQ(pace.expectedS(2.0), 0.2 + 2.0 * 1.5);
}

TEST(RoundPace, NeverExpectsARoundFasterThanPredicted) {
  RoundPace pace(0.5);
  pace.record(0.6, 1.0);
  EXPECT_DOUBLE_EQ(pace.expectedS(1.0), 0.5 + 1.0);
}

}  // namespace
}  // namespace pipeprof::tuner
