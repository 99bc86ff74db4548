// Tests for trace.cpp: phase names and deterministic event order.
#include <pipeprof/core/trace.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Phase, NamesRoundTrip) {
  for (Phase phase :
       {Phase::Forward, Phase::Recompute, Phase::Backward, Phase::Copy, Phase::SkipCopy, Phase::Kernel, Phase::Memcpy,
        Phase::Memset, Phase::Launch, Phase::Warmup, Phase::Step, Phase::Optimizer, Phase::Other}) {
    EXPECT_EQ(parsePhase(phaseName(phase)), phase);
  }
  EXPECT_EQ(phaseName(Phase::SkipCopy), "skip-copy");
  EXPECT_EQ(phaseName(Phase::Memcpy), "memcpy");
  EXPECT_THAT([] { parsePhase("fwd"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("invalid phase 'fwd'")));
}

TraceEvent event(TimeNs startNs, const std::string& device, const std::string& lane, const std::string& name) {
  TraceEvent result;
  result.startNs = startNs;
  result.device = device;
  result.lane = lane;
  result.name = name;
  return result;
}

TEST(Phase, OfEachOpKind) {
  EXPECT_EQ(phaseOf(OpKind::Forward), Phase::Forward);
  EXPECT_EQ(phaseOf(OpKind::Recompute), Phase::Recompute);
  EXPECT_EQ(phaseOf(OpKind::Backward), Phase::Backward);
  EXPECT_EQ(phaseOf(OpKind::Copy), Phase::Copy);
  EXPECT_EQ(phaseOf(OpKind::SkipCopy), Phase::SkipCopy);
}

TEST(SortEvents, ByStartDeviceLaneName) {
  Trace trace;
  trace.events = {event(5, "cpu:1", "a", "x"), event(5, "cpu:0", "b", "y"), event(5, "cpu:0", "a", "z"),
                  event(1, "cpu:9", "a", "w"), event(5, "cpu:0", "a", "c")};
  trace.events[2].durationNs = 7;
  sortEvents(trace);
  std::vector<std::string> names;
  for (const TraceEvent& e : trace.events) names.push_back(e.name);
  EXPECT_THAT(names, ::testing::ElementsAre("w", "c", "z", "y", "x"));
  EXPECT_EQ(trace.events[2].endNs(), 12);
}

TEST(StepSpans, AreTheStepPhasesSpansInTheirOrder) {
  Trace trace;
  const auto add = [&trace](EventKind kind, Phase phase, TimeNs start) {
    TraceEvent event;
    event.kind = kind;
    event.phase = phase;
    event.startNs = start;
    trace.events.push_back(event);
  };
  add(EventKind::Span, Phase::Step, 20);
  add(EventKind::Span, Phase::Forward, 5);
  add(EventKind::Counter, Phase::Step, 7);  // a counter is no span
  add(EventKind::Span, Phase::Step, 10);
  const std::vector<const TraceEvent*> steps = stepSpans(trace);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0], &trace.events[0]);
  EXPECT_EQ(steps[1], &trace.events[3]);
  EXPECT_TRUE(stepSpans(Trace{}).empty());
}

TEST(StepSpans, OfSeveralRanksAreTheLongestOfEachStep) {
  // A two-rank run's merged trace: both ranks open step k at the barrier; rank 1, the last
  // stage, is done before rank 0 has the gradients back, and a third step only rank 0 recorded.
  Trace trace;
  const auto add = [&trace](const std::string& device, TimeNs start, TimeNs duration) {
    TraceEvent event;
    event.kind = EventKind::Span;
    event.phase = Phase::Step;
    event.device = device;
    event.startNs = start;
    event.durationNs = duration;
    trace.events.push_back(event);
  };
  add("rank 0", 0, 195);
  add("rank 1", 2, 135);
  add("rank 1", 200, 140);
  add("rank 0", 201, 190);
  add("rank 0", 400, 190);
  const std::vector<const TraceEvent*> steps = stepSpans(trace);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0], &trace.events[0]);
  EXPECT_EQ(steps[1], &trace.events[3]);
}

TEST(ScaleTraceTimes, KeepsAdjacentSpansAdjacent) {
  Trace trace;
  for (const auto& [start, duration] : std::vector<std::pair<TimeNs, TimeNs>>{{0, 3}, {3, 3}, {6, 5}}) {
    TraceEvent event;
    event.kind = EventKind::Span;
    event.startNs = start;
    event.durationNs = duration;
    trace.events.push_back(event);
  }
  scaleTraceTimes(trace, 1.5);  // 4.5 and 9 round; the spans must still meet
  EXPECT_EQ(trace.events[0].startNs, 0);
  EXPECT_EQ(trace.events[0].endNs(), trace.events[1].startNs);
  EXPECT_EQ(trace.events[1].endNs(), trace.events[2].startNs);
  EXPECT_EQ(trace.events[2].endNs(), 17);  // 11 x 1.5 = 16.5, rounded away from zero
}

TEST(ConcatenateTraces, KeepsEveryEventOnTheFirstTracesBase) {
  Trace rank0;
  rank0.baseNs = 100;
  rank0.metadata["source"] = "measured";
  rank0.events = {event(130, "rank 0", "send", "s")};
  Trace rank1;
  rank1.baseNs = 90;  // counts from 10 ns earlier: its events shift by -10 on rank 0's base
  rank1.events = {event(125, "rank 1", "receive", "r"), event(110, "rank 1", "partition 1", "f")};
  const Trace merged = concatenateTraces({rank0, rank1});
  EXPECT_EQ(merged.baseNs, 100);
  EXPECT_EQ(merged.metadata.at("source"), "measured");
  ASSERT_EQ(merged.events.size(), 3u);
  EXPECT_EQ(merged.events[0].name, "f");
  EXPECT_EQ(merged.events[0].startNs, 100);
  EXPECT_EQ(merged.events[1].startNs, 115);
  EXPECT_EQ(merged.events[2].startNs, 130);
  EXPECT_TRUE(concatenateTraces({}).events.empty());
}

}  // namespace
}  // namespace pipeprof
