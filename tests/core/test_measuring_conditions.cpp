// Tests for measuring_conditions.cpp: rounds that agree, rounds measured again, the references' speed, ties,
// and the machine's speed during each candidate's rounds.
#include <pipeprof/core/measuring_conditions.h>

#include <gtest/gtest.h>

namespace pipeprof {
namespace {

CandidateResult measuredRounds(const std::vector<std::vector<TimeNs>>& rounds, const std::vector<TimeNs>& waits = {}) {
  CandidateResult result;
  result.status = CandidateStatus::Measured;
  Measurement measurement;
  std::size_t step = 0;
  for (const std::vector<TimeNs>& round : rounds) {
    std::vector<TimeNs> roundWaits;
    for (std::size_t s = 0; s < round.size() && !waits.empty(); ++s) roundWaits.push_back(waits.at(step + s));
    step += round.size();
    measurement.addRound(round, {}, 8, static_cast<double>(step), roundWaits);
  }
  result.measurement = measurement;
  return result;
}

TEST(MeasuringConditions, CountsRoundsThatAgreeAndRoundsMeasuredAgainOrContended) {
  Report report;
  report.candidates.push_back(measuredRounds({{100, 100}, {104, 104}}));  // agree (4%)
  report.candidates.push_back(measuredRounds({{100}, {150}}));            // disagree (50%)
  CandidateResult remeasured = measuredRounds({{200}, {202}}, {5, 60});   // round 2 waited 30% of its time
  remeasured.measurement->discardedRounds.push_back({3.0, 400, 0.6});
  report.candidates.push_back(remeasured);
  CandidateResult predicted;
  predicted.measurement = measuredRounds({{1}, {900}}).measurement;  // a partial measurement: not counted
  report.candidates.push_back(predicted);
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  EXPECT_EQ(conditions.measuredCount, 3);
  EXPECT_EQ(conditions.roundsAgreeCount, 2);
  EXPECT_EQ(conditions.remeasuredRounds, 1);
  EXPECT_EQ(conditions.contendedRounds, 1);
  EXPECT_EQ(conditions.referenceRuns, 0);
  EXPECT_FALSE(conditions.referenceRatioMedian.has_value());
}

TEST(MeasuringConditions, TheReferencesRatiosRunByRun) {
  Report report;
  report.calibrationDrift = nlohmann::json::parse(R"J({
    "factor": 1.0,
    "references": [{"chunks": 2, "predicted_ns": 1000, "step_ns": []},
                   {"chunks": 4, "predicted_ns": 2000, "step_ns": []}],
    "timings": [{"chunks": 2, "start_s": 1.0, "step_ns": [900, 1000, 950]},
                {"chunks": 4, "start_s": 2.0, "step_ns": [2600]},
                {"chunks": 2, "start_s": 3.0, "step_ns": [1100]},
                {"chunks": 8, "start_s": 4.0, "step_ns": [1]}]})J");
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  EXPECT_EQ(conditions.referenceRuns, 3) << "a chunk count without a prediction is left out";
  EXPECT_DOUBLE_EQ(*conditions.referenceRatioLow, 0.95);
  EXPECT_DOUBLE_EQ(*conditions.referenceRatioMedian, 1.1);
  EXPECT_DOUBLE_EQ(*conditions.referenceRatioHigh, 1.3);
}

TEST(MeasuringConditions, CandidatesWhoseRoundsOverlapTheBestsAreNotToldApart) {
  Report report;
  report.candidates.push_back(measuredRounds({{100}, {110}}));  // the best: 100-110
  report.candidates.push_back(measuredRounds({{108}, {120}}));  // overlaps
  report.candidates.push_back(measuredRounds({{111}, {112}}));  // just above
  report.candidates.push_back(measuredRounds({{95}, {130}}));   // median 112.5, spans it
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  EXPECT_EQ(conditions.tiedWithBest, (std::vector<std::size_t>{1, 3}));
  EXPECT_DOUBLE_EQ(roundUncertainty(*report.candidates[0].measurement), 5.0 / 105.0);
  EXPECT_DOUBLE_EQ(roundUncertainty(*report.candidates[2].measurement), 0.5 / 111.0) << "a median in ns rounds down";
}

TEST(MeasuringConditions, TheCandidatesARunOffMeasuredAgain) {
  Report report;
  report.candidates.push_back(measuredRounds({{100}, {110}, {104}, {106}}));
  report.candidates.push_back(measuredRounds({{108}, {120}, {109}}));
  report.candidates.push_back(measuredRounds({{130}, {131}}));
  EXPECT_EQ(summarizeMeasuringConditions(report).runOffCandidates, 0);
  report.candidates[0].measurement->runOffRounds = 2;
  report.candidates[1].measurement->runOffRounds = 1;  // one of its run-off rounds cut short by --time
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  EXPECT_EQ(conditions.runOffCandidates, 2);
  EXPECT_EQ(conditions.runOffRounds, 2);
}

TEST(MeasuringConditions, HowFastTheMachineRanDuringEachCandidatesRounds) {
  Report report;
  report.candidates.push_back(measuredRounds({{100}, {104}}));
  EXPECT_FALSE(summarizeMeasuringConditions(report).candidateSlowdownLow.has_value()) << "not known";
  report.candidates[0].measurement->machineSlowdown = 1.08;
  report.candidates.push_back(measuredRounds({{100}, {104}}));
  report.candidates[1].measurement->machineSlowdown = 0.97;
  report.candidates.push_back(measuredRounds({{100}, {104}}));  // not known: left out
  CandidateResult partial;
  partial.measurement = measuredRounds({{100}}).measurement;  // not measured yet: left out
  partial.measurement->machineSlowdown = 1.5;
  report.candidates.push_back(partial);
  const MeasuringConditions conditions = summarizeMeasuringConditions(report);
  EXPECT_DOUBLE_EQ(*conditions.candidateSlowdownLow, 0.97);
  EXPECT_DOUBLE_EQ(*conditions.candidateSlowdownHigh, 1.08);
  EXPECT_EQ(slowdownNote(*report.candidates[0].measurement), "machine 8% slow during its rounds");
  EXPECT_EQ(slowdownNote(*report.candidates[1].measurement), "") << "within kNotableSlowdown";
  report.candidates[1].measurement->machineSlowdown = 0.94;
  EXPECT_EQ(slowdownNote(*report.candidates[1].measurement), "machine 6% fast during its rounds");
  EXPECT_EQ(slowdownNote(*report.candidates[2].measurement), "");
}

}  // namespace
}  // namespace pipeprof
