// Tests of activity conversion and the collector on a fake CUPTI source: attribution, flows,
// clock mapping, out-of-order buffers and the dropped-record count.
#include "fake_activity_source.h"
#include "fake_clock.h"
#include "op_spans.h"

#include <pipeprof/profiler/activity_converter.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/stream_attribution.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace pipeprof {
namespace {

using test::opSpan;

const TraceEvent* findEvent(const Trace& trace, EventKind kind, const std::string& name) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind == kind && e.name == name) return &e;
  }
  return nullptr;
}

std::int64_t countKind(const Trace& trace, EventKind kind) {
  return std::count_if(trace.events.begin(), trace.events.end(),
                       [kind](const TraceEvent& e) { return e.kind == kind; });
}

TEST(ClockMap, FitsSlopeAndOffsetExactly) {
  // host = 500 + 2 * (device - 1000)
  const ClockMap map = ClockMap::fit({{1000, 500}, {2000, 2500}, {3000, 4500}});
  EXPECT_DOUBLE_EQ(map.slope, 2.0);
  EXPECT_EQ(map.toHostNs(1000), 500);
  EXPECT_EQ(map.toHostNs(1500), 1500);
  EXPECT_EQ(map.toHostNs(4000), 6500);
}

TEST(ClockMap, OneSampleIsAnOffsetAndNoneIsIdentity) {
  const ClockMap offset = ClockMap::fit({{1'700'000'000'000'000'000, 42}});
  EXPECT_EQ(offset.toHostNs(1'700'000'000'000'000'123ULL), 165);
  const ClockMap identity = ClockMap::fit({});
  EXPECT_EQ(identity.toHostNs(77), 77);
}

TEST(ClockMap, LargeEpochTimestampsKeepNanosecondPrecision) {
  const std::int64_t d0 = 1'763'000'000'000'000'000;
  const ClockMap map = ClockMap::fit({{d0, 10}, {d0 + 1'000'000'000, 1'000'000'010}});
  EXPECT_EQ(map.toHostNs(static_cast<std::uint64_t>(d0 + 123'456'789)), 123'456'799);
}

Trace hostOps() {
  Trace host;
  TraceEvent fwd;
  fwd.name = "forward(1,0)";
  fwd.device = "cuda:0";
  fwd.lane = "partition 0";
  fwd.phase = Phase::Forward;
  fwd.microBatch = 1;
  fwd.partition = 0;
  fwd.correlationId = 7;
  fwd.startNs = 100;
  fwd.durationNs = 900;
  host.events.push_back(fwd);
  TraceEvent copy = fwd;
  copy.name = "copy(1,0->1)";
  copy.phase = Phase::Copy;
  copy.lane = "copy 0->1";
  copy.correlationId = 8;
  host.events.push_back(copy);
  return host;
}

ActivityBuffer kernelBuffer() {
  ActivityBuffer b;
  KernelRecord k;
  k.name = "_Z6addOnePfi";
  k.startNs = 1'300;
  k.endNs = 1'500;
  k.deviceId = 0;
  k.streamId = 7;
  k.correlationId = 55;
  k.gridX = 4, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  b.kernels.push_back(k);
  b.memcpys.push_back(MemcpyRecord{MemcpyKind::PeerToPeer, 4096, 1'600, 1'700, 0, 1, 9, 56});
  b.memsets.push_back(MemsetRecord{256, 1'200, 1'210, 0, 1, 7, 57});
  return b;
}

ActivityBuffer apiBuffer() {
  ActivityBuffer b;
  b.apiCalls.push_back(RuntimeApiRecord{false, 211, "cudaLaunchKernel", 1'150, 1'180, 1, 99, 55});
  b.apiCalls.push_back(RuntimeApiRecord{true, 307, "cuLaunchKernel", 1'155, 1'170, 1, 99, 55});
  b.apiCalls.push_back(RuntimeApiRecord{false, 31, "cudaMemcpyPeerAsync", 1'190, 1'195, 1, 99, 56});
  b.apiCalls.push_back(RuntimeApiRecord{false, 3, "cudaGetDevice", 1'100, 1'101, 1, 99, 58});
  b.externalCorrelations.push_back(ExternalCorrelationRecord{7, 55});
  b.externalCorrelations.push_back(ExternalCorrelationRecord{8, 56});
  return b;
}

TEST(ActivityConverter, AttributesKernelsCopiesAndMemsetsToOps) {
  ActivityConverter converter(ClockMap{1'000, 100, 1.0});  // host = device - 900
  converter.addHostSpans(hostOps());
  // Out of order: the external correlations arrive in a buffer after the kernels.
  converter.addBuffer(kernelBuffer());
  converter.addBuffer(apiBuffer());
  converter.setDroppedRecords(3);
  Trace trace = converter.convert();

  const TraceEvent* kernel = findEvent(trace, EventKind::Span, "addOne(float*, int)");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->phase, Phase::Kernel);
  EXPECT_EQ(kernel->device, "cuda:0");
  EXPECT_EQ(kernel->lane, "stream 7");
  EXPECT_EQ(kernel->startNs, 400);
  EXPECT_EQ(kernel->durationNs, 200);
  EXPECT_EQ(kernel->microBatch, 1);
  EXPECT_EQ(kernel->partition, 0);
  EXPECT_EQ(kernel->correlationId, 7);
  EXPECT_EQ(kernel->args.at("op"), "forward(1,0)");
  EXPECT_EQ(kernel->args.at("op_phase"), "forward");
  EXPECT_EQ(kernel->args.at("grid"), "4,1,1");

  const TraceEvent* copy = findEvent(trace, EventKind::Span, "Memcpy PtoP");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->phase, Phase::Memcpy);
  EXPECT_EQ(copy->bytes, 4096);
  EXPECT_EQ(copy->args.at("op"), "copy(1,0->1)");
  EXPECT_EQ(copy->args.at("copy_kind"), "PtoP");

  const TraceEvent* memset = findEvent(trace, EventKind::Span, "Memset");
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(memset->bytes, 256);
  EXPECT_EQ(memset->partition, -1);  // correlation 57 has no external id: unattributed

  // The launch that pairs with the runtime call is kept once (the driver call under it is not);
  // cudaGetDevice launched nothing and is dropped.
  const TraceEvent* launch = findEvent(trace, EventKind::Span, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->phase, Phase::Launch);
  EXPECT_EQ(launch->device, "cuda:0");
  EXPECT_EQ(launch->lane, "cuda api 99");
  EXPECT_EQ(launch->startNs, 250);
  EXPECT_EQ(findEvent(trace, EventKind::Span, "cuLaunchKernel"), nullptr);
  EXPECT_EQ(findEvent(trace, EventKind::Span, "cudaGetDevice"), nullptr);

  // One flow from the launch to its kernel.
  ASSERT_EQ(countKind(trace, EventKind::FlowStart), 1);
  ASSERT_EQ(countKind(trace, EventKind::FlowEnd), 1);
  const TraceEvent* flowStart = findEvent(trace, EventKind::FlowStart, "launch");
  const TraceEvent* flowEnd = findEvent(trace, EventKind::FlowEnd, "launch");
  EXPECT_EQ(flowStart->correlationId, 55);
  EXPECT_EQ(flowStart->startNs, 250);
  EXPECT_EQ(flowEnd->correlationId, 55);
  EXPECT_EQ(flowEnd->startNs, 400);
  EXPECT_EQ(flowEnd->lane, "stream 7");

  const ConversionStats& stats = converter.stats();
  EXPECT_EQ(stats.kernels, 1);
  EXPECT_EQ(stats.memcpys, 1);
  EXPECT_EQ(stats.memsets, 1);
  EXPECT_EQ(stats.attributed, 2);
  EXPECT_EQ(stats.unattributed, 1);
  EXPECT_EQ(stats.launches, 2);
  EXPECT_EQ(stats.flows, 1);
  EXPECT_EQ(stats.droppedRecords, 3);
  EXPECT_EQ(trace.metadata.at("cupti_dropped_records"), "3");
}

TEST(ActivityConverter, FlowEndWithoutItsLaunchIsDropped) {
  ActivityConverter converter;
  converter.addBuffer(kernelBuffer());
  Trace trace = converter.convert();
  EXPECT_EQ(countKind(trace, EventKind::FlowEnd), 0);
  EXPECT_EQ(converter.stats().unattributed, 3);
}

/// A kernel on cuda:0 and the runtime call that launched it at launchNs (device clock = host).
void addLaunchedKernel(ActivityBuffer& buffer, std::uint32_t correlationId, std::uint32_t streamId,
                       std::uint64_t launchNs) {
  KernelRecord kernel;
  kernel.name = "k" + std::to_string(correlationId);
  kernel.startNs = launchNs + 5;
  kernel.endNs = launchNs + 10;
  kernel.streamId = streamId;
  kernel.correlationId = correlationId;
  buffer.kernels.push_back(kernel);
  buffer.apiCalls.push_back(
      RuntimeApiRecord{false, 211, "cudaLaunchKernel", launchNs, launchNs + 2, 1, 42, correlationId});
}

TEST(ActivityConverter, WorkWithoutAnIdIsAttributedByItsStreamAndLaunchTime) {
  Trace host;
  host.events.push_back(opSpan("forward(0,1)", Phase::Forward, 1, 10, 100, 200));
  host.events.push_back(opSpan("backward(0,1)", Phase::Backward, 1, 11, 1'000, 2'000));
  host.events.push_back(opSpan("recompute(0,1)", Phase::Recompute, 1, 12, 1'100, 1'300));  // inside the backward
  host.events.push_back(opSpan("forward(0,0)", Phase::Forward, 0, 13, 100, 200));
  host.events.push_back(opSpan("backward(0,0)", Phase::Backward, 0, 14, 2'100, 2'600));
  ActivityBuffer buffer;
  addLaunchedKernel(buffer, 101, 5, 150);    // id 10: stream 5 is partition 1's
  addLaunchedKernel(buffer, 106, 6, 160);    // id 13: stream 6 is partition 0's
  addLaunchedKernel(buffer, 102, 5, 1'500);  // no id, during backward(0,1)
  addLaunchedKernel(buffer, 103, 5, 1'200);  // no id, during recompute(0,1) inside it
  addLaunchedKernel(buffer, 107, 6, 2'200);  // no id, during backward(0,0)
  addLaunchedKernel(buffer, 104, 5, 3'000);  // no id, no span of partition 1 open: the optimizer's
  addLaunchedKernel(buffer, 105, 9, 2'800);  // no id, on a stream no op taught, outside every span
  buffer.externalCorrelations.push_back(ExternalCorrelationRecord{10, 101});
  buffer.externalCorrelations.push_back(ExternalCorrelationRecord{13, 106});
  ActivityConverter converter;
  converter.addHostSpans(host);
  converter.addBuffer(buffer);
  const Trace trace = converter.convert();

  auto expectOp = [&](const std::string& kernel, const std::string& op, std::int64_t j, std::int64_t id,
                      bool byStream) {
    SCOPED_TRACE(kernel);
    const TraceEvent* event = findEvent(trace, EventKind::Span, kernel);
    ASSERT_NE(event, nullptr);
    ASSERT_EQ(event->args.count("op"), 1U);
    EXPECT_EQ(event->args.at("op"), op);
    EXPECT_EQ(event->partition, j);
    EXPECT_EQ(event->microBatch, 0);
    EXPECT_EQ(event->correlationId, id);
    EXPECT_EQ(event->args.count("attributed_by"), byStream ? 1U : 0U);
  };
  expectOp("k101", "forward(0,1)", 1, 10, false);
  expectOp("k106", "forward(0,0)", 0, 13, false);
  expectOp("k102", "backward(0,1)", 1, 11, true);
  expectOp("k103", "recompute(0,1)", 1, 12, true);
  expectOp("k107", "backward(0,0)", 0, 14, true);
  for (const std::string kernel : {"k104", "k105"}) {
    const TraceEvent* event = findEvent(trace, EventKind::Span, kernel);
    ASSERT_NE(event, nullptr);
    EXPECT_EQ(event->args.count("op"), 0U) << kernel;
    EXPECT_EQ(event->partition, -1) << kernel;
  }
  // The launch of work attributed by stream carries its op too.
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Span && e.phase == Phase::Launch && e.args.at("cupti_correlation") == "102") {
      EXPECT_EQ(e.args.at("op"), "backward(0,1)");
      EXPECT_EQ(e.device, "cuda:0");
    }
  }
  const ConversionStats& stats = converter.stats();
  EXPECT_EQ(stats.attributed, 5);
  EXPECT_EQ(stats.attributedByStream, 3);
  EXPECT_EQ(stats.unattributed, 2);
  EXPECT_EQ(trace.metadata.at("cupti_attributed_by_stream"), "3");
}

TEST(ActivityConverter, NcclKernelsGoToTheMessageThatLaunchedThemOrToNothing) {
  Trace host;
  host.events.push_back(opSpan("forward(0,0)", Phase::Forward, 0, 10, 100, 1'000));
  TraceEvent send = opSpan("send copy(0,0->1)", Phase::Copy, -1, 20, 500, 520);  // a rank's message
  send.microBatch = -1;
  host.events.push_back(send);
  ActivityBuffer buffer;
  addLaunchedKernel(buffer, 101, 5, 150);  // id 10: stream 5 is partition 0's
  addLaunchedKernel(buffer, 102, 9, 510);  // id 20: the send's NCCL kernel
  addLaunchedKernel(buffer, 103, 9, 600);  // no id, launched inside forward(0,0): still no op's
  buffer.kernels[1].name = "ncclDevKernel_SendRecv";
  buffer.kernels[2].name = "ncclKernel_SendRecv_RING_SIMPLE";
  buffer.externalCorrelations.push_back(ExternalCorrelationRecord{10, 101});
  buffer.externalCorrelations.push_back(ExternalCorrelationRecord{20, 102});
  ActivityConverter converter;
  converter.addHostSpans(host);
  converter.addBuffer(buffer);
  const Trace trace = converter.convert();

  const TraceEvent* sent = findEvent(trace, EventKind::Span, "ncclDevKernel_SendRecv");
  ASSERT_NE(sent, nullptr);
  EXPECT_EQ(sent->args.at("op"), "send copy(0,0->1)");
  EXPECT_EQ(sent->args.at("op_phase"), "copy");
  EXPECT_EQ(sent->correlationId, 20);
  const TraceEvent* unknown = findEvent(trace, EventKind::Span, "ncclKernel_SendRecv_RING_SIMPLE");
  ASSERT_NE(unknown, nullptr);
  // By its stream and launch time it would be forward(0,0)'s, whose span was open then.
  EXPECT_EQ(unknown->args.count("op"), 0U);
  EXPECT_EQ(converter.stats().unattributed, 1);
}

TEST(StreamAttribution, AStreamTwoPartitionsUsedIsNobodys) {
  StreamAttribution streams;
  streams.addSpan(0, 20, 0, 1'000);
  streams.addSpan(1, 21, 0, 1'000);
  streams.learnStream(0, 3, 1);
  EXPECT_EQ(streams.find(0, 3, 500), 21);
  EXPECT_EQ(streams.find(1, 3, 500), -1);  // the same stream id on another device is another stream
  streams.learnStream(0, 3, 0);
  EXPECT_EQ(streams.find(0, 3, 500), -1);
  streams.learnStream(0, 3, 1);
  EXPECT_EQ(streams.find(0, 3, 500), -1);
}

TEST(CuptiCollector, PushesEachOpIdAndAttributesWorkLaunchedInside) {
  auto clock = std::make_shared<test::FakeClock>();
  clock->set(10'000);
  HostTracer tracer(clock);
  tracer.enable();
  auto owned = std::make_unique<test::FakeActivitySource>();
  test::FakeActivitySource& source = *owned;
  source.deviceOffsetNs = 5'000'000;  // device clock runs 5 ms ahead
  // Every push "launches" one kernel 10 ns after the current host time, on the device clock.
  std::uint32_t nextCorrelation = 1;
  ActivityBuffer late;  // delivered first: external correlations, out of order
  ActivityBuffer early;
  source.onPush = [&](std::uint64_t externalId) {
    const std::uint32_t c = nextCorrelation++;
    const auto deviceNow = static_cast<std::uint64_t>(clock->nowNs() + source.deviceOffsetNs);
    KernelRecord k;
    k.name = "gemm";
    k.startNs = deviceNow + 10;
    k.endNs = deviceNow + 60;
    k.correlationId = c;
    early.kernels.push_back(k);
    early.apiCalls.push_back(RuntimeApiRecord{false, 211, "cudaLaunchKernel", deviceNow, deviceNow + 5, 1, 1, c});
    late.externalCorrelations.push_back(ExternalCorrelationRecord{externalId, c});
  };
  CuptiCollector collector(tracer, std::move(owned));
  ASSERT_TRUE(collector.available());
  ASSERT_TRUE(collector.start());
  source.dropped = 2;  // during the capture
  EXPECT_EQ(tracer.opHooks(), &collector);
  for (std::int64_t i = 0; i < 2; ++i) {
    OpSpan op(&tracer, OpKind::Forward, i, 0, 0, "cuda:0", "partition 0", "forward(" + std::to_string(i) + ",0)");
    clock->advance(100);
  }
  source.pending = {late, early};
  collector.stop();
  EXPECT_EQ(tracer.opHooks(), nullptr);
  EXPECT_EQ(source.pushed.size(), 2u);
  EXPECT_EQ(source.pops, 2);

  const Trace host = tracer.drain();
  const Trace device = collector.trace(host);
  EXPECT_EQ(collector.droppedRecords(), 2);
  EXPECT_EQ(collector.stats().kernels, 2);
  EXPECT_EQ(collector.stats().attributed, 2);
  EXPECT_EQ(collector.stats().flows, 2);
  std::vector<const TraceEvent*> kernels;
  for (const TraceEvent& e : device.events) {
    if (e.kind == EventKind::Span && e.phase == Phase::Kernel) kernels.push_back(&e);
  }
  ASSERT_EQ(kernels.size(), 2u);
  // Mapped onto the host clock: each kernel starts 10 ns after its op began.
  EXPECT_EQ(kernels[0]->startNs, 10'010);
  EXPECT_EQ(kernels[0]->args.at("op"), "forward(0,0)");
  EXPECT_EQ(kernels[0]->microBatch, 0);
  EXPECT_EQ(kernels[1]->startNs, 10'110);
  EXPECT_EQ(kernels[1]->args.at("op"), "forward(1,0)");
  EXPECT_EQ(kernels[1]->microBatch, 1);
  EXPECT_EQ(collector.summary(),
            "cupti (exact): 2 kernels, 0 copies, 0 memsets; 2 of 2 kernels attributed (100.0%), 0 by stream; "
            "0 unattributed; 2 dropped");

  const Trace merged = mergeTraces(host, device);
  EXPECT_EQ(merged.events.size(), host.events.size() + device.events.size());
  EXPECT_EQ(merged.baseNs, 10'000);
}

/// A kernel of `name` launched now (on the fake's device clock), correlated to external id `op`.
ActivityBuffer kernelOfOp(const test::FakeClock& clock, const test::FakeActivitySource& source, const std::string& name,
                          std::uint64_t op, std::uint32_t correlation) {
  const auto deviceNow = static_cast<std::uint64_t>(clock.nowNs() + source.deviceOffsetNs);
  ActivityBuffer buffer;
  KernelRecord k;
  k.name = name;
  k.startNs = deviceNow + 10;
  k.endNs = deviceNow + 20;
  k.correlationId = correlation;
  buffer.kernels.push_back(k);
  buffer.externalCorrelations.push_back(ExternalCorrelationRecord{op, correlation});
  return buffer;
}

TEST(CuptiCollector, PausedBetweenCapturesEnablesOnceAndKeepsEachCaptureItsOwn) {
  auto clock = std::make_shared<test::FakeClock>();
  clock->set(1'000);
  auto owned = std::make_unique<test::FakeActivitySource>();
  test::FakeActivitySource& source = *owned;
  HostTracer first(clock);
  first.enable();
  CuptiCollector collector(first, std::move(owned));

  ASSERT_TRUE(collector.start());
  {
    OpSpan op(&first, OpKind::Forward, 0, 0, 0, "cuda:0", "partition 0", "first run's op");
    source.pending.push_back(kernelOfOp(*clock, source, "first", source.pushed.back(), 1));
    clock->advance(100);
  }
  source.dropped = 1;
  collector.pause();
  EXPECT_TRUE(collector.recording());
  EXPECT_FALSE(collector.started());
  EXPECT_EQ(first.opHooks(), nullptr);
  const Trace firstDevice = collector.trace(first.drain());
  EXPECT_EQ(collector.stats().kernels, 1);
  EXPECT_EQ(collector.droppedRecords(), 1);

  // Between the runs: work no capture owns (a model moved to the device), recorded anyway.
  clock->advance(1'000);
  source.pending.push_back(kernelOfOp(*clock, source, "between", 99, 2));

  HostTracer second(clock);
  second.enable();
  collector.setTracer(second);
  ASSERT_TRUE(collector.start());
  EXPECT_EQ(source.starts, 1) << "the source records from the first capture on: no second enabling";
  EXPECT_EQ(second.opHooks(), &collector);
  EXPECT_THROW(collector.setTracer(first), std::logic_error);
  {
    OpSpan op(&second, OpKind::Backward, 1, 0, 0, "cuda:0", "partition 0", "second run's op");
    source.pending.push_back(kernelOfOp(*clock, source, "second", source.pushed.back(), 3));
    clock->advance(100);
  }
  collector.stop();
  EXPECT_FALSE(collector.recording());
  EXPECT_TRUE(source.stopCalled);
  const Trace secondDevice = collector.trace(second.drain());
  EXPECT_EQ(collector.stats().kernels, 1) << "the work between the captures is neither's";
  EXPECT_EQ(collector.stats().attributedKernels, 1);
  EXPECT_EQ(collector.droppedRecords(), 0) << "the first capture's dropped records are not the second's";
  std::vector<std::string> names;
  for (const TraceEvent& e : secondDevice.events) {
    if (e.kind == EventKind::Span && e.phase == Phase::Kernel) names.push_back(e.name);
  }
  EXPECT_EQ(names, std::vector<std::string>{"second"});
  EXPECT_EQ(source.flushes, 3) << "each capture's end and the second start flush, once each";

  // Stopped, the next capture enables the source again.
  collector.setTracer(first);
  ASSERT_TRUE(collector.start());
  EXPECT_EQ(source.starts, 2);
}

TEST(CuptiCollector, UnavailableSourceSaysWhyAndNeverStarts) {
  HostTracer tracer;
  auto owned = std::make_unique<test::FakeActivitySource>();
  owned->isAvailable = false;
  owned->reason = "CUPTI collector unavailable: no CUDA device";
  CuptiCollector collector(tracer, std::move(owned));
  EXPECT_FALSE(collector.available());
  EXPECT_EQ(collector.unavailableReason(), "CUPTI collector unavailable: no CUDA device");
  EXPECT_FALSE(collector.start());
  EXPECT_EQ(tracer.opHooks(), nullptr);
  collector.stop();  // harmless
  EXPECT_TRUE(collector.trace(Trace{}).events.empty());
}

TEST(CuptiCollector, RealSourceNeverThrowsWithoutAGpu) {
  HostTracer tracer;
  auto collector = CuptiCollector::create(tracer);
  if (collector->available()) GTEST_SKIP() << "a CUDA device is present; covered by the gpu test";
  EXPECT_FALSE(collector->unavailableReason().empty());
  EXPECT_EQ(collector->unavailableReason().find('\n'), std::string::npos);
  EXPECT_FALSE(collector->start());
}

}  // namespace
}  // namespace pipeprof
