// How long a measuring round is expected to take (tuner/src/round_pace.h), and when the report
// is rewritten between rounds (tuner/src/report_pace.h).
#include "report_pace.h"
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

TEST(ReportPace, BetweenRoundsEveryIntervalAndAtOnceWhenACandidateFinishes) {
  ReportPace pace;  // the sweep wrote it before measuring, at 0
  EXPECT_FALSE(pace.due(1.0, false));
  EXPECT_TRUE(pace.due(1.0, true));
  EXPECT_TRUE(pace.due(ReportPace::kIntervalS, false));
  pace.wrote(3.0, 3.01);  // a small report: the interval rules
  EXPECT_FALSE(pace.due(3.01 + ReportPace::kIntervalS - 0.1, false));
  EXPECT_TRUE(pace.due(3.01 + ReportPace::kIntervalS, false));
  EXPECT_TRUE(pace.due(3.5, true));
}

TEST(ReportPace, ALargeReportWaitsItsWriteOverTheShareEvenForAFinishedCandidate) {
  ReportPace pace;
  pace.wrote(10.0, 10.5);  // half a second: at most 5% of the measuring means 10 s apart
  const double gapS = 0.5 / ReportPace::kWriteShare;
  EXPECT_FALSE(pace.due(10.5 + gapS - 0.1, true));
  EXPECT_FALSE(pace.due(10.5 + gapS - 0.1, false));
  EXPECT_TRUE(pace.due(10.5 + gapS, true));
  EXPECT_TRUE(pace.due(10.5 + gapS, false));
}

}  // namespace
}  // namespace pipeprof::tuner
