// Tests for the launch model (docs/simulator.md, "Launches"): host threads feeding streams, in closed form.
#include <pipeprof/simulator/simulator.h>

#include "launch_model.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof::test_launches {
namespace {

using test::LayerCosts;

LaunchCost launch(TimeNs hostNs, TimeNs deviceNs, std::int64_t kernels) {
  LaunchCost cost;
  cost.hostNs = hostNs;
  cost.deviceNs = deviceNs;
  cost.kernels = kernels;
  return cost;
}

/// `layers` one-layer stages of a CUDA profile whose every layer launches `forward` and
/// `backward` (one sample at micro-batch 1, so a micro-batch of 1 uses them as they are). The
/// synchronised times are deliberately far off: the launch model must not use them.
Profile launchProfile(std::int64_t layers, const LaunchCost& forward, const LaunchCost& backward) {
  Profile profile = test::uniformProfile(layers, LayerCosts{5'000'000, 7'000'000, 0, 0, 0, 0});
  profile.environment.deviceType = "cuda";
  for (LayerProfile& layer : profile.layers) {
    layer.costs[0].forwardLaunch = forward;
    layer.costs[0].backwardLaunch = backward;
  }
  return profile;
}

SimulationResult simulateTraced(const Profile& profile, const Cluster& cluster, const Candidate& candidate) {
  SimulationOptions options;
  options.recordTrace = true;
  return simulate(profile, cluster, candidate, options);
}

const TraceEvent& span(const Trace& trace, const std::string& name) {
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && event.name == name) return event;
  }
  ADD_FAILURE() << "no span " << name;
  static const TraceEvent none;
  return none;
}

/// [start, end] of a span.
std::vector<TimeNs> interval(const Trace& trace, const std::string& name) {
  const TraceEvent& event = span(trace, name);
  return {event.startNs, event.endNs()};
}

// launchTimes() against kernels walked one by one: kernel x launched by t + (x+1) l/k starts at
// the later of that and the previous kernel's end, and runs d/k (all divisible here).
TEST(LaunchTimes, ClosedFormIsTheKernelByKernelWalk) {
  for (TimeNs hostNs : {0, 40, 120, 400}) {
    for (TimeNs deviceNs : {0, 40, 120, 400}) {
      for (std::int64_t kernels : {1, 2, 4, 8}) {
        for (TimeNs streamFreeNs : {0, 50, 1000}) {
          const TimeNs startNs = 30;
          TimeNs end = streamFreeNs;
          TimeNs first = -1;
          for (std::int64_t x = 0; x < kernels; ++x) {
            const TimeNs begin = std::max(end, startNs + (x + 1) * hostNs / kernels);
            if (x == 0) first = begin;
            end = begin + deviceNs / kernels;
          }
          const sim::LaunchTimes times = sim::launchTimes(startNs, hostNs, deviceNs, kernels, streamFreeNs);
          const std::string where = "l=" + std::to_string(hostNs) + " d=" + std::to_string(deviceNs) +
                                    " k=" + std::to_string(kernels) + " s=" + std::to_string(streamFreeNs);
          EXPECT_EQ(times.launchedNs, startNs + hostNs) << where;
          EXPECT_EQ(times.firstKernelNs, first) << where;
          EXPECT_EQ(times.endNs, end) << where;
        }
      }
    }
  }
}

TEST(LaunchTimes, RoundsUpAndHandlesOpsWithoutKernels) {
  // l = 10, d = 7, k = 3: max(0 + 7, 0 + 10 + ceil(7/3)) = 13; first kernel at ceil(10/3) = 4.
  sim::LaunchTimes times = sim::launchTimes(0, 10, 7, 3, 0);
  EXPECT_EQ(times.launchedNs, 10);
  EXPECT_EQ(times.firstKernelNs, 4);
  EXPECT_EQ(times.endNs, 13);
  // No kernels (a loss): done when the host is and the stream is free.
  times = sim::launchTimes(100, 0, 0, 0, 180);
  EXPECT_EQ(times.launchedNs, 100);
  EXPECT_EQ(times.endNs, 180);
  times = sim::launchTimes(100, 30, 0, 0, 20);
  EXPECT_EQ(times.endNs, 130);
  // Device time without a kernel count counts as one kernel.
  EXPECT_EQ(sim::launchTimes(0, 10, 50, 0, 0).endNs, 60);
}

// (a) Launch-bound: one stage, l > d. Each loss waits for its forward's last kernel but the
// worker has launched the next forward by then: forward(i) is launched in [i lf, (i+1) lf] and
// ends df/kf after; the backwards follow on the autograd thread from 4 lf, each launched lb
// after the previous, and the last ends db/kb after its last launch:
//     iteration = m (lf + lb) + ceil(db / kb)
TEST(LaunchModel, LaunchBoundStepIsTheHostsTime) {
  const LaunchCost forward = launch(100, 20, 4);
  const LaunchCost backward = launch(200, 40, 4);
  const Profile profile = launchProfile(1, forward, backward);
  for (std::int64_t m : {1, 2, 4, 8}) {
    const Candidate candidate = test::makeCandidate({1}, m, Checkpoint::Never, m);
    const SimulationResult result = simulateTraced(profile, test::freeCluster(1), candidate);
    const Prediction& p = result.prediction;
    EXPECT_EQ(p.iterationNs, m * (100 + 200) + 10) << "m=" << m;
    ASSERT_EQ(p.busyNs.size(), 1u);
    EXPECT_EQ(p.busyNs[0], m * (20 + 40)) << "busy is the device's time";
    EXPECT_DOUBLE_EQ(p.bubbleFraction, 1.0 - static_cast<double>(m * 60) / static_cast<double>(m * 300 + 10));
    for (std::int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(interval(result.trace, "forward(" + std::to_string(i) + ",0)"),
                (std::vector<TimeNs>{100 * i, 100 * i + 105}));
    }
    // backward(0,0) is the last one launched: from m lf + (m-1) lb for lb.
    const TraceEvent& last = span(result.trace, "launch backward(0,0)");
    EXPECT_EQ(last.lane, "cuda api autograd");
    EXPECT_EQ(last.phase, Phase::Launch);
    EXPECT_EQ(last.startNs, 100 * m + 200 * (m - 1));
    EXPECT_EQ(last.durationNs, 200);
    EXPECT_EQ(last.args.at("kernels"), "4");
    EXPECT_EQ(span(result.trace, "backward(0,0)").endNs(), p.iterationNs);
  }
}

// (b) Device-bound: d > l. The host keeps ahead, so the stream runs without a gap from its
// first kernel, ceil(lf / kf) after the start:
//     iteration = ceil(lf / kf) + m (df + db)
TEST(LaunchModel, DeviceBoundStepIsTheDevicesTime) {
  const Profile profile = launchProfile(1, launch(20, 100, 4), launch(40, 200, 4));
  for (std::int64_t m : {1, 2, 4, 8}) {
    const Candidate candidate = test::makeCandidate({1}, m, Checkpoint::Never, m);
    const SimulationResult result = simulateTraced(profile, test::freeCluster(1), candidate);
    EXPECT_EQ(result.prediction.iterationNs, 5 + m * (100 + 200)) << "m=" << m;
    EXPECT_EQ(result.prediction.busyNs[0], m * 300);
    // The worker launches the forwards back to back; each then waits for the stream.
    for (std::int64_t i = 0; i < m; ++i) {
      const TraceEvent& launched = span(result.trace, "launch forward(" + std::to_string(i) + ",0)");
      EXPECT_EQ(launched.lane, "cuda api worker 0");
      EXPECT_EQ(launched.startNs, 20 * i);
      EXPECT_EQ(span(result.trace, "forward(" + std::to_string(i) + ",0)").endNs(), 100 * i + 105);
    }
  }
}

// (c) Two stages on one pipeline device (interleaved, p 1, v 2, m 2, never; one kernel per
// pass: a kernel starts when launched and its stream is free). Order:
// F00 F01 L0 B01 F10 B00 F11 L1 B11 B10. The worker launches the forwards, the autograd thread
// the backwards; a lane's next op starts when the host launched the previous one, a data
// dependant when the previous kernel ended. With l/d = 10/100 (forward), 20/200 (backward):
//
//   op    host thread  launch       stream 0 (stage 0)   stream 1 (stage 1)
//   F00   worker       [0, 10]      [10, 110]
//   F01   worker       [110, 120]                        [120, 220]   copy after F00
//   L0    worker       [120, 120]                        (220)
//   B01   autograd     [120, 140]                        [220, 420]
//   F10   worker       [140, 150]   [150, 250]                        overlaps B01's kernel
//   B00   autograd     [420, 440]   [440, 640]                        grad copy after B01
//   F11   worker       [440, 450]                        [450, 550]   overlaps B00's kernel
//   L1    worker       [450, 450]                        (550)
//   B11   autograd     [450, 470]                        [550, 750]
//   B10   autograd     [750, 770]   [770, 970]                        grad copy after B11
//
// The host threads never launch at once (the lane's order chains them), the streams overlap.
TEST(LaunchModel, OneWorkerAndTheAutogradThreadFeedTwoStreams) {
  const Profile profile = launchProfile(2, launch(10, 100, 1), launch(20, 200, 1));
  Candidate candidate = test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2);
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  const SimulationResult result = simulateTraced(profile, test::freeCluster(1), candidate);
  EXPECT_EQ(result.prediction.iterationNs, 970);
  ASSERT_EQ(result.prediction.busyNs.size(), 1u);
  EXPECT_EQ(result.prediction.busyNs[0], 1200);  // both streams' kernels: more than the step
  EXPECT_DOUBLE_EQ(result.prediction.bubbleFraction, 0.0);
  const Trace& trace = result.trace;
  const std::vector<std::pair<std::string, std::vector<TimeNs>>> ops = {
      {"forward(0,0)", {0, 110}},    {"forward(0,1)", {110, 220}},  {"backward(0,1)", {120, 420}},
      {"forward(1,0)", {140, 250}},  {"backward(0,0)", {420, 640}}, {"forward(1,1)", {440, 550}},
      {"backward(1,1)", {450, 750}}, {"backward(1,0)", {750, 970}}};
  for (const auto& [name, expected] : ops) EXPECT_EQ(interval(trace, name), expected) << name;
  const std::vector<std::pair<std::string, std::vector<TimeNs>>> launches = {
      {"launch forward(0,0)", {0, 10}},     {"launch forward(0,1)", {110, 120}},  {"launch backward(0,1)", {120, 140}},
      {"launch forward(1,0)", {140, 150}},  {"launch backward(0,0)", {420, 440}}, {"launch forward(1,1)", {440, 450}},
      {"launch backward(1,1)", {450, 470}}, {"launch backward(1,0)", {750, 770}}};
  for (const auto& [name, expected] : launches) {
    EXPECT_EQ(interval(trace, name), expected) << name;
    const bool backward = name.rfind("launch backward", 0) == 0;
    EXPECT_EQ(span(trace, name).lane, backward ? "cuda api autograd" : "cuda api worker 0");
    EXPECT_EQ(span(trace, name).device, "dev:0");
  }
  bool lossLaunch = false;
  for (const TraceEvent& event : trace.events) lossLaunch |= event.name.rfind("launch loss", 0) == 0;
  EXPECT_FALSE(lossLaunch) << "a loss launches nothing";
}

// Two pipeline devices placed on one cluster device (GPipe, m 2, never): two workers launch the
// forwards, the device's one autograd thread launches every backward of both, one at a time.
// Derivation (l/d = 10/100 forward, 20/200 backward, one kernel; launch [from, to] -> end):
//   lane 0: F00 [0,10] -> 110, F10 [10,20] -> 210; lane 1: F01 [110,120] -> 220, L0 (220),
//   F11 [210,220] -> 320, L1 (320). Autograd: B11 (after L1's launch) [220,240] -> 520; B01
//   (after B11's launch) [240,260] -> 720; B10 (gradient of B11) [520,540] -> 740 on stream 0
//   while stream 1 runs B01's kernel; B00 (gradient of B01) [720,740] -> max(740 + 200, 940).
TEST(LaunchModel, StagesOfOneDeviceShareItsAutogradThread) {
  const Profile profile = launchProfile(2, launch(10, 100, 1), launch(20, 200, 1));
  Candidate candidate = test::makeCandidate({1, 1}, 2, Checkpoint::Never, 2);
  candidate.devices = {0, 0};
  const SimulationResult result = simulateTraced(profile, test::freeCluster(1), candidate);
  EXPECT_EQ(result.prediction.iterationNs, 940);
  EXPECT_EQ(result.prediction.busyNs, (std::vector<TimeNs>{600, 600}));
  const Trace& trace = result.trace;
  EXPECT_EQ(interval(trace, "launch backward(1,1)"), (std::vector<TimeNs>{220, 240}));
  EXPECT_EQ(interval(trace, "launch backward(0,1)"), (std::vector<TimeNs>{240, 260}));
  EXPECT_EQ(interval(trace, "launch backward(1,0)"), (std::vector<TimeNs>{520, 540}));
  EXPECT_EQ(interval(trace, "launch backward(0,0)"), (std::vector<TimeNs>{720, 740}));
  EXPECT_EQ(interval(trace, "backward(1,0)"), (std::vector<TimeNs>{520, 740}));
  EXPECT_EQ(interval(trace, "backward(0,1)"), (std::vector<TimeNs>{240, 720}));
  EXPECT_EQ(interval(trace, "backward(0,0)"), (std::vector<TimeNs>{720, 940}));
  EXPECT_EQ(span(trace, "launch forward(1,0)").lane, "cuda api worker 0");
  EXPECT_EQ(span(trace, "launch forward(1,1)").lane, "cuda api worker 1");
  EXPECT_EQ(span(trace, "launch backward(1,0)").lane, "cuda api autograd");
}

// Copies and the next stage wait for the producer's last kernel. Two stages on two devices,
// m 1, never, one kernel per pass (l/d 10/100 forward, 20/200 backward), boundary copies of c:
//   F00 [0,10] -> 110; copy 110 -> 110 + c; F01 from 110 + c -> 220 + c; L0 (220 + c); B01
//   from L0's launch, 120 + c: max(220 + c + 200, 120 + c + 220) = 420 + c; grad copy -> 420 +
//   2c; B00 on device 0's autograd thread from 420 + 2c -> 640 + 2c.
// A cluster whose devices name hosts (shared links) moves one copy at a time alike.
TEST(LaunchModel, CopiesWaitForTheLastKernel) {
  constexpr TimeNs kC = 7;
  Profile profile = launchProfile(2, launch(10, 100, 1), launch(20, 200, 1));
  for (LayerProfile& layer : profile.layers) layer.costs[0].outputBytes = 100;
  const Candidate candidate = test::makeCandidate({1, 1}, 1, Checkpoint::Never, 1);
  const Cluster plain = Cluster::uniform(2, std::nullopt, 0.0, kC, "dev");
  const Cluster hosts = Cluster::withHosts({"a", "b"}, std::nullopt, Link{kC, 0.0}, Link{kC, 0.0}, "dev");
  for (const Cluster* cluster : {&plain, &hosts}) {
    const SimulationResult result = simulateTraced(profile, *cluster, candidate);
    EXPECT_EQ(result.prediction.iterationNs, 640 + 2 * kC);
    EXPECT_EQ(interval(result.trace, "copy(0,0->1)"), (std::vector<TimeNs>{110, 110 + kC}));
    EXPECT_EQ(interval(result.trace, "forward(0,1)"), (std::vector<TimeNs>{110 + kC, 220 + kC}));
    EXPECT_EQ(interval(result.trace, "backward(0,1)"), (std::vector<TimeNs>{120 + kC, 420 + kC}));
    EXPECT_EQ(interval(result.trace, "backward(0,0)"), (std::vector<TimeNs>{420 + 2 * kC, 640 + 2 * kC}));
    EXPECT_EQ(span(result.trace, "launch backward(0,0)").device, "dev:0");
    EXPECT_EQ(span(result.trace, "launch backward(0,1)").device, "dev:1");
  }
}

// (d) The same profile without launch data (a CPU profile, or a file from before) runs the
// model it always ran: one compute resource per device, the synchronised times, no launch spans.
TEST(LaunchModel, ProfileWithoutLaunchDataIsUnchanged) {
  const Profile profile = test::uniformProfile(2, LayerCosts{10, 20, 0, 0, 0, 0});
  ASSERT_FALSE(profile.hasLaunchData());
  for (std::int64_t m : {1, 2, 4}) {
    const SimulationResult result =
        simulateTraced(profile, test::freeCluster(2), test::makeCandidate({1, 1}, m, Checkpoint::Never, m));
    EXPECT_EQ(result.prediction.iterationNs, (m + 1) * 30) << "m=" << m;
    for (const TraceEvent& event : result.trace.events) EXPECT_NE(event.phase, Phase::Launch) << event.name;
  }
  // Launch data on some samples only is no launch data: the synchronised times rule.
  Profile partial = launchProfile(2, launch(1, 1, 1), launch(1, 1, 1));
  partial.layers[1].costs[0].backwardLaunch.reset();
  const Candidate one = test::makeCandidate({1, 1}, 1, Checkpoint::Never, 1);
  const Prediction p = simulate(partial, test::freeCluster(2), one).prediction;
  EXPECT_EQ(p.iterationNs, 2 * (5'000'000 + 7'000'000));
}

// A cluster device's speed scales the device time, not the host's launches: at speed 2 a
// device-bound op's kernels take half as long.
TEST(LaunchModel, RelativeSpeedScalesTheDeviceTimeOnly) {
  const Profile profile = launchProfile(1, launch(20, 100, 4), launch(40, 200, 4));
  Cluster cluster = test::freeCluster(1);
  cluster.devices[0].relativeSpeed = 2.0;
  const Prediction p = simulate(profile, cluster, test::makeCandidate({1}, 1, Checkpoint::Never, 1)).prediction;
  // forward: max(0 + 50, 0 + 50 + ceil(20/4)) = 55; loss at 20 ends 55; backward from 20:
  // max(55 + 100, 20 + 100 + ceil(40/4)) = 155.
  EXPECT_EQ(p.iterationNs, 155);
  EXPECT_EQ(p.busyNs[0], 150);
}

}  // namespace
}  // namespace pipeprof::test_launches
