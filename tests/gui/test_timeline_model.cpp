// Tests of TimelineModel: lanes from predicted and measured traces, fallbacks and messages.
#include "models/report_document.h"
#include "models/timeline_model.h"

#include "sample.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/simulator/simulator.h>

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
  EXPECT_EQ(model.spanCount(), 2 * (8 + 12 + 4 + 4));  // partition 1 also runs the 4 losses
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

TraceEvent span(const char* name, Phase phase, const char* device, const char* lane, TimeNs startNs, TimeNs durationNs) {
  TraceEvent event;
  event.name = name;
  event.phase = phase;
  event.device = device;
  event.lane = lane;
  event.startNs = startNs;
  event.durationNs = durationNs;
  return event;
}

TEST(TimelineModel, ShowsTheMedianStepOfAMeasuredTraceWithSeveralSteps) {
  Trace trace;
  trace.events.push_back(span("warmup", Phase::Warmup, "host", "host", 0, 1000));
  trace.events.push_back(span("step", Phase::Step, "host", "host", 1000, 300));   // step 1: 300 ns
  trace.events.push_back(span("step", Phase::Step, "host", "host", 1300, 500));   // step 2: 500 ns
  trace.events.push_back(span("step", Phase::Step, "host", "host", 1800, 400));   // step 3: the median
  trace.events.push_back(span("forward(0,0)", Phase::Forward, "cpu:0", "partition 0", 1100, 100));
  trace.events.push_back(span("forward(0,0)", Phase::Forward, "cpu:0", "partition 0", 1850, 120));
  TraceEvent counter;
  counter.kind = EventKind::Counter;
  counter.name = "memory";
  counter.device = "cpu:0";
  counter.startNs = 1500;
  counter.value = 64;
  trace.events.push_back(counter);
  TimelineModel model;
  model.setTraces(std::nullopt, QStringLiteral("none"), trace, {});
  ASSERT_EQ(model.sections().size(), 2u);
  const TimelineSection& measured = model.sections()[1];
  EXPECT_EQ(measured.note, QStringLiteral("step 3 of 3 (median)"));
  EXPECT_EQ(measured.endNs, 400);
  ASSERT_EQ(measured.laneCount, 3);  // cpu:0 partition 0, cpu:0 memory, host
  const TimelineLane& compute = model.lanes()[static_cast<std::size_t>(measured.firstLane)];
  EXPECT_EQ(compute.name, QStringLiteral("partition 0"));
  ASSERT_EQ(compute.spans.size(), 1u);
  EXPECT_EQ(compute.spans[0].startNs, 50);
  EXPECT_EQ(compute.spans[0].durationNs, 120);
  const TimelineLane& memory = model.lanes()[static_cast<std::size_t>(measured.firstLane + 1)];
  ASSERT_TRUE(memory.isCounter);
  ASSERT_EQ(memory.counterPoints.size(), 1u);  // the value at the step's start, carried in
  EXPECT_EQ(memory.counterPoints[0].first, 0);
  EXPECT_EQ(memory.counterPoints[0].second, 64.0);
}

TEST(TimelineModel, InterleavedDevicesShowALanePerStageInStageOrderWithLosses) {
  const std::shared_ptr<const Report> report = test::sampleReportWithInterleaved();
  const Candidate& candidate = report->candidates[10].candidate;  // [2,2,2,2] x4 interleaved v2
  SimulationOptions options;
  options.recordTrace = true;
  const Trace trace = simulate(*report->profile, *report->cluster, candidate, options).trace;
  TimelineModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setTraces(trace, {}, std::nullopt, {});
  std::vector<QString> labels;
  for (const TimelineLane& lane : model.lanes()) {
    if (lane.stage >= 0) labels.push_back(lane.label);
  }
  const QString d0 = QString::fromStdString(report->cluster->devices[0].name);
  const QString d1 = QString::fromStdString(report->cluster->devices[1].name);
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels[0], d0 + QStringLiteral(" · stage 0"));
  EXPECT_EQ(labels[1], d0 + QStringLiteral(" · stage 2"));
  EXPECT_EQ(labels[2], d1 + QStringLiteral(" · stage 1"));
  EXPECT_EQ(labels[3], d1 + QStringLiteral(" · stage 3"));
  int losses = 0;
  for (const TimelineLane& lane : model.lanes()) {
    for (const TimelineSpan& span : lane.spans) {
      if (span.phase != Phase::Loss) continue;
      ++losses;
      EXPECT_EQ(lane.stage, 3);  // on the last stage
    }
  }
  EXPECT_EQ(losses, 4);  // one per micro-batch
}

}  // namespace
}  // namespace pipeprof::gui
