// Tests of the collector's two CUPTI modes on fake records: cheap mode (kernels with queue times,
// no API or external correlation records) attributed by stream and queue time, on hand-made
// records and on the records of a real capture (traces/cuda_run_mlp.json); the stream votes;
// the attributed share in the stats, metadata and summary; the mode's names.
#include "fake_activity_source.h"
#include "fake_clock.h"
#include "op_spans.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/profiler/activity_converter.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/stream_attribution.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

using test::opSpan;

const TraceEvent* findSpan(const Trace& trace, const std::string& name) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Span && e.name == name) return &e;
  }
  return nullptr;
}

TEST(CuptiMode, NamesRoundTripAndBadNamesSayTheChoices) {
  EXPECT_EQ(parseCuptiMode("cheap"), CuptiMode::Cheap);
  EXPECT_EQ(parseCuptiMode("exact"), CuptiMode::Exact);
  EXPECT_EQ(cuptiModeName(CuptiMode::Cheap), "cheap");
  EXPECT_EQ(cuptiModeName(CuptiMode::Exact), "exact");
  for (const std::string bad : {"", "Cheap", "full", "exact "}) {
    try {
      parseCuptiMode(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()), "unknown CUPTI mode '" + bad + "': expected cheap or exact");
    }
  }
}

TEST(StreamAttribution, VotesGiveAStreamToTheMajorityPartitionOfItsDevice) {
  StreamAttribution streams;
  streams.addSpan(0, 10, 0, 100, 0);
  streams.addSpan(1, 11, 50, 150, 0);
  streams.addSpan(2, 12, 0, 1'000, 1);
  for (std::int64_t t : {10, 20, 60}) streams.voteStream(0, 5, t);    // 0: 3 votes, 1: 1
  for (std::int64_t t : {60, 70}) streams.voteStream(0, 6, t);        // 0 and 1 tie
  for (std::int64_t t : {10, 500, 600}) streams.voteStream(0, 7, t);  // 0: 1 vote of 3 launches
  streams.voteStream(1, 5, 10);                                       // only partition 2 is on cuda:1
  streams.learnStream(0, 8, 1);
  for (std::int64_t t : {10, 20, 30}) streams.voteStream(0, 8, t);    // an id taught it: votes ignored
  streams.settleVotes();
  EXPECT_EQ(streams.find(0, 5, 60), 10);
  EXPECT_EQ(streams.find(0, 5, 120), -1);  // partition 0's, and none of its spans is open
  EXPECT_EQ(streams.find(0, 6, 60), -1);
  EXPECT_EQ(streams.find(0, 7, 10), -1);
  EXPECT_EQ(streams.find(1, 5, 10), 12);
  EXPECT_EQ(streams.find(0, 8, 60), 11);
}

// The device clock runs 1 ms ahead of the host's: host = device - 1'000'000.
constexpr std::uint64_t kDeviceAheadNs = 1'000'000;
const ClockMap kClock{1'000'000, 0, 1.0};

/// A kernel as cheap mode records it: no API record, no external id; queued at queuedHostNs
/// (host clock; -1: CUPTI gave no queue time), running 10 ns from startHostNs.
KernelRecord queuedKernel(const std::string& name, std::uint32_t deviceId, std::uint32_t streamId,
                          std::uint32_t correlationId, std::int64_t queuedHostNs, std::int64_t startHostNs) {
  KernelRecord kernel;
  kernel.name = name;
  kernel.deviceId = deviceId;
  kernel.streamId = streamId;
  kernel.correlationId = correlationId;
  kernel.queuedNs = queuedHostNs < 0 ? 0 : static_cast<std::uint64_t>(queuedHostNs) + kDeviceAheadNs;
  kernel.submittedNs = queuedHostNs < 0 ? 0 : kernel.queuedNs + 2;
  kernel.startNs = static_cast<std::uint64_t>(startHostNs) + kDeviceAheadNs;
  kernel.endNs = kernel.startNs + 10;
  return kernel;
}

MemsetRecord memsetAt(std::uint32_t deviceId, std::uint32_t streamId, std::uint32_t correlationId,
                      std::int64_t startHostNs) {
  const auto start = static_cast<std::uint64_t>(startHostNs) + kDeviceAheadNs;
  return MemsetRecord{64, start, start + 4, deviceId, 1, streamId, correlationId};
}

// Partition 0 on cuda:0 (stream 13), partition 1 on cuda:1 (also a stream 13: another stream).
//
//   host ns      100   200   300   400   600      900 1000 1100   1300        2000    3000
//   partition 0  |fwd(0,0)|                             |--------backward(0,0)------|
//                                                            |recompute(0,0)|
//   partition 1              |fwd(0,1)|    |bwd(0,1)|
class CheapModeAttribution : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.events.push_back(opSpan("forward(0,0)", Phase::Forward, "cuda:0", 0, 10, 100, 200));
    host_.events.push_back(opSpan("backward(0,0)", Phase::Backward, "cuda:0", 0, 11, 1'000, 2'000));
    host_.events.push_back(opSpan("recompute(0,0)", Phase::Recompute, "cuda:0", 0, 12, 1'100, 1'300));
    host_.events.push_back(opSpan("forward(0,1)", Phase::Forward, "cuda:1", 1, 20, 300, 400));
    host_.events.push_back(opSpan("backward(0,1)", Phase::Backward, "cuda:1", 1, 21, 600, 900));
    host_.events.push_back(opSpan("loss(0)", Phase::Loss, "cuda:1", 1, 22, 450, 550));

    ActivityBuffer& b = buffer_;
    b.kernels.push_back(queuedKernel("fwd00", 0, 13, 1, 150, 160));
    b.kernels.push_back(queuedKernel("bwd00.a", 0, 13, 2, 1'050, 1'060));
    b.kernels.push_back(queuedKernel("rec00", 0, 13, 3, 1'200, 1'210));  // inside the nested recompute
    b.kernels.push_back(queuedKernel("bwd00.b", 0, 13, 4, 1'500, 1'510));
    b.kernels.push_back(queuedKernel("bwd00.c", 0, 13, 5, 1'900, 2'100));  // queued inside, runs after
    b.kernels.push_back(queuedKernel("late", 0, 13, 6, 3'000, 3'010));    // queued outside every span
    b.kernels.push_back(queuedKernel("fwd01", 1, 13, 7, 350, 360));
    b.kernels.push_back(queuedKernel("loss0", 1, 13, 8, 500, 510));       // the loss is no compute op
    b.kernels.push_back(queuedKernel("bwd01", 1, 13, 9, 700, 710));
    b.kernels.push_back(queuedKernel("optimizer", 0, 7, 10, 2'500, 2'510));  // nobody's stream
    // A kernel CUPTI gave no queue time, between two of backward(0,0)'s on its stream.
    b.kernels.push_back(queuedKernel("undated", 0, 13, 11, -1, 1'700));
    // A side stream: one of its three kernels queued while a compute span was open.
    b.kernels.push_back(queuedKernel("side.a", 0, 30, 12, 150, 170));
    b.kernels.push_back(queuedKernel("side.b", 0, 30, 13, 2'400, 2'410));
    b.kernels.push_back(queuedKernel("side.c", 0, 30, 14, 2'600, 2'610));
    // Memsets: between two of backward(0,0)'s kernels; between bwd00.c and "late" (different
    // ops); on a stream with no kernels.
    b.memsets.push_back(memsetAt(0, 13, 20, 1'600));
    b.memsets.push_back(memsetAt(0, 13, 21, 2'500));
    b.memsets.push_back(memsetAt(0, 40, 22, 1'600));
  }

  Trace host_;
  ActivityBuffer buffer_;
};

TEST_F(CheapModeAttribution, KernelsGoToTheSpanOfTheirStreamsPartitionOpenWhenQueued) {
  ActivityConverter converter(kClock);
  converter.addHostSpans(host_);
  converter.addBuffer(buffer_);
  const Trace trace = converter.convert();

  auto expectOp = [&](const std::string& kernel, const std::string& op, std::int64_t j, std::int64_t id,
                      const std::string& by) {
    SCOPED_TRACE(kernel);
    const TraceEvent* event = findSpan(trace, kernel);
    ASSERT_NE(event, nullptr);
    ASSERT_EQ(event->args.count("op"), 1U);
    EXPECT_EQ(event->args.at("op"), op);
    EXPECT_EQ(event->partition, j);
    EXPECT_EQ(event->correlationId, id);
    EXPECT_EQ(event->args.at("attributed_by"), by);
  };
  expectOp("fwd00", "forward(0,0)", 0, 10, "queue time");
  expectOp("bwd00.a", "backward(0,0)", 0, 11, "queue time");
  expectOp("rec00", "recompute(0,0)", 0, 12, "queue time");
  expectOp("bwd00.b", "backward(0,0)", 0, 11, "queue time");
  expectOp("bwd00.c", "backward(0,0)", 0, 11, "queue time");
  expectOp("fwd01", "forward(0,1)", 1, 20, "queue time");
  expectOp("bwd01", "backward(0,1)", 1, 21, "queue time");
  expectOp("undated", "backward(0,0)", 0, 11, "stream order");

  for (const std::string kernel : {"late", "loss0", "optimizer", "side.a", "side.b", "side.c"}) {
    const TraceEvent* event = findSpan(trace, kernel);
    ASSERT_NE(event, nullptr) << kernel;
    EXPECT_EQ(event->args.count("op"), 0U) << kernel;
    EXPECT_EQ(event->partition, -1) << kernel;
  }
  // Queue times are on the device clock and are mapped like start times.
  EXPECT_EQ(findSpan(trace, "bwd00.c")->startNs, 2'100);
  EXPECT_EQ(findSpan(trace, "bwd00.c")->args.at("queued_to_start_ns"), "200");
  EXPECT_EQ(findSpan(trace, "undated")->args.count("queued_to_start_ns"), 0U);

  std::map<std::string, std::string> memsetOps;  // by cupti correlation
  for (const TraceEvent& e : trace.events) {
    if (e.phase != Phase::Memset) continue;
    memsetOps[e.args.at("cupti_correlation")] = e.args.count("op") != 0 ? e.args.at("op") : "";
    if (e.args.count("op") != 0) {
      EXPECT_EQ(e.args.at("attributed_by"), "stream order");
    }
  }
  EXPECT_EQ(memsetOps, (std::map<std::string, std::string>{{"20", "backward(0,0)"}, {"21", ""}, {"22", ""}}));

  const ConversionStats& stats = converter.stats();
  EXPECT_EQ(stats.kernels, 14);
  EXPECT_EQ(stats.memsets, 3);
  EXPECT_EQ(stats.attributedKernels, 8);
  EXPECT_EQ(stats.attributed, 9);
  EXPECT_EQ(stats.attributedByStream, 9);
  EXPECT_EQ(stats.attributedByQueueTime, 7);
  EXPECT_EQ(stats.attributedByStreamOrder, 2);
  EXPECT_EQ(stats.unattributed, 8);
  EXPECT_EQ(stats.kernelsWithoutLaunchTime, 1);
  EXPECT_EQ(stats.launches, 0);
  EXPECT_EQ(stats.flows, 0);
  EXPECT_DOUBLE_EQ(stats.attributedKernelShare(), 8.0 / 14.0);
  EXPECT_EQ(trace.metadata.at("cupti_attributed_kernels"), "8");
  EXPECT_EQ(trace.metadata.at("cupti_attributed_kernel_share"), "0.571");
  EXPECT_EQ(trace.metadata.at("cupti_attributed_by_queue_time"), "7");
  EXPECT_EQ(trace.metadata.at("cupti_attributed_by_stream_order"), "2");
  EXPECT_EQ(trace.metadata.at("cupti_kernels_without_launch_time"), "1");
  EXPECT_EQ(trace.metadata.at("cupti_unattributed"), "8");
}

TEST_F(CheapModeAttribution, AnIdStillWinsAndTeachesTheStream) {
  // Exact mode's records on the same capture: an external id ties fwd00 to forward(0,0); the
  // API record of "late" dates it inside backward(0,0), overriding its queue time.
  buffer_.externalCorrelations.push_back(ExternalCorrelationRecord{10, 1});
  buffer_.apiCalls.push_back(RuntimeApiRecord{false, 211, "cudaLaunchKernel", 1'800 + kDeviceAheadNs,
                                              1'805 + kDeviceAheadNs, 1, 42, 6});
  ActivityConverter converter(kClock);
  converter.addHostSpans(host_);
  converter.addBuffer(buffer_);
  const Trace trace = converter.convert();
  const TraceEvent* fwd = findSpan(trace, "fwd00");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->args.at("op"), "forward(0,0)");
  EXPECT_EQ(fwd->args.count("attributed_by"), 0U);
  const TraceEvent* late = findSpan(trace, "late");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->args.at("op"), "backward(0,0)");
  EXPECT_EQ(late->args.at("attributed_by"), "stream");
  EXPECT_EQ(converter.stats().attributedKernels, 9);
  EXPECT_EQ(converter.stats().attributedByQueueTime, 6);
  EXPECT_EQ(converter.stats().launches, 1);
}

// The kernels of a real capture (traces/cuda_run_mlp.json: mlp, two partitions on one H100, GPipe,
// 4 micro-batches, except_last, 3 steps, taken with API records and external ids) replayed as
// cheap mode records them: each kernel queued when its launch call began, no API records, no
// external ids. Both partitions share cuda:0, so their spans overlap in time and only the votes
// tell their streams apart. Every kernel must land on the op the exact capture gave it.
TEST(CheapModeReplay, ARealCaptureAttributesAsTheExactOneDid) {
  const Trace captured = readChromeTraceFile(PIPEPROF_SOURCE_DIR "/traces/cuda_run_mlp.json");
  Trace host;
  std::map<std::string, std::int64_t> launchNs;  // cupti correlation -> launch call start
  for (const TraceEvent& e : captured.events) {
    if (e.kind != EventKind::Span) continue;
    if (e.phase == Phase::Launch) {
      launchNs[e.args.at("cupti_correlation")] = e.startNs;
    } else if (e.args.count("cupti_correlation") == 0) {
      host.events.push_back(e);
    }
  }
  const std::int64_t deviceAheadNs = 1'000'000'000;
  ActivityBuffer buffer;
  std::map<std::string, std::string> exactOps;  // kernel's cupti correlation -> op ("" for none)
  for (const TraceEvent& e : captured.events) {
    if (e.kind != EventKind::Span || e.phase != Phase::Kernel) continue;
    const std::string correlation = e.args.at("cupti_correlation");
    KernelRecord kernel;
    kernel.name = e.name;
    kernel.streamId = static_cast<std::uint32_t>(std::stoul(e.lane.substr(std::string("stream ").size())));
    kernel.correlationId = static_cast<std::uint32_t>(std::stoul(correlation));
    kernel.startNs = static_cast<std::uint64_t>(e.startNs + deviceAheadNs);
    kernel.endNs = static_cast<std::uint64_t>(e.endNs() + deviceAheadNs);
    ASSERT_EQ(launchNs.count(correlation), 1U) << correlation;
    kernel.queuedNs = static_cast<std::uint64_t>(launchNs.at(correlation) + deviceAheadNs);
    buffer.kernels.push_back(kernel);
    exactOps[correlation] = e.args.count("op") != 0 ? e.args.at("op") : "";
  }
  ASSERT_EQ(buffer.kernels.size(), 1388U);

  ActivityConverter converter(ClockMap{deviceAheadNs, 0, 1.0});
  converter.addHostSpans(host);
  converter.addBuffer(buffer);
  const Trace trace = converter.convert();
  std::int64_t compared = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::Span || e.phase != Phase::Kernel) continue;
    const std::string correlation = e.args.at("cupti_correlation");
    EXPECT_EQ(e.args.count("op") != 0 ? e.args.at("op") : "", exactOps.at(correlation)) << correlation;
    ++compared;
  }
  EXPECT_EQ(compared, 1388);
  const ConversionStats& stats = converter.stats();
  EXPECT_EQ(stats.attributedKernels, 1252);
  EXPECT_EQ(stats.attributedByQueueTime, 1252);
  EXPECT_EQ(stats.unattributed, 136);  // the loss's and the optimizer's, on stream 7
  EXPECT_EQ(trace.metadata.at("cupti_attributed_kernel_share"), "0.902");
}

TEST(CuptiCollector, CheapModeSummarySaysTheShareAndWhatNothingDated) {
  auto clock = std::make_shared<test::FakeClock>();
  clock->set(1'000);
  HostTracer tracer(clock);
  tracer.enable();
  auto owned = std::make_unique<test::FakeActivitySource>();
  test::FakeActivitySource& source = *owned;
  source.recordingMode = CuptiMode::Cheap;
  source.note = "no queue times: cuptiActivityEnableLatencyTimestamps failed: not initialized";
  CuptiCollector collector(tracer, std::move(owned));
  EXPECT_EQ(collector.mode(), CuptiMode::Cheap);
  ASSERT_TRUE(collector.start());
  {
    OpSpan op(&tracer, OpKind::Forward, 0, 0, 0, "cuda:0", "partition 0", "forward(0,0)");
    clock->advance(100);
  }
  ActivityBuffer buffer;
  KernelRecord dated;
  dated.name = "dated";
  dated.streamId = 13;
  dated.correlationId = 1;
  dated.queuedNs = 1'050;  // the fake's device clock is the host's
  dated.startNs = 1'060;
  dated.endNs = 1'070;
  buffer.kernels.push_back(dated);
  KernelRecord undated = dated;
  undated.name = "undated";
  undated.correlationId = 2;
  undated.queuedNs = 0;
  undated.startNs = 1'080;
  undated.endNs = 1'090;
  buffer.kernels.push_back(undated);
  source.pending = {buffer};
  collector.stop();
  const Trace device = collector.trace(tracer.drain());
  EXPECT_EQ(device.metadata.at("cupti_mode"), "cheap");
  EXPECT_EQ(device.metadata.at("cupti_attributed_kernel_share"), "0.500");
  EXPECT_EQ(collector.stats().attributedKernels, 1);
  EXPECT_EQ(collector.summary(),
            "cupti (cheap): 2 kernels, 0 copies, 0 memsets; 1 of 2 kernels attributed (50.0%), 1 by stream; "
            "1 unattributed; 0 dropped; 1 kernels without a launch or queue time; "
            "no queue times: cuptiActivityEnableLatencyTimestamps failed: not initialized");
}

TEST(CuptiCollector, RealSourceKeepsTheModeItWasMadeWith) {
  HostTracer tracer;
  EXPECT_EQ(CuptiCollector::create(tracer)->mode(), CuptiMode::Cheap);
  EXPECT_EQ(CuptiCollector::create(tracer, CuptiMode::Exact)->mode(), CuptiMode::Exact);
}

}  // namespace
}  // namespace pipeprof
