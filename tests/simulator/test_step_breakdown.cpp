// Tests for breakDownSteps (core/step_breakdown.h) on the simulator's traces, whose closed forms
// are known (equal stages: GPipe's and 1F1B's bubble), on hand-written rank traces (a receive
// posted before its send) and GPU traces (kernels, copy records and NCCL's kernels), and on an
// H100's trace.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pipeprof::test_step_breakdown {
namespace {

constexpr TimeNs kF = 1000;  // per sample
constexpr TimeNs kB = 2000;
constexpr Bytes kOutput = 4096;

struct Simulated {
  StepBreakdown breakdown;
  TimeNs iterationNs = 0;
};

/// One-layer stages (layer costs per sample: `costs`), one sample per micro-batch.
Simulated simulateAndBreakDown(const std::vector<test::LayerCosts>& costs, std::int64_t m, ScheduleKind kind,
                               std::int64_t v, Checkpoint mode, const Cluster& cluster) {
  const Profile profile = test::makeProfile(costs);
  Candidate candidate = test::makeCandidate(std::vector<std::int64_t>(costs.size(), 1), m, mode, m);
  candidate.schedule = kind;
  candidate.stagesPerDevice = v;
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result = simulate(profile, cluster, candidate, options);
  return {breakDownSteps(Schedule::build(candidate.scheduleSpec({})), result.trace), result.prediction.iterationNs};
}

std::vector<test::LayerCosts> equalStages(std::int64_t n) {
  test::LayerCosts costs{kF, kB, 0, kOutput, 0, 0};
  costs.split = BackwardSplit{kB / 2, kB / 2, 0};
  return std::vector<test::LayerCosts>(static_cast<std::size_t>(n), costs);
}

/// A hand-written span of a measured trace.
TraceEvent spanOf(const std::string& name, const std::string& device, TimeNs start, TimeNs duration, Phase phase) {
  TraceEvent event;
  event.name = name;
  event.device = device;
  event.startNs = start;
  event.durationNs = duration;
  event.phase = phase;
  return event;
}

/// Two one-layer stages, one micro-batch, forward only: the hand-written traces' schedule.
Schedule twoStagesForwardOnly() {
  ScheduleSpec spec;
  spec.balance = {1, 1};
  spec.chunks = 1;
  spec.training = false;
  return Schedule::build(spec);
}

TimeNs idleOf(const DeviceStepBreakdown& device) {
  return device.at(StepCategory::Bubble) + device.at(StepCategory::Waiting) + device.at(StepCategory::Transfer) +
         device.at(StepCategory::Overhead);
}

class EqualStages : public ::testing::TestWithParam<ScheduleKind> {};

TEST_P(EqualStages, GiveTheClosedFormBubbleAndNoWaiting) {
  for (const std::int64_t p : {2, 4}) {
    for (const std::int64_t m : {1, 4, 8}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      const Simulated run =
          simulateAndBreakDown(equalStages(p), m, GetParam(), 1, Checkpoint::Never, test::freeCluster(p));
      ASSERT_EQ(run.breakdown.steps, 1);
      ASSERT_EQ(run.breakdown.devices.size(), static_cast<std::size_t>(p));
      for (const DeviceStepBreakdown& device : run.breakdown.devices) {
        SCOPED_TRACE("device " + std::to_string(device.device));
        EXPECT_EQ(device.stepNs(), run.iterationNs);
        // (p - 1) / (m + p - 1) of the step, exactly.
        EXPECT_EQ(device.at(StepCategory::Bubble) * (m + p - 1), device.stepNs() * (p - 1));
        EXPECT_EQ(device.at(StepCategory::Waiting), 0);
        EXPECT_EQ(device.at(StepCategory::Transfer), 0);
        EXPECT_EQ(device.at(StepCategory::Overhead), 0);
        EXPECT_EQ(device.at(StepCategory::Forward), m * kF);
        EXPECT_EQ(device.at(StepCategory::Backward), m * kB);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GPipeAndOneFOneB, EqualStages, ::testing::Values(ScheduleKind::GPipe, ScheduleKind::OneFOneB),
                         [](const auto& info) { return info.param == ScheduleKind::GPipe ? "gpipe" : "onefoneb"; });

TEST(StepBreakdown, ASlowStageMovesItsNeighboursExtraIdleIntoWaitingAndLeavesTheBubble) {
  for (const ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    SCOPED_TRACE(scheduleKindName(kind));
    constexpr std::int64_t p = 4;
    constexpr std::int64_t m = 8;
    const Simulated equal = simulateAndBreakDown(equalStages(p), m, kind, 1, Checkpoint::Never, test::freeCluster(p));
    std::vector<test::LayerCosts> costs = equalStages(p);
    costs[2].forwardNs *= 2;
    costs[2].backwardNs *= 2;
    const Simulated slow = simulateAndBreakDown(costs, m, kind, 1, Checkpoint::Never, test::freeCluster(p));
    EXPECT_GT(slow.iterationNs, equal.iterationNs);
    for (std::size_t d = 0; d < static_cast<std::size_t>(p); ++d) {
      SCOPED_TRACE("device " + std::to_string(d));
      const DeviceStepBreakdown& before = equal.breakdown.devices[d];
      const DeviceStepBreakdown& after = slow.breakdown.devices[d];
      EXPECT_EQ(after.stepNs(), slow.iterationNs);
      if (d == 2) {
        // The slow device waits for nobody: what idle it has left is the schedule's.
        EXPECT_EQ(after.at(StepCategory::Waiting), 0);
        EXPECT_EQ(after.at(StepCategory::Bubble), idleOf(after));
        continue;
      }
      // The others keep their bubble; every extra idle nanosecond is waiting for the slow one.
      EXPECT_EQ(after.at(StepCategory::Bubble), before.at(StepCategory::Bubble));
      EXPECT_EQ(after.at(StepCategory::Waiting), idleOf(after) - idleOf(before));
      EXPECT_GT(after.at(StepCategory::Waiting), 0);
    }
  }
}

TEST(StepBreakdown, ALinksLatencyIsTransfer) {
  constexpr std::int64_t p = 2;
  constexpr std::int64_t m = 4;
  constexpr TimeNs kLatency = 300;
  const Simulated free =
      simulateAndBreakDown(equalStages(p), m, ScheduleKind::OneFOneB, 1, Checkpoint::Never, test::freeCluster(p));
  const Simulated slow = simulateAndBreakDown(equalStages(p), m, ScheduleKind::OneFOneB, 1, Checkpoint::Never,
                                              Cluster::uniform(p, std::nullopt, 0.0, kLatency, "dev"));
  for (std::size_t d = 0; d < static_cast<std::size_t>(p); ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    const DeviceStepBreakdown& device = slow.breakdown.devices[d];
    EXPECT_EQ(device.stepNs(), slow.iterationNs);
    EXPECT_EQ(free.breakdown.devices[d].at(StepCategory::Transfer), 0);
    // Each device waits at least once for a message to cross (device 1 its first activation,
    // device 0 its first gradient).
    EXPECT_GE(device.at(StepCategory::Transfer), kLatency);
    EXPECT_EQ(device.at(StepCategory::Transfer) % kLatency, 0);
  }
}

TEST(StepBreakdown, TheDocumentsExample) {
  // docs/runtime.md, "Where a step goes": GPipe, p = 2, m = 2; device 1's stage twice as slow;
  // a message takes 0.5 ms.
  constexpr TimeNs kMs = 1000000;
  std::vector<test::LayerCosts> costs = {{kMs, 2 * kMs, 0, kOutput, 0, 0}, {2 * kMs, 4 * kMs, 0, kOutput, 0, 0}};
  const Simulated run = simulateAndBreakDown(costs, 2, ScheduleKind::GPipe, 1, Checkpoint::Never,
                                             Cluster::uniform(2, std::nullopt, 0.0, kMs / 2, "dev"));
  ASSERT_EQ(run.iterationNs, 16 * kMs);
  const DeviceStepBreakdown& fast = run.breakdown.devices[0];
  EXPECT_EQ(fast.at(StepCategory::Forward), 2 * kMs);
  EXPECT_EQ(fast.at(StepCategory::Backward), 4 * kMs);
  EXPECT_EQ(fast.at(StepCategory::Bubble), 3 * kMs);
  EXPECT_EQ(fast.at(StepCategory::Waiting), 6 * kMs);
  EXPECT_EQ(fast.at(StepCategory::Transfer), kMs);
  EXPECT_EQ(fast.at(StepCategory::Overhead), 0);
  const DeviceStepBreakdown& slow = run.breakdown.devices[1];
  EXPECT_EQ(slow.at(StepCategory::Forward), 4 * kMs);
  EXPECT_EQ(slow.at(StepCategory::Backward), 8 * kMs);
  EXPECT_EQ(slow.at(StepCategory::Bubble), 7 * kMs / 2);
  EXPECT_EQ(slow.at(StepCategory::Waiting), 0);
  EXPECT_EQ(slow.at(StepCategory::Transfer), kMs / 2);
  EXPECT_EQ(slow.stepNs(), 16 * kMs);
}

struct ScheduleCase {
  ScheduleKind kind;
  std::int64_t v;
  Checkpoint mode;
};

TEST(StepBreakdown, CategoriesSumToTheStepForEverySchedule) {
  std::vector<test::LayerCosts> costs = equalStages(8);
  for (std::size_t l = 0; l < costs.size(); ++l) {  // unequal stages, so waiting and bubble both occur
    costs[l].forwardNs += static_cast<TimeNs>(137 * l);
    costs[l].backwardNs += static_cast<TimeNs>(311 * (l % 3));
    costs[l].split = BackwardSplit{costs[l].backwardNs / 3, costs[l].backwardNs - costs[l].backwardNs / 3, 0};
  }
  const std::vector<ScheduleCase> cases = {{ScheduleKind::GPipe, 1, Checkpoint::Always},
                                           {ScheduleKind::OneFOneB, 1, Checkpoint::ExceptLast},
                                           {ScheduleKind::Interleaved, 2, Checkpoint::Never},
                                           {ScheduleKind::ZeroBubble, 1, Checkpoint::Never},
                                           {ScheduleKind::InterleavedZeroBubble, 2, Checkpoint::ExceptLast},
                                           {ScheduleKind::ZeroBubbleV, 2, Checkpoint::Never}};
  for (const ScheduleCase& c : cases) {
    const std::int64_t p =
        static_cast<std::int64_t>(costs.size()) /
        (c.kind == ScheduleKind::GPipe || c.kind == ScheduleKind::OneFOneB || c.kind == ScheduleKind::ZeroBubble ? 1
                                                                                                                 : c.v);
    SCOPED_TRACE(scheduleKindName(c.kind));
    const Simulated run =
        simulateAndBreakDown(costs, 8, c.kind, c.v, c.mode, Cluster::uniform(p, std::nullopt, 1e9, 250, "dev"));
    ASSERT_EQ(run.breakdown.devices.size(), static_cast<std::size_t>(p));
    TimeNs computeNs = 0;
    for (const DeviceStepBreakdown& device : run.breakdown.devices) {
      EXPECT_EQ(device.stepNs(), run.iterationNs) << "device " << device.device;
      for (const StepCategory category : stepCategories()) {
        if (isComputeCategory(category)) computeNs += device.at(category);
      }
    }
    TimeNs profiledNs = 0;  // every stage's forward and backward of 8 one-sample micro-batches
    for (const test::LayerCosts& layer : costs) profiledNs += 8 * (layer.forwardNs + layer.backwardNs);
    EXPECT_GE(computeNs, profiledNs);  // recomputes come on top
  }
}

TEST(StepBreakdown, AReceivePostedBeforeItsSendWaitsAndThenTransfers) {
  // Two ranks, one micro-batch, forward only: rank 1 posts its receive at 0, rank 0's forward
  // ends at 100 and sends until 130, rank 1's forward starts at 135.
  const Schedule schedule = twoStagesForwardOnly();
  const auto span = spanOf;
  Trace trace;
  trace.metadata["source"] = "measured";
  trace.events = {span("step", "cpu:0", 0, 140, Phase::Step),
                  span("forward(0,0)", "cpu:0", 0, 100, Phase::Forward),
                  span("send copy(0,0->1)", "cpu:0", 100, 30, Phase::Copy),
                  span("step", "cpu:1", 0, 160, Phase::Step),
                  span("receive copy(0,0->1)", "cpu:1", 0, 130, Phase::Copy),
                  span("forward(0,1)", "cpu:1", 135, 20, Phase::Forward)};
  const StepBreakdown breakdown = breakDownSteps(schedule, trace);
  ASSERT_EQ(breakdown.devices.size(), 2u);
  EXPECT_EQ(breakdown.source, "measured");
  const DeviceStepBreakdown& receiver = breakdown.devices[1];
  EXPECT_EQ(receiver.traceDevice, "cpu:1");
  EXPECT_EQ(receiver.stepNs(), 160);
  EXPECT_EQ(receiver.at(StepCategory::Forward), 20);
  EXPECT_EQ(receiver.at(StepCategory::Bubble) + receiver.at(StepCategory::Waiting), 100);
  EXPECT_EQ(receiver.at(StepCategory::Transfer), 30);
  EXPECT_EQ(receiver.at(StepCategory::Overhead), 5 + 5);  // before its forward, and after it
  const DeviceStepBreakdown& sender = breakdown.devices[0];
  EXPECT_EQ(sender.stepNs(), 140);
  EXPECT_EQ(sender.at(StepCategory::Forward), 100);
  // After its forward rank 0 waits for rank 1's (until 155, past its own step's end).
  EXPECT_EQ(sender.at(StepCategory::Bubble) + sender.at(StepCategory::Waiting), 40);
}

TEST(StepBreakdown, AveragesTheStepsOfAMeasuredRunAndRoundTripsThroughJson) {
  ScheduleSpec spec;
  spec.balance = {1};
  spec.chunks = 1;
  const Schedule schedule = Schedule::build(spec);
  Trace trace;
  const auto add = [&](const std::string& name, const std::string& device, TimeNs start, TimeNs duration, Phase phase) {
    trace.events.push_back(spanOf(name, device, start, duration, phase));
  };
  add("warmup", "host", 0, 100, Phase::Warmup);
  add("forward(0,0)", "cpu:0", 10, 50, Phase::Forward);  // in the warm-up: not a step's
  for (const TimeNs start : {1000, 2000}) {
    const TimeNs scale = start / 1000;
    add("step", "host", start, 300 * scale, Phase::Step);
    add("forward(0,0)", "cpu:0", start + 10, 50 * scale, Phase::Forward);
    add("loss(0)", "cpu:0", start + 10 + 50 * scale, 10, Phase::Loss);
    add("backward(0,0)", "cpu:0", start + 100 * scale, 100 * scale, Phase::Backward);
    add("optimizer", "host", start + 250 * scale, 30, Phase::Optimizer);
  }
  const StepBreakdown breakdown = breakDownSteps(schedule, trace);
  EXPECT_EQ(breakdown.steps, 2);
  ASSERT_EQ(breakdown.devices.size(), 1u);
  const DeviceStepBreakdown& device = breakdown.devices[0];
  EXPECT_EQ(device.traceDevice, "cpu:0");
  EXPECT_EQ(device.stepNs(), 450);  // (300 + 600) / 2
  EXPECT_EQ(device.at(StepCategory::Forward), 75);
  EXPECT_EQ(device.at(StepCategory::Loss), 10);
  EXPECT_EQ(device.at(StepCategory::Backward), 150);
  EXPECT_EQ(device.at(StepCategory::Optimizer), 30);
  EXPECT_EQ(device.at(StepCategory::Overhead), 450 - 75 - 10 - 150 - 30);
  EXPECT_EQ(device.at(StepCategory::Bubble) + device.at(StepCategory::Waiting), 0);

  const StepBreakdown back = stepBreakdownFromJson(JsonCursor(toJson(breakdown), "report.json"));
  ASSERT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.steps, 2);
  EXPECT_EQ(back.devices[0].ns, device.ns);
  EXPECT_EQ(back.devices[0].traceDevice, "cpu:0");
  nlohmann::json bad = toJson(breakdown);
  bad["devices"][0]["waiting_ns"] = -1;
  EXPECT_THROW(stepBreakdownFromJson(JsonCursor(bad, "report.json")), FormatError);
}

/// A CUPTI record of a kernel, memset or copy attributed to `op` (activity_converter.h).
TraceEvent deviceWork(const std::string& op, const std::string& device, TimeNs start, TimeNs duration,
                      Phase phase = Phase::Kernel) {
  TraceEvent event = spanOf(phase == Phase::Memcpy ? "Memcpy DtoD" : "gemm", device, start, duration, phase);
  event.lane = "stream 7";
  event.args["op"] = op;
  return event;
}

TEST(StepBreakdown, OnAGpuAnOpIsItsKernelsAndACopyItsCopyRecords) {
  // Two CUDA devices, one micro-batch, forward only. The host launches each op in a few
  // microseconds; the GPUs run: device 0 forward(0,0)'s kernels at 10-50 and 60-90, the copy's
  // record at 95-120, device 1 forward(0,1)'s kernel at 130-170.
  const Schedule schedule = twoStagesForwardOnly();
  Trace trace;
  trace.events = {spanOf("step", "host", 0, 200, Phase::Step),
                  spanOf("forward(0,0)", "cuda:0", 0, 20, Phase::Forward),
                  spanOf("copy(0,0->1)", "cuda:0", 20, 5, Phase::Copy),
                  spanOf("forward(0,1)", "cuda:1", 25, 15, Phase::Forward),
                  deviceWork("forward(0,0)", "cuda:0", 10, 40),
                  deviceWork("forward(0,0)", "cuda:0", 60, 30),
                  deviceWork("copy(0,0->1)", "cuda:1", 95, 25, Phase::Memcpy),
                  deviceWork("forward(0,1)", "cuda:1", 130, 40),
                  spanOf("cudaLaunchKernel", "cuda:0", 1, 3, Phase::Launch),
                  spanOf("elementwise", "cuda:1", 175, 10, Phase::Kernel)};  // no op's: left out
  const StepBreakdown breakdown = breakDownSteps(schedule, trace);
  ASSERT_EQ(breakdown.devices.size(), 2u);

  const DeviceStepBreakdown& first = breakdown.devices[0];
  EXPECT_EQ(first.stepNs(), 200);
  EXPECT_EQ(first.at(StepCategory::Forward), 70);             // its two kernels, not the host's 20
  EXPECT_EQ(first.at(StepCategory::Overhead), 10 + 10 + 30);  // before, between the kernels, at the end
  EXPECT_EQ(first.at(StepCategory::Bubble) + first.at(StepCategory::Waiting), 80);  // until device 1's kernel ends
  // The bubble replays the schedule with each forward at device 0's mean of 70 (one op, two
  // kernels): it leaves device 0 idle for 70.
  EXPECT_EQ(first.at(StepCategory::Bubble), 70);

  const DeviceStepBreakdown& second = breakdown.devices[1];
  EXPECT_EQ(second.stepNs(), 200);
  EXPECT_EQ(second.at(StepCategory::Forward), 40);
  // Until forward(0,0)'s last kernel ended: waiting; until the copy record began: overhead;
  // while it ran: transfer; then overhead until the kernel, and after it to the step's end.
  EXPECT_EQ(second.at(StepCategory::Bubble) + second.at(StepCategory::Waiting), 90);
  EXPECT_EQ(second.at(StepCategory::Transfer), 25);
  EXPECT_EQ(second.at(StepCategory::Overhead), 5 + 10 + 30);
  EXPECT_EQ(second.at(StepCategory::Bubble), 40);
}

TEST(StepBreakdown, ANcclReceiveWaitsForItsSendersKernelAndThenTransfers) {
  // Two ranks on CUDA devices, one micro-batch, forward only. The hosts' spans take microseconds
  // (NCCL's calls return at once); the GPUs run: rank 0's forward kernel at 10-100 and its NCCL
  // send kernel at 110-150; rank 1's NCCL receive kernel, launched when the receive was posted,
  // at 30-150, and its forward kernel at 160-200.
  const Schedule schedule = twoStagesForwardOnly();
  Trace trace;
  trace.events = {spanOf("step", "rank0 cuda:0", 0, 300, Phase::Step),
                  spanOf("forward(0,0)", "rank0 cuda:0", 0, 20, Phase::Forward),
                  spanOf("send copy(0,0->1)", "rank0 cuda:0", 20, 2, Phase::Copy),
                  spanOf("step", "rank1 cuda:1", 0, 300, Phase::Step),
                  spanOf("receive copy(0,0->1)", "rank1 cuda:1", 2, 2, Phase::Copy),
                  spanOf("forward(0,1)", "rank1 cuda:1", 5, 10, Phase::Forward),
                  deviceWork("forward(0,0)", "rank0 cuda:0", 10, 90),
                  deviceWork("send copy(0,0->1)", "rank0 cuda:0", 110, 40),
                  deviceWork("receive copy(0,0->1)", "rank1 cuda:1", 30, 120),
                  deviceWork("forward(0,1)", "rank1 cuda:1", 160, 40)};
  const StepBreakdown breakdown = breakDownSteps(schedule, trace);
  ASSERT_EQ(breakdown.devices.size(), 2u);
  const DeviceStepBreakdown& receiver = breakdown.devices[1];
  EXPECT_EQ(receiver.stepNs(), 300);
  EXPECT_EQ(receiver.at(StepCategory::Forward), 40);
  // The receive's kernel ran from 30, but until rank 0's forward ended (100) rank 1 waited for
  // it, until the send's kernel started (110) for its dispatch; from then the data moved (150).
  EXPECT_EQ(receiver.at(StepCategory::Bubble) + receiver.at(StepCategory::Waiting), 100);
  EXPECT_EQ(receiver.at(StepCategory::Transfer), 40);
  EXPECT_EQ(receiver.at(StepCategory::Overhead), 10 + 10 + 100);  // dispatch, the forward's launch, the tail
  const DeviceStepBreakdown& sender = breakdown.devices[0];
  EXPECT_EQ(sender.at(StepCategory::Forward), 90);
  EXPECT_EQ(sender.at(StepCategory::Bubble) + sender.at(StepCategory::Waiting), 100);  // until 200
  EXPECT_EQ(sender.at(StepCategory::Transfer), 0);  // its send kernel runs beside its stream, not in its step's way

  // Without NCCL's kernels the hosts' spans are all there is of the message: its 2 ns receive
  // ended long before the data was in, so rank 1's wait past the send's span (20) and the
  // transfer read as overhead.
  Trace withoutNccl = trace;
  withoutNccl.events.erase(std::remove_if(withoutNccl.events.begin(), withoutNccl.events.end(),
                                          [](const TraceEvent& event) {
                                            const auto op = event.args.find("op");
                                            return op != event.args.end() &&
                                                   op->second.find("copy") != std::string::npos;
                                          }),
                           withoutNccl.events.end());
  const DeviceStepBreakdown unseen = breakDownSteps(schedule, withoutNccl).devices.at(1);
  EXPECT_EQ(unseen.at(StepCategory::Bubble) + unseen.at(StepCategory::Waiting), 20);
  EXPECT_EQ(unseen.at(StepCategory::Transfer), 0);
  EXPECT_EQ(unseen.at(StepCategory::Overhead), 140 + 100);
}

TEST(StepBreakdown, AMeasuredH100TraceBreaksDownByItsKernels) {
  // traces/cuda_run_mlp.json: mlp [7,8] x4 except_last on one H100 (both partitions on cuda:0),
  // 3 steps, every kernel CUPTI recorded; the GPU idles most of each step (traces/README.md).
  const Trace measured = readChromeTraceFile(std::string(PIPEPROF_SOURCE_DIR) + "/traces/cuda_run_mlp.json");
  ScheduleSpec spec;
  spec.balance = {7, 8};
  spec.chunks = 4;
  spec.checkpoint = Checkpoint::ExceptLast;
  const Schedule schedule = Schedule::build(spec);
  Trace hostOnly = measured;
  hostOnly.events.erase(std::remove_if(hostOnly.events.begin(), hostOnly.events.end(),
                                       [](const TraceEvent& event) { return event.phase == Phase::Kernel; }),
                        hostOnly.events.end());
  const StepBreakdown gpu = breakDownSteps(schedule, measured);
  const StepBreakdown host = breakDownSteps(schedule, hostOnly);
  ASSERT_EQ(gpu.steps, 3);
  ASSERT_EQ(gpu.devices.size(), 2u);
  ASSERT_EQ(host.devices.size(), 2u);
  for (std::size_t d = 0; d < 2; ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    const DeviceStepBreakdown& onGpu = gpu.devices[d];
    const DeviceStepBreakdown& onHost = host.devices[d];
    // The same step windows (each category's mean over the 3 steps is rounded on its own).
    EXPECT_NEAR(onGpu.stepNs(), onHost.stepNs(), static_cast<double>(kStepCategories));
    for (const StepCategory category : {StepCategory::Forward, StepCategory::Recompute, StepCategory::Backward}) {
      SCOPED_TRACE(stepCategoryName(category));
      EXPECT_GT(onGpu.at(category), 0);
      // Launch-bound: the GPU ran each op's kernels in a fraction of the host's time for it.
      EXPECT_LT(onGpu.at(category) * 2, onHost.at(category));
    }
    TimeNs idleNs = 0;
    for (const StepCategory category : stepCategories()) {
      if (!isComputeCategory(category)) idleNs += onGpu.at(category);
    }
    EXPECT_GT(idleNs * 2, onGpu.stepNs());  // the GPU idled more than half of each step
  }
}

TEST(WakeUps, ReadBackTheSimulatorsWakeLatency) {
  // Every wake-up of a simulated trace is the cluster's wake latency. Under GPipe each stage's
  // worker but the first's sleeps before its first forward, and each but the last's before its
  // first backward; every other op finds it busy when its data arrives (SimulateClosedForm's
  // derivation). Under 1F1B a worker also sleeps between its steady state's ops.
  constexpr TimeNs kWake = 60;
  for (const ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    for (const std::int64_t p : {2, 4}) {
      SCOPED_TRACE(scheduleKindName(kind) + " p=" + std::to_string(p));
      Cluster cluster = test::freeCluster(p);
      cluster.wakeLatencyNs = kWake;
      const Profile profile = test::makeProfile(equalStages(p));
      Candidate candidate =
          test::makeCandidate(std::vector<std::int64_t>(static_cast<std::size_t>(p), 1), 4, Checkpoint::Never, 4);
      candidate.schedule = kind;
      SimulationOptions options;
      options.recordTrace = true;
      const SimulationResult result = simulate(profile, cluster, candidate, options);
      const Schedule schedule = Schedule::build(candidate.scheduleSpec({}));
      const std::vector<TimeNs> wakeUps = wakeUpsNs(schedule, result.trace);
      if (kind == ScheduleKind::GPipe) {
        EXPECT_EQ(wakeUps.size(), static_cast<std::size_t>(2 * (p - 1)));
      }
      EXPECT_GE(wakeUps.size(), static_cast<std::size_t>(2 * (p - 1)));
      EXPECT_EQ(wakeUps, std::vector<TimeNs>(wakeUps.size(), kWake));
      cluster.wakeLatencyNs = 0;  // every worker starts the moment its data is there
      const std::vector<TimeNs> awake = wakeUpsNs(schedule, simulate(profile, cluster, candidate, options).trace);
      EXPECT_FALSE(awake.empty());
      EXPECT_EQ(awake, std::vector<TimeNs>(awake.size(), 0));
    }
  }
}

TEST(WakeUps, ADeviceBusyWhenItsDataArrivesHasNone) {
  // Forward-only [1,1]: device 1 is busy with another span until after device 0's forward
  // ends, so its forward waited for nothing; the step's first op waits for nothing either.
  Trace trace;
  trace.events.push_back(spanOf("step", "host", 0, 1000, Phase::Step));
  trace.events.push_back(spanOf("forward(0,0)", "cpu:0", 10, 100, Phase::Forward));
  trace.events.push_back(spanOf("forward(0,1)", "cpu:1", 200, 100, Phase::Forward));
  EXPECT_EQ(wakeUpsNs(twoStagesForwardOnly(), trace), (std::vector<TimeNs>{90}));
  trace.events.push_back(spanOf("optimizer", "cpu:1", 50, 140, Phase::Optimizer));
  EXPECT_TRUE(wakeUpsNs(twoStagesForwardOnly(), trace).empty());
}

TEST(StepBreakdown, AnEmptyTraceHasNoSteps) {
  ScheduleSpec spec;
  spec.balance = {1, 1};
  spec.chunks = 2;
  const StepBreakdown breakdown = breakDownSteps(Schedule::build(spec), Trace{});
  EXPECT_EQ(breakdown.steps, 0);
  ASSERT_EQ(breakdown.devices.size(), 2u);
  EXPECT_EQ(breakdown.devices[1].stepNs(), 0);
}

}  // namespace
}  // namespace pipeprof::test_step_breakdown
