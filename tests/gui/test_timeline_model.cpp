// Tests of TimelineModel: lanes from predicted and measured traces, fallbacks and messages.
#include "models/report_document.h"
#include "models/timeline_model.h"

#include "sample.h"

#include <pipeprof/core/chrome_trace.h>

#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QTemporaryDir>

namespace pipeprof::gui {
namespace {

TEST(TimelineModel, ReadsBothTracesIntoLanesPerDevice) {
  ReportDocument document;
  ASSERT_TRUE(document.open(test::samplePath()));
  TimelineModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.loadCandidate(document, test::kSampleSuggested);
  ASSERT_EQ(model.sections().size(), 2u);
  EXPECT_EQ(model.sections()[0].title, QStringLiteral("Predicted"));
  EXPECT_EQ(model.sections()[1].title, QStringLiteral("Measured"));
  EXPECT_TRUE(model.sections()[0].message.isEmpty());
  EXPECT_TRUE(model.sections()[1].message.isEmpty());
  // Per device: partition lane, copy lane, memory counter.
  EXPECT_EQ(model.sections()[0].laneCount, 6);
  EXPECT_EQ(model.sections()[1].laneCount, 6);
  EXPECT_EQ(model.rowCount(), 12);
  const TimelineLane& first = model.lanes()[0];
  EXPECT_EQ(first.device, QStringLiteral("cpu:0"));
  EXPECT_EQ(first.name, QStringLiteral("partition 0"));
  EXPECT_FALSE(first.isCounter);
  // [5,3] x4 never: 4 forward + 4 backward on partition 0, no recompute.
  EXPECT_EQ(first.spans.size(), 8u);
  EXPECT_EQ(first.spans.front().startNs, 0);
  EXPECT_EQ(first.spans.front().phase, Phase::Forward);
  EXPECT_EQ(first.spans.front().microBatch, 0);
  EXPECT_TRUE(model.lanes()[2].isCounter);
  const Report& report = *document.report();
  EXPECT_EQ(model.sections()[0].endNs, report.candidates[test::kSampleSuggested].prediction.iterationNs);
  EXPECT_EQ(model.endNs(), std::max(model.sections()[0].endNs, model.sections()[1].endNs));
  EXPECT_EQ(model.spanCount(), 2 * (8 + 8 + 4 + 4));
}

TEST(TimelineModel, SimulatesAMissingPredictedTraceAndSaysWhyNothingWasMeasured) {
  ReportDocument document;
  ASSERT_TRUE(document.open(test::samplePath()));
  TimelineModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.loadCandidate(document, 6);  // predicted only, no trace files
  ASSERT_EQ(model.sections().size(), 2u);
  EXPECT_GT(model.sections()[0].laneCount, 0);
  EXPECT_EQ(model.sections()[1].laneCount, 0);
  EXPECT_EQ(model.sections()[1].message, QStringLiteral("Not measured: not in the top 6"));
  model.loadCandidate(document, 5);  // failed
  EXPECT_TRUE(model.sections()[1].message.startsWith(QStringLiteral("Measuring failed: partition 1")));
  model.loadCandidate(document, std::nullopt);
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(TimelineModel, NamesAMissingTraceFile) {
  QTemporaryDir dir;
  Report report = *test::sampleReport();
  report.candidates[0].measurement->tracePath = "gone/measured.json";
  report.profile.reset();  // nothing to simulate from either
  report.candidates[0].prediction.tracePath = "gone/predicted.json";
  const QString path = dir.filePath(QStringLiteral("report.json"));
  writeReport(report, path.toStdString());
  ReportDocument document;
  ASSERT_TRUE(document.open(path));
  TimelineModel model;
  model.loadCandidate(document, 0);
  ASSERT_EQ(model.sections().size(), 2u);
  EXPECT_EQ(model.sections()[0].message, QStringLiteral("Trace file not found: ") + dir.filePath(QStringLiteral("gone/predicted.json")));
  EXPECT_EQ(model.sections()[1].message, QStringLiteral("Trace file not found: ") + dir.filePath(QStringLiteral("gone/measured.json")));
  EXPECT_EQ(model.rowCount(), 0);
}

TEST(TimelineModel, LeavesOutASectionWithNeitherTraceNorMessage) {
  Trace trace;
  TraceEvent event;
  event.name = "forward(0,0)";
  event.device = "cpu:0";
  event.lane = "partition 0";
  event.startNs = 1000;
  event.durationNs = 500;
  event.phase = Phase::Forward;
  trace.events.push_back(event);
  TimelineModel model;
  model.setTraces(trace, {}, std::nullopt, {});
  ASSERT_EQ(model.sections().size(), 1u);
  ASSERT_EQ(model.rowCount(), 1);
  EXPECT_EQ(model.lanes()[0].spans[0].startNs, 0);  // shifted to the trace start
  EXPECT_EQ(model.endNs(), 500);
  EXPECT_EQ(model.index(0, TimelineModel::Busy).data().toString(), QStringLiteral("500 ns"));
}

}  // namespace
}  // namespace pipeprof::gui
