// Tests of cli/comparison_table: the rows and summary lines printed by sweep and compare.
#include "comparison_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

namespace pipeprof::cli {
namespace {

CandidateResult measured(std::vector<std::int64_t> balance, std::int64_t rank, TimeNs predictedNs, TimeNs measuredNs,
                         Bytes predictedPeak, Bytes measuredPeak) {
  CandidateResult result;
  result.candidate.balance = std::move(balance);
  result.candidate.chunks = 2;
  result.candidate.checkpoint = Checkpoint::Never;
  result.candidate.batch = 8;
  result.predictedRank = rank;
  result.prediction.iterationNs = predictedNs;
  result.prediction.samplesPerS = 8e9 / static_cast<double>(predictedNs);
  result.prediction.peakBytes = {predictedPeak, predictedPeak / 2};
  result.status = CandidateStatus::Measured;
  Measurement measurement;
  measurement.stepNs = {measuredNs};
  measurement.stepNsMedian = measurement.stepNsMin = measurement.stepNsMax = measuredNs;
  measurement.samplesPerS = 8e9 / static_cast<double>(measuredNs);
  measurement.peakBytes = {measuredPeak / 2, measuredPeak};
  result.measurement = measurement;
  return result;
}

Report sampleReport() {
  Report report;
  report.environment.model = "mlp";
  report.environment.batch = 8;
  report.candidates.push_back(measured({1, 3}, 2, 200'000'000, 190'000'000, 2048, 2048));
  report.candidates.push_back(measured({2, 2}, 1, 100'000'000, 110'000'000, 1000, 1100));
  CandidateResult predictedOnly;
  predictedOnly.candidate.balance = {3, 1};
  predictedOnly.candidate.batch = 8;
  predictedOnly.predictedRank = 3;
  predictedOnly.prediction.iterationNs = 300'000'000;
  predictedOnly.notMeasuredReason = "not selected by --measure top:2";
  report.candidates.push_back(predictedOnly);
  report.complete = true;
  report.updateSuggestion();
  return report;
}

TEST(PrintComparison, RowsByPredictedRankWithErrorsAndMeasuredRank) {
  std::ostringstream out;
  printComparison(sampleReport(), out);
  const std::string text = out.str();
  const std::size_t first = text.find("[2,2] x2 never");
  const std::size_t second = text.find("[1,3] x2 never");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_NE(text.find("-9.1%"), std::string::npos) << text;  // 100 ms vs 110 ms
  EXPECT_NE(text.find("+5.3%"), std::string::npos) << text;  // 200 ms vs 190 ms
  EXPECT_EQ(text.find("[3,1]"), std::string::npos) << "predicted-only rows are hidden by default";
  EXPECT_NE(text.find("(1 more candidates predicted only"), std::string::npos) << text;
}

TEST(PrintComparison, AllCandidatesListsPredictedOnlyWithReason) {
  std::ostringstream out;
  ComparisonOptions options;
  options.allCandidates = true;
  printComparison(sampleReport(), out, options);
  EXPECT_NE(out.str().find("predicted (not selected by --measure top:2)"), std::string::npos) << out.str();
}

TEST(PrintSummary, MapeSpearmanAndSuggestion) {
  std::ostringstream out;
  printSummary(sampleReport(), out);
  const std::string text = out.str();
  // Step errors 9.09% and 5.26% -> 7.2%; peak errors 9.09% and 0% -> 4.5%.
  EXPECT_NE(text.find("step-time MAPE:           7.2%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("step-time bias:           -1.9%\n"), std::string::npos) << text;  // (-9.09 + 5.26) / 2
  EXPECT_NE(text.find("  before the drift factor n/a\n"), std::string::npos) << text;    // none kept
  EXPECT_NE(text.find("peak-memory MAPE:         4.5%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Spearman (pred vs meas):  1.000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("best measured:            [2,2] x2 never"), std::string::npos) << text;
  EXPECT_NE(text.find("agree:                    yes\n"), std::string::npos) << text;
}

TEST(PrintSummary, ASweepThatMeasuredNothingComparesNothing) {
  // `sweep --measure none`: no "agree: no" and no word of a drift factor measured on references.
  Report report = sampleReport();
  for (CandidateResult& result : report.candidates) {
    result.measurement.reset();
    result.status = CandidateStatus::Predicted;
  }
  report.calibrationDrift = {{"factor", 1.0}};
  report.updateSuggestion();
  std::ostringstream out;
  printSummary(report, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("measured candidates:      0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  before the drift factor n/a\n"), std::string::npos) << text;
  EXPECT_NE(text.find("agree:                    n/a (nothing measured)\n"), std::string::npos) << text;
  // The table lists the best predicted instead of no row at all.
  std::ostringstream table;
  printComparison(report, table);
  EXPECT_NE(table.str().find("[2,2] x2 never"), std::string::npos) << table.str();
  EXPECT_EQ(table.str().find("more candidates predicted only"), std::string::npos) << table.str();
}

TEST(PrintSummary, SaysWhatTheRunOffLeftOfTheRanking) {
  Report report = sampleReport();  // the best, [2,2], measured at 100 ms; [1,3] at 200 ms
  report.candidates[1].measurement->addRound({100'000'000}, {}, 8);
  report.candidates[1].measurement->rounds = 2;
  report.candidates[1].measurement->runOffRounds = 1;
  std::ostringstream apart;
  printSummary(report, apart);
  EXPECT_NE(
      apart.str().find("ranking:                  a run-off measured 1 candidates up to 1 more round(s) each; the "
                       "best measured now stands apart\n"),
      std::string::npos)
      << apart.str();
  report.candidates[0].measurement->addRound({90'000'000}, {}, 8);  // [1,3]'s rounds now reach [2,2]'s
  std::ostringstream tied;
  printSummary(report, tied);
  EXPECT_NE(tied.str().find("a run-off measured 1 candidates up to 1 more round(s) each; the best measured is not "
                            "told apart from 1 other candidate(s)"),
            std::string::npos)
      << tied.str();
  EXPECT_EQ(summaryJson(report)["run_off_candidates"], 1);
}

TEST(PrintComparison, SaysHowFarTheMachineMovedDuringEachCandidatesRounds) {
  Report report = sampleReport();
  report.candidates[0].measurement->machineSlowdown = 1.12;
  report.candidates[1].measurement->machineSlowdown = 0.98;
  std::ostringstream out;
  printComparison(report, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("measured (machine 12% slow during its rounds)"), std::string::npos) << text;
  EXPECT_EQ(text.find("2% fast"), std::string::npos) << "within kNotableSlowdown: " << text;
  EXPECT_NE(text.find("the candidates' rounds ran at 0.98-1.12x the measuring's average time"), std::string::npos)
      << text;
}

TEST(PrintComparison, ScheduleColumnNamesEverySchedule) {
  Report report = sampleReport();
  report.candidates[0].candidate.schedule = ScheduleKind::OneFOneB;
  CandidateResult interleaved = measured({1, 1, 1, 1}, 3, 150'000'000, 160'000'000, 900, 1000);
  interleaved.candidate.schedule = ScheduleKind::Interleaved;
  interleaved.candidate.stagesPerDevice = 2;
  report.candidates.push_back(interleaved);
  report.updateSuggestion();
  std::ostringstream out;
  printComparison(report, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("candidate                schedule      "), std::string::npos) << text;
  // Each row: the candidate column (24 wide), then the schedule.
  EXPECT_NE(text.find("[2,2] x2 never           gpipe         "), std::string::npos) << text;
  EXPECT_NE(text.find("[1,3] x2 never           1f1b          "), std::string::npos) << text;
  EXPECT_NE(text.find("[1,1,1,1] x2 never       interleaved v2"), std::string::npos) << text;
}

TEST(PrintComparison, AnOldReportWithoutScheduleFieldsShowsGpipe) {
  // A report written before schedules existed: its candidates carry no "schedule" and no
  // "stages_per_device".
  nlohmann::json json = toJson(sampleReport());
  for (nlohmann::json& candidate : json.at("candidates")) {
    candidate.at("candidate").erase("schedule");
    candidate.at("candidate").erase("stages_per_device");
  }
  const Report old = reportFromJson(json, "old.json");
  std::ostringstream out;
  printComparison(old, out);
  EXPECT_NE(out.str().find("[2,2] x2 never           gpipe"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[1,3] x2 never           gpipe"), std::string::npos) << out.str();
}

TEST(PrintComparison, PeaksArePerPipelineDevice) {
  // An interleaved candidate with 4 stages on 2 devices has 2 peaks; the largest is shown.
  Report report;
  report.environment.batch = 8;
  CandidateResult result = measured({1, 1, 1, 1}, 1, 100'000'000, 100'000'000, 3072, 4096);
  result.candidate.schedule = ScheduleKind::Interleaved;
  result.candidate.stagesPerDevice = 2;
  report.candidates.push_back(result);
  report.complete = true;
  report.updateSuggestion();
  std::ostringstream out;
  printComparison(report, out);
  ASSERT_EQ(result.prediction.peakBytes.size(), 2u);
  EXPECT_NE(out.str().find(formatBytes(3072)), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(formatBytes(4096)), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("-25.0%"), std::string::npos) << out.str();
}

TEST(PrintSummary, BothMapesWhenTheReportKeptItsPredictionsBeforeDrift) {
  Report report = sampleReport();
  report.calibrationDrift = {{"factor", 1.25}, {"references", nlohmann::json::array()}};
  for (CandidateResult& result : report.candidates) {
    result.predictionBeforeDrift = result.prediction;
    result.predictionBeforeDrift->iterationNs = result.prediction.iterationNs * 4 / 5;
  }
  std::ostringstream out;
  printSummary(report, out);
  // Before drift: 80 ms against 110 (-27.3%) and 160 against 190 (-15.8%) -> 21.5%.
  EXPECT_NE(out.str().find("  before the drift factor 21.5% (the sweep scaled every prediction by x1.250"),
            std::string::npos)
      << out.str();
  EXPECT_NEAR(summaryJson(report)["step_time_mape_before_drift_pct"].get<double>(), (300.0 / 11.0 + 300.0 / 19.0) / 2.0,
              1e-9);
}

// [2,2] measured 1100 bytes on device 1 against 1000 predicted: under its late-frees peak of 1200
// it is another device's frees coming late, and the summary says so (nothing where no peak
// passed its prediction, as the sample without late peaks).
TEST(PrintSummary, SaysHowManyPeaksPassedThePredictionAndItsLateFreesPeak) {
  Report report = sampleReport();
  std::ostringstream before;
  printSummary(report, before);
  EXPECT_EQ(before.str().find("peaked over the prediction"), std::string::npos) << before.str();
  report.candidates[0].prediction.peakBytes = {1024, 2048};  // as measured
  report.candidates[0].prediction.latePeakBytes = {1024, 2048};
  report.candidates[1].prediction.peakBytes = {1000, 1000};
  report.candidates[1].prediction.latePeakBytes = {1000, 1200};
  std::ostringstream out;
  printSummary(report, out);
  EXPECT_NE(out.str().find("1 of 2 measured candidates peaked over the prediction on a device, 0 over its peak with "
                           "another device's frees late"),
            std::string::npos)
      << out.str();
  const nlohmann::json summary = summaryJson(report);
  EXPECT_EQ(summary["late_peak_candidates"], 2);
  EXPECT_EQ(summary["peaks_over_prediction"], 1);
  EXPECT_EQ(summary["peaks_over_late_peak"], 0);
}

TEST(SummaryJson, CarriesTheSameFigures) {
  const nlohmann::json summary = summaryJson(sampleReport());
  EXPECT_EQ(summary["measured"], 2);
  EXPECT_NEAR(summary["step_time_mape_pct"].get<double>(), (100.0 / 11.0 + 100.0 / 19.0) / 2.0, 1e-9);
  EXPECT_NEAR(summary["step_time_bias_pct"].get<double>(), (-100.0 / 11.0 + 100.0 / 19.0) / 2.0, 1e-9);
  EXPECT_EQ(summary["best_predicted"], "[2,2] x2 never");
  EXPECT_EQ(summary["agree"], true);
}

}  // namespace
}  // namespace pipeprof::cli
