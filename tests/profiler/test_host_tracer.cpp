// Tests of the host tracer: per-thread buffers, drain, several tracers, OpSpan and its hooks.
#include "fake_clock.h"

#include <pipeprof/profiler/host_tracer.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof {
namespace {

TraceEvent span(const std::string& name, TimeNs start, TimeNs duration) {
  TraceEvent e;
  e.name = name;
  e.device = "cpu:0";
  e.lane = "partition 0";
  e.startNs = start;
  e.durationNs = duration;
  return e;
}

TEST(HostTracer, DisabledByDefaultAndRecordsNothing) {
  HostTracer tracer;
  EXPECT_FALSE(tracer.enabled());
  tracer.record(span("a", 1, 1));
  tracer.recordCounter("cpu:0", "memory", 5, 10.0);
  EXPECT_TRUE(tracer.drain().events.empty());
}

TEST(HostTracer, DrainSortsAndEmpties) {
  HostTracer tracer;
  tracer.enable();
  tracer.record(span("b", 30, 5));
  tracer.record(span("a", 10, 5));
  tracer.recordCounter("cpu:0", "memory", 20, 4096.0);
  Trace trace = tracer.drain();
  ASSERT_EQ(trace.events.size(), 3u);
  EXPECT_EQ(trace.events[0].name, "a");
  EXPECT_EQ(trace.events[1].kind, EventKind::Counter);
  EXPECT_EQ(trace.events[1].value, 4096.0);
  EXPECT_EQ(trace.events[1].startNs, 20);
  EXPECT_EQ(trace.events[2].name, "b");
  EXPECT_EQ(trace.baseNs, 10);
  EXPECT_EQ(trace.metadata.at("source"), "measured");
  EXPECT_TRUE(tracer.drain().events.empty());
}

TEST(HostTracer, EveryFieldOfAnEventSurvivesTheBuffer) {
  // The buffer keeps names, devices, lanes and arguments once each (interned): events that
  // share them, and ones that differ only there, must come back as they went in.
  HostTracer tracer;
  tracer.enable();
  std::vector<TraceEvent> recorded;
  for (int step = 0; step < 3; ++step) {
    TraceEvent copy = span("receive grad-copy(12,3->2)", 100 * step, 7);  // longer than a short string
    copy.kind = EventKind::Span;
    copy.phase = Phase::Copy;
    copy.microBatch = 12;
    copy.partition = 3;
    copy.correlationId = 40 + step;
    copy.bytes = 65536;
    copy.args = {{"from_rank", "1"}, {"to", std::to_string(step % 2)}};
    TraceEvent flow = copy;
    flow.kind = EventKind::FlowEnd;
    flow.lane = "receive";
    flow.startNs += 7;
    flow.durationNs = 0;
    flow.args.clear();
    for (const TraceEvent& event : {copy, flow}) {
      tracer.record(event);
      recorded.push_back(event);
    }
  }
  const Trace trace = tracer.drain();
  ASSERT_EQ(trace.events.size(), recorded.size());
  for (std::size_t k = 0; k < recorded.size(); ++k) {
    const TraceEvent& in = recorded[k];
    const TraceEvent& out = trace.events[k];
    EXPECT_EQ(out.kind, in.kind) << k;
    EXPECT_EQ(out.phase, in.phase) << k;
    EXPECT_EQ(out.name, in.name) << k;
    EXPECT_EQ(out.device, in.device) << k;
    EXPECT_EQ(out.lane, in.lane) << k;
    EXPECT_EQ(out.args, in.args) << k;
    EXPECT_EQ(out.startNs, in.startNs) << k;
    EXPECT_EQ(out.durationNs, in.durationNs) << k;
    EXPECT_EQ(out.microBatch, in.microBatch) << k;
    EXPECT_EQ(out.partition, in.partition) << k;
    EXPECT_EQ(out.correlationId, in.correlationId) << k;
    EXPECT_EQ(out.bytes, in.bytes) << k;
  }
}

TEST(HostTracer, ManyThreadsEachKeepTheirEvents) {
  HostTracer tracer;
  tracer.enable();
  constexpr int kThreads = 4;
  constexpr int kEvents = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracer, t] {
      for (int e = 0; e < kEvents; ++e) tracer.record(span("t" + std::to_string(t), t * kEvents + e, 1));
    });
  }
  for (auto& thread : threads) thread.join();
  Trace trace = tracer.drain();
  ASSERT_EQ(trace.events.size(), static_cast<std::size_t>(kThreads * kEvents));
  for (std::size_t k = 0; k < trace.events.size(); ++k) {
    EXPECT_EQ(trace.events[k].startNs, static_cast<TimeNs>(k));
  }
}

TEST(HostTracer, SeveralTracersOnOneThreadStayApart) {
  HostTracer first;
  HostTracer second;
  first.enable();
  second.enable();
  first.record(span("first", 1, 1));
  second.record(span("second", 2, 1));
  first.record(span("first-again", 3, 1));
  {
    HostTracer shortLived;
    shortLived.enable();
    shortLived.record(span("gone", 4, 1));
  }
  HostTracer reborn;  // may reuse the address of the destroyed tracer
  reborn.enable();
  reborn.record(span("reborn", 5, 1));
  Trace a = first.drain();
  Trace b = second.drain();
  Trace c = reborn.drain();
  ASSERT_EQ(a.events.size(), 2u);
  EXPECT_EQ(a.events[1].name, "first-again");
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].name, "second");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].name, "reborn");
}

TEST(HostTracer, CorrelationIdsAreUnique) {
  HostTracer tracer;
  const auto a = tracer.nextCorrelationId();
  const auto b = tracer.nextCorrelationId();
  EXPECT_NE(a, b);
  EXPECT_GT(a, 0);
}

class RecordingHooks final : public OpHooks {
 public:
  std::vector<std::pair<char, std::int64_t>> calls;
  void onOpBegin(std::int64_t id) override { calls.emplace_back('b', id); }
  void onOpEnd(std::int64_t id) override { calls.emplace_back('e', id); }
};

TEST(OpSpan, RecordsTheOpWithItsIdentityAndCallsHooks) {
  auto clock = std::make_shared<test::FakeClock>();
  clock->set(1000);
  HostTracer tracer(clock);
  tracer.enable();
  RecordingHooks hooks;
  tracer.setOpHooks(&hooks);
  {
    OpSpan op(&tracer, OpKind::Copy, 2, 0, 1, "cpu:0", "copy 0->1", "copy(2,0->1)");
    op.setBytes(4096);
    clock->advance(250);
  }
  Trace trace = tracer.drain();
  ASSERT_EQ(trace.events.size(), 1u);
  const TraceEvent& e = trace.events[0];
  EXPECT_EQ(e.kind, EventKind::Span);
  EXPECT_EQ(e.name, "copy(2,0->1)");
  EXPECT_EQ(e.device, "cpu:0");
  EXPECT_EQ(e.lane, "copy 0->1");
  EXPECT_EQ(e.phase, Phase::Copy);
  EXPECT_EQ(e.microBatch, 2);
  EXPECT_EQ(e.partition, 0);
  EXPECT_EQ(e.startNs, 1000);
  EXPECT_EQ(e.durationNs, 250);
  EXPECT_EQ(e.bytes, 4096);
  EXPECT_EQ(e.args.at("to"), "1");
  ASSERT_EQ(hooks.calls.size(), 2u);
  EXPECT_EQ(hooks.calls[0], std::make_pair('b', e.correlationId));
  EXPECT_EQ(hooks.calls[1], std::make_pair('e', e.correlationId));
}

TEST(OpSpan, NullOrDisabledTracerDoesNothing) {
  { OpSpan op(nullptr, OpKind::Forward, 0, 0, 0, "cpu:0", "partition 0", "forward(0,0)"); }
  HostTracer tracer;
  RecordingHooks hooks;
  tracer.setOpHooks(&hooks);
  { OpSpan op(&tracer, OpKind::Forward, 0, 0, 0, "cpu:0", "partition 0", "forward(0,0)"); }
  EXPECT_TRUE(hooks.calls.empty());
  tracer.enable();
  EXPECT_TRUE(tracer.drain().events.empty());
}

TEST(OpHookScope, CallsTheHooksAroundItsScopeWithTheIdItWasGiven) {
  HostTracer tracer;
  RecordingHooks hooks;
  tracer.setOpHooks(&hooks);
  { const OpHookScope off(&tracer, 7); }  // a disabled tracer: no work is attributed
  { const OpHookScope none(nullptr, 7); }
  EXPECT_TRUE(hooks.calls.empty());
  tracer.enable();
  {
    const OpHookScope launches(&tracer, 42);
    EXPECT_EQ(hooks.calls, (std::vector<std::pair<char, std::int64_t>>{{'b', 42}}));
  }
  EXPECT_EQ(hooks.calls, (std::vector<std::pair<char, std::int64_t>>{{'b', 42}, {'e', 42}}));
  EXPECT_TRUE(tracer.drain().events.empty());  // it records no span of its own
}

TEST(PhaseOf, MapsEveryOpKind) {
  EXPECT_EQ(phaseOf(OpKind::Forward), Phase::Forward);
  EXPECT_EQ(phaseOf(OpKind::Recompute), Phase::Recompute);
  EXPECT_EQ(phaseOf(OpKind::Backward), Phase::Backward);
  EXPECT_EQ(phaseOf(OpKind::Copy), Phase::Copy);
  EXPECT_EQ(phaseOf(OpKind::SkipCopy), Phase::SkipCopy);
}

}  // namespace
}  // namespace pipeprof
