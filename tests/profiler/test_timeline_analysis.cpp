// Tests of the timeline analysis on hand-made traces with exact figures.
#include <pipeprof/profiler/timeline_analysis.h>

#include <gtest/gtest.h>

namespace pipeprof {
namespace {

TraceEvent op(const std::string& name, Phase phase, std::int64_t j, TimeNs start, TimeNs duration, Bytes bytes = 0) {
  TraceEvent e;
  e.name = name;
  e.phase = phase;
  e.partition = j;
  e.device = "cpu:" + std::to_string(j < 0 ? 0 : j);
  e.lane = phase == Phase::Copy ? "copy" : "partition " + std::to_string(j);
  e.startNs = start;
  e.durationNs = duration;
  e.bytes = bytes;
  return e;
}

// Two partitions, two micro-batches, no checkpointing:
//   p0: F0 [0,10) F1 [10,20)                    B1 [50,60) B0 [60,70)
//   p1:           F0 [10,20) F1 [20,30) B1 [30,40) B0 [40,50)
Trace twoStageTrace() {
  Trace t;
  t.metadata["source"] = "predicted";
  t.events = {
      op("forward(0,0)", Phase::Forward, 0, 0, 10),    op("forward(1,0)", Phase::Forward, 0, 10, 10),
      op("backward(1,0)", Phase::Backward, 0, 50, 10), op("backward(0,0)", Phase::Backward, 0, 60, 10),
      op("forward(0,1)", Phase::Forward, 1, 10, 10),   op("forward(1,1)", Phase::Forward, 1, 20, 10),
      op("backward(1,1)", Phase::Backward, 1, 30, 10), op("backward(0,1)", Phase::Backward, 1, 40, 10),
      op("copy(0,0->1)", Phase::Copy, 0, 10, 2, 2000), op("grad-copy(1,1->0)", Phase::Copy, 1, 40, 4, 4000),
  };
  TraceEvent counter;
  counter.kind = EventKind::Counter;
  counter.name = "memory";
  counter.device = "cpu:0";
  counter.value = 123;
  t.events.push_back(counter);
  TraceEvent gemm = op("gemm", Phase::Kernel, -1, 0, 5);
  t.events.push_back(gemm);
  gemm.startNs = 5;
  t.events.push_back(gemm);
  t.events.push_back(op("relu", Phase::Kernel, -1, 1, 20));
  return t;
}

TEST(TimelineAnalysis, BusyIdleAndBubblesPerStage) {
  const TimelineAnalysis a = analyzeTimeline(twoStageTrace());
  EXPECT_EQ(a.source, "predicted");
  EXPECT_EQ(a.steps, 1);
  EXPECT_EQ(a.windowNs, 70);
  EXPECT_EQ(a.iterationNs, 70);
  ASSERT_EQ(a.stages.size(), 2u);
  EXPECT_EQ(a.stages[0].partition, 0);
  EXPECT_EQ(a.stages[0].device, "cpu:0");
  EXPECT_EQ(a.stages[0].ops, 4);
  EXPECT_EQ(a.stages[0].busyNs, 40);
  EXPECT_EQ(a.stages[0].idleNs, 30);
  EXPECT_DOUBLE_EQ(a.stages[0].bubbleFraction, 30.0 / 70.0);
  EXPECT_EQ(a.stages[1].busyNs, 40);
  EXPECT_EQ(a.stages[1].idleNs, 30);
  EXPECT_DOUBLE_EQ(a.bubbleFraction, 30.0 / 70.0);
  EXPECT_EQ(a.counters, 1);
}

TEST(TimelineAnalysis, OpKindsCopiesAndKernels) {
  const TimelineAnalysis a = analyzeTimeline(twoStageTrace());
  ASSERT_EQ(a.opKinds.size(), 4u);
  EXPECT_EQ(a.opKinds[0].kind, "backward");
  EXPECT_EQ(a.opKinds[0].count, 4);
  EXPECT_EQ(a.opKinds[0].totalNs, 40);
  EXPECT_EQ(a.opKinds[0].meanNs, 10);
  EXPECT_EQ(a.opKinds[1].kind, "copy");
  EXPECT_EQ(a.opKinds[1].count, 2);
  EXPECT_EQ(a.opKinds[1].totalNs, 6);
  EXPECT_EQ(a.opKinds[1].meanNs, 3);
  EXPECT_EQ(a.opKinds[2].kind, "forward");
  EXPECT_EQ(a.opKinds[3].kind, "kernel");
  EXPECT_EQ(a.opKinds[3].count, 3);

  ASSERT_EQ(a.copies.size(), 2u);
  EXPECT_EQ(a.copies[0].direction, "0->1");
  EXPECT_EQ(a.copies[0].bytes, 2000);
  EXPECT_DOUBLE_EQ(a.copies[0].bandwidthBytesPerS, 1e12);
  EXPECT_EQ(a.copies[1].direction, "1->0");
  EXPECT_EQ(a.copies[1].count, 1);
  EXPECT_EQ(a.copies[1].bytes, 4000);
  EXPECT_EQ(a.copies[1].totalNs, 4);

  ASSERT_EQ(a.topKernels.size(), 2u);
  EXPECT_EQ(a.topKernels[0].name, "relu");
  EXPECT_EQ(a.topKernels[0].totalNs, 20);
  EXPECT_EQ(a.topKernels[1].name, "gemm");
  EXPECT_EQ(a.topKernels[1].count, 2);
  EXPECT_EQ(a.topKernels[1].totalNs, 10);
  EXPECT_EQ(a.topKernels[1].meanNs, 5);
}

TEST(TimelineAnalysis, LargestGapsSayWhatEachStageWaitedFor) {
  const TimelineAnalysis a = analyzeTimeline(twoStageTrace());
  ASSERT_EQ(a.largestGaps.size(), 3u);
  EXPECT_EQ(a.largestGaps[0].partition, 0);
  EXPECT_EQ(a.largestGaps[0].startNs, 20);
  EXPECT_EQ(a.largestGaps[0].durationNs, 30);
  EXPECT_EQ(a.largestGaps[0].nextOp, "backward(1,0)");
  EXPECT_EQ(a.largestGaps[0].waitedFor, "backward(0,1)");
  EXPECT_EQ(a.largestGaps[1].partition, 1);
  EXPECT_EQ(a.largestGaps[1].startNs, 50);
  EXPECT_EQ(a.largestGaps[1].durationNs, 20);
  EXPECT_EQ(a.largestGaps[1].nextOp, "");
  EXPECT_EQ(a.largestGaps[1].waitedFor, "backward(0,0)");
  EXPECT_EQ(a.largestGaps[2].partition, 1);
  EXPECT_EQ(a.largestGaps[2].startNs, 0);
  EXPECT_EQ(a.largestGaps[2].durationNs, 10);
  EXPECT_EQ(a.largestGaps[2].nextOp, "forward(0,1)");
  EXPECT_EQ(a.largestGaps[2].waitedFor, "forward(0,0)");
}

TEST(TimelineAnalysis, StepSpansDefineTheWindows) {
  Trace t;
  t.metadata["source"] = "measured";
  TraceEvent step = op("step", Phase::Step, -1, 0, 100);
  step.device = "host";
  t.events.push_back(step);
  step.startNs = 200;
  t.events.push_back(step);
  t.events.push_back(op("forward(0,0)", Phase::Forward, 0, 10, 20));
  t.events.push_back(op("forward(0,0)", Phase::Forward, 0, 150, 10));  // warm-up: outside any step
  t.events.push_back(op("forward(0,0)", Phase::Forward, 0, 210, 40));
  const TimelineAnalysis a = analyzeTimeline(t);
  EXPECT_EQ(a.steps, 2);
  EXPECT_EQ(a.windowNs, 200);
  EXPECT_EQ(a.iterationNs, 100);
  ASSERT_EQ(a.stages.size(), 1u);
  EXPECT_EQ(a.stages[0].ops, 2);
  EXPECT_EQ(a.stages[0].busyNs, 60);
  EXPECT_EQ(a.stages[0].idleNs, 140);
  EXPECT_DOUBLE_EQ(a.stages[0].bubbleFraction, 0.7);
  ASSERT_EQ(a.largestGaps.size(), 4u);
  EXPECT_EQ(a.largestGaps[0].startNs, 30);
  EXPECT_EQ(a.largestGaps[0].durationNs, 70);
  EXPECT_EQ(a.largestGaps[1].startNs, 250);
  EXPECT_EQ(a.largestGaps[1].durationNs, 50);
  EXPECT_EQ(a.largestGaps[2].startNs, 0);
  EXPECT_EQ(a.largestGaps[3].startNs, 200);
}

// Interleaved, one device holding stages 0 and 2, another stage 1 (its own device):
//   cpu:0  s0 F [0,10)  s2 F [20,30)  s2 B [40,50)  s0 B [60,70)
//   cpu:1  s1 F [10,20)               s1 B [50,60)
// Stage 0 alone waits 50 of 70, but its device only 30 (it runs stage 2 meanwhile).
TEST(TimelineAnalysis, VirtualStagesOfOneDeviceShareItsBusyTime) {
  Trace t;
  auto on = [](TraceEvent e, const std::string& device) {
    e.device = device;
    return e;
  };
  t.events = {op("forward(0,0)", Phase::Forward, 0, 0, 10),
              on(op("forward(0,1)", Phase::Forward, 1, 10, 10), "cpu:1"),
              on(op("forward(0,2)", Phase::Forward, 2, 20, 10), "cpu:0"),
              on(op("loss(0)", Phase::Loss, 2, 30, 0), "cpu:0"),
              on(op("backward(0,2)", Phase::Backward, 2, 40, 10), "cpu:0"),
              on(op("backward(0,1)", Phase::Backward, 1, 50, 10), "cpu:1"),
              op("backward(0,0)", Phase::Backward, 0, 60, 10)};
  const TimelineAnalysis a = analyzeTimeline(t);
  ASSERT_EQ(a.stages.size(), 3u);
  EXPECT_EQ(a.stages[0].busyNs, 20);
  EXPECT_DOUBLE_EQ(a.stages[0].bubbleFraction, 50.0 / 70.0);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].device, "cpu:0");
  EXPECT_EQ(a.devices[0].partitions, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(a.devices[0].ops, 5);
  EXPECT_EQ(a.devices[0].busyNs, 40);
  EXPECT_DOUBLE_EQ(a.devices[0].bubbleFraction, 30.0 / 70.0);
  EXPECT_EQ(a.devices[1].busyNs, 20);
  EXPECT_DOUBLE_EQ(a.bubbleFraction, (30.0 / 70.0 + 50.0 / 70.0) / 2.0);
  // cpu:1 idles [20,50) (and 10 ns at each end); cpu:0 idles [10,20), [30,40) and [50,60),
  // each gap naming the stage whose op ends it and what the other device did meanwhile.
  ASSERT_EQ(a.largestGaps.size(), 5u);
  EXPECT_EQ(a.largestGaps[0].device, "cpu:1");
  EXPECT_EQ(a.largestGaps[0].durationNs, 30);
  EXPECT_EQ(a.largestGaps[0].nextOp, "backward(0,1)");
  EXPECT_EQ(a.largestGaps[0].waitedFor, "backward(0,2)");
  const IdleGap& first = a.largestGaps[2];
  EXPECT_EQ(first.device, "cpu:0");
  EXPECT_EQ(first.startNs, 10);
  EXPECT_EQ(first.durationNs, 10);
  EXPECT_EQ(first.nextOp, "forward(0,2)");
  EXPECT_EQ(first.partition, 2);
  EXPECT_EQ(first.waitedFor, "forward(0,1)");
  EXPECT_NE(formatAnalysis(a).find("cpu:0 (stages 0, 2): 5 ops, busy 40 ns"), std::string::npos) << formatAnalysis(a);
}

TEST(TimelineAnalysis, EmptyTraceIsAllZeros) {
  const TimelineAnalysis a = analyzeTimeline(Trace{});
  EXPECT_EQ(a.steps, 0);
  EXPECT_EQ(a.windowNs, 0);
  EXPECT_TRUE(a.stages.empty());
  EXPECT_EQ(toJson(a)["stages"].size(), 0u);
}

TEST(TimelineAnalysis, JsonAndTextForms) {
  const TimelineAnalysis a = analyzeTimeline(twoStageTrace());
  const nlohmann::json j = toJson(a);
  EXPECT_EQ(j["window_ns"], 70);
  EXPECT_EQ(j["stages"][1]["busy_ns"], 40);
  EXPECT_EQ(j["copies"][0]["direction"], "0->1");
  EXPECT_EQ(j["largest_gaps"][0]["waited_for"], "backward(0,1)");
  EXPECT_EQ(j["top_kernels"][0]["name"], "relu");
  const std::string text = formatAnalysis(a);
  EXPECT_NE(text.find("partition 0 on cpu:0: 4 ops"), std::string::npos) << text;
  EXPECT_EQ(text.find("devices:"), std::string::npos) << text;  // one stage per device: the stages say it all
  EXPECT_EQ(j["devices"][0]["partitions"], nlohmann::json::array({0}));
  EXPECT_NE(text.find("waiting for backward(0,1), then backward(1,0)"), std::string::npos) << text;
}

}  // namespace
}  // namespace pipeprof
