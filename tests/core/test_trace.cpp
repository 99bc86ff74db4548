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
  for (Phase phase : {Phase::Forward, Phase::Recompute, Phase::Backward, Phase::Copy, Phase::SkipCopy, Phase::Kernel,
                      Phase::Memcpy, Phase::Memset, Phase::Launch, Phase::Warmup, Phase::Step, Phase::Optimizer,
                      Phase::Other}) {
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

}  // namespace
}  // namespace pipeprof
