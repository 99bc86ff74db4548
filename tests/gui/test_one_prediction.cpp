// The GUI predicts what the report does: its tuning panel and Suggest use the report's profile, cluster and
// calibration.
#include "models/accuracy_model.h"
#include "models/suggest_worker.h"
#include "models/tuning_model.h"
#include "views/tuning_panel.h"

#include "sample.h"

#include <pipeprof/simulator/predictor.h>

#include <gtest/gtest.h>

#include <QSignalSpy>

namespace pipeprof::gui {
namespace {

Calibration sampleCalibration() {
  Calibration calibration;
  calibration.scales[1] = {1.3, 1.2};
  calibration.scales[16] = {1.25, 1.5};
  calibration.deviceSpeeds = {1.0, 0.8};
  calibration.stepOverheadNs = {{1, 1'000'000}, {2, 2'000'000}, {4, 3'000'000}};
  return calibration;
}

constexpr double kDrift = 1.05;

/// The sample report as a sweep writes it now: the raw profile and cluster with a calibration,
/// every candidate's prediction before drift from the Predictor, and the drifted one.
std::shared_ptr<const Report> calibratedReport() {
  Report report = *test::sampleReport();
  const Predictor predictor(*report.profile, *report.cluster, sampleCalibration());
  report.calibration = toJson(sampleCalibration());
  report.calibrationDrift = {{"factor", kDrift}, {"references", nlohmann::json::array()}};
  for (CandidateResult& result : report.candidates) {
    Prediction before = predictor.predict(result.candidate).prediction;
    result.predictionBeforeDrift = before;
    result.prediction.iterationNs = static_cast<TimeNs>(static_cast<double>(before.iterationNs) * kDrift);
  }
  return std::make_shared<const Report>(std::move(report));
}

TEST(OnePrediction, TheTuningPanelPredictsTheReportsPredictionBeforeDrift) {
  const std::shared_ptr<const Report> report = calibratedReport();
  TuningPanel panel;
  panel.setReport(report);
  for (std::size_t index : {std::size_t{0}, std::size_t{3}, test::kSampleOneFOneB}) {
    panel.loadCandidate(index);
    const CandidateResult& result = report->candidates[index];
    EXPECT_EQ(panel.model()->prediction().iterationNs, result.predictionBeforeDrift->iterationNs)
        << result.candidate.label();
    EXPECT_NE(panel.model()->prediction().iterationNs,
              simulate(*report->profile, *report->cluster, result.candidate).prediction.iterationNs)
        << "the calibration changes the prediction";
    EXPECT_TRUE(panel.predictionText().contains(QStringLiteral("after its drift factor (x1.05")))
        << panel.predictionText().toStdString();
  }
  EXPECT_EQ(panel.model()->calibration().stepOverheadNs.size(), 3u);
}

TEST(OnePrediction, SuggestSearchesWithTheSameCalibration) {
  const std::shared_ptr<const Report> report = calibratedReport();
  SuggestWorker worker;
  QSignalSpy finished(&worker, &SuggestWorker::finished);
  SearchSpace space;
  space.batch = 32;
  space.devices = 2;
  space.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space, sampleCalibration()));
  ASSERT_TRUE(finished.wait(20000));
  const SearchResult expected = Predictor(*report->profile, *report->cluster, sampleCalibration()).search(space);
  const SearchResult& result = worker.result();
  ASSERT_EQ(result.ranked.size(), expected.ranked.size());
  for (std::size_t k = 0; k < result.ranked.size(); ++k) {
    EXPECT_EQ(result.ranked[k].candidate, expected.ranked[k].candidate);
    EXPECT_EQ(result.ranked[k].prediction.iterationNs, expected.ranked[k].prediction.iterationNs);
  }
}

TEST(OnePrediction, AReportFromBeforeCalibrationFilesPredictsWithItsStepOverheads) {
  // Its profile and cluster are already calibrated; its calibration adds the overheads only.
  Report report = *test::sampleReport();
  report.calibration = nlohmann::json::parse(R"({"chained": {"micro_batch_scales": [{"micro_batch": 16,
      "forward": 3.0, "backward": 3.0}], "device_speeds": [0.5, 0.5],
      "step_overhead_ns": [{"chunks": 1, "ns": 4000000}]}, "drift": {"factor": 1.1, "references": []}})");
  const auto shared = std::make_shared<const Report>(std::move(report));
  TuningPanel panel;
  panel.setReport(shared);
  panel.loadCandidate(0);
  const CandidateResult& result = shared->candidates[0];
  EXPECT_EQ(panel.model()->prediction().iterationNs,
            simulate(*shared->profile, *shared->cluster, result.candidate).prediction.iterationNs + 4'000'000);
  EXPECT_TRUE(panel.errorText().isEmpty()) << panel.errorText().toStdString();
}

TEST(OnePrediction, AMalformedCalibrationIsShownAndThePanelPredictsFromTheRawProfile) {
  Report report = *test::sampleReport();
  report.calibration = {{"schema", "pipeprof.calibration/v1"}, {"device_speeds", {0}}};
  const auto shared = std::make_shared<const Report>(std::move(report));
  TuningPanel panel;
  panel.setReport(shared);
  EXPECT_TRUE(panel.errorText().contains(QStringLiteral("$.calibration.device_speeds[0]")))
      << panel.errorText().toStdString();
  panel.loadCandidate(0);
  EXPECT_EQ(panel.model()->prediction().iterationNs,
            simulate(*shared->profile, *shared->cluster, shared->candidates[0].candidate).prediction.iterationNs);
}

TEST(OnePrediction, TheAccuracyViewShowsTheMapeBeforeAndAfterDrift) {
  AccuracyModel model;
  model.setReport(calibratedReport());
  const QString calibrated = model.summaryParts().join(QStringLiteral(" · "));
  const AccuracySummary& summary = model.summary();
  ASSERT_TRUE(summary.stepTimeMapeBeforeDriftPct.has_value());
  EXPECT_TRUE(calibrated.contains(
      QStringLiteral("before the drift factor <b>%1 %</b>").arg(*summary.stepTimeMapeBeforeDriftPct, 0, 'f', 1)))
      << calibrated.toStdString();
  EXPECT_TRUE(
      calibrated.contains(QStringLiteral("step-time MAPE <b>%1 %</b>").arg(*summary.stepTimeMapePct, 0, 'f', 1)));
  model.setReport(test::sampleReport());  // written before reports kept predictions before drift
  EXPECT_TRUE(model.summaryParts().join(QStringLiteral(" · ")).contains(QStringLiteral("before the drift factor -")));
}

}  // namespace
}  // namespace pipeprof::gui
