// Tests for link_sharing.cpp and the engine's shared links: processor sharing in closed form, which transfers share a
// link, hosts in pipelines.
#include "compiled_schedule.h"
#include "cost_model.h"
#include "engine.h"
#include "link_sharing.h"

#include <pipeprof/simulator/simulator.h>

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace pipeprof::sim {
namespace {

// ---- LinkSharing: the drain phase alone -------------------------------------------------

TEST(LinkSharing, ATransferAloneTakesItsWork) {
  LinkSharing sharing;
  sharing.reset(2);
  EXPECT_EQ(sharing.nextFinishNs(0), -1);
  sharing.enter(1, 7, 1000, 100);
  EXPECT_EQ(sharing.drainingCount(1), 1u);
  EXPECT_EQ(sharing.nextFinishNs(1), 1100);
  EXPECT_EQ(sharing.nextFinishNs(0), -1);
  std::vector<std::uint32_t> done;
  sharing.finishDue(1, 1099, done);
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(sharing.nextFinishNs(1), 1100);  // re-rated at 1099 with 1 ns left
  sharing.finishDue(1, 1100, done);
  EXPECT_EQ(done, (std::vector<std::uint32_t>{7}));
  EXPECT_EQ(sharing.drainingCount(1), 0u);
}

// Two transfers of work w entering together each drain at half the rate: both end 2w later.
TEST(LinkSharing, TwoTogetherEachTakeTwiceTheirWork) {
  LinkSharing sharing;
  sharing.reset(1);
  sharing.enter(0, 3, 1000, 0);
  sharing.enter(0, 1, 1000, 0);
  EXPECT_EQ(sharing.nextFinishNs(0), 2000);
  std::vector<std::uint32_t> done;
  sharing.finishDue(0, 2000, done);
  EXPECT_EQ(done, (std::vector<std::uint32_t>{3, 1}));  // the order they entered
}

// A (1000 ns of work) alone from 0; B (1000) joins at 500 when A is halfway: A's other half
// drains at half rate and ends at 500 + 2 * 500 = 1500; B has then done 500 and ends alone at 2000.
TEST(LinkSharing, ATransferJoiningHalfway) {
  LinkSharing sharing;
  sharing.reset(1);
  sharing.enter(0, 0, 1000, 0);
  EXPECT_EQ(sharing.nextFinishNs(0), 1000);
  std::vector<std::uint32_t> done;
  sharing.finishDue(0, 500, done);
  sharing.enter(0, 1, 1000, 500);
  EXPECT_EQ(sharing.nextFinishNs(0), 1500);
  sharing.finishDue(0, 1500, done);
  EXPECT_EQ(done, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(sharing.nextFinishNs(0), 2000);
  sharing.finishDue(0, 2000, done);
  EXPECT_EQ(done, (std::vector<std::uint32_t>{0, 1}));
}

// Finish times round up to whole ns. Works of 3 ns entering at 0, 1 and 2: at 2, A has 1.5
// left, B 2.5, C 3; A ends at 2 + ceil(3 * 1.5) = 7; then B has 2.5 - 5/3 = 5/6 left and ends at
// 7 + ceil(2 * 5/6) = 9; C has 3 - 5/3 - 1 = 1/3 left and ends at 9 + ceil(1/3) = 10.
TEST(LinkSharing, FinishTimesRoundUpToWholeNanoseconds) {
  LinkSharing sharing;
  sharing.reset(1);
  std::vector<std::uint32_t> done;
  sharing.enter(0, 0, 3, 0);
  sharing.finishDue(0, 1, done);
  sharing.enter(0, 1, 3, 1);
  sharing.finishDue(0, 2, done);
  sharing.enter(0, 2, 3, 2);
  std::vector<TimeNs> ends;
  while (sharing.nextFinishNs(0) >= 0) {
    const TimeNs at = sharing.nextFinishNs(0);
    sharing.finishDue(0, at, done);
    ends.push_back(at);
  }
  EXPECT_EQ(ends, (std::vector<TimeNs>{7, 9, 10}));
  EXPECT_EQ(done, (std::vector<std::uint32_t>{0, 1, 2}));
}

// ---- The engine: which transfers share a link ---------------------------------------------

/// Copies with no dependencies between four one-stage lanes (stage j on device j),
/// each with its own duration slot; no compute ops, no memory effects.
CompiledSchedule copiesOnly(const std::vector<std::pair<std::int32_t, std::int32_t>>& copies) {
  CompiledSchedule compiled;
  compiled.layout.n = 4;
  compiled.chunks = 1;
  compiled.lanes = 4;
  compiled.orderStart.assign(5, 0);
  compiled.stageLane = {0, 1, 2, 3};
  for (std::size_t k = 0; k < copies.size(); ++k) {
    CompiledOp op;
    op.kind = OpKind::Copy;
    op.j = copies[k].first;
    op.toJ = copies[k].second;
    op.durationSlot = static_cast<std::int32_t>(k);
    compiled.ops.push_back(op);
    compiled.labels.push_back("copy " + std::to_string(op.j) + "->" + std::to_string(op.toJ));
  }
  return compiled;
}

/// Four devices, hosts A A B B (or none), every copy `latencyNs` + `workNs` alone.
ResolvedCosts copyCosts(std::size_t copies, TimeNs latencyNs, TimeNs workNs, bool hosts) {
  ResolvedCosts costs;
  costs.durationNs.assign(copies, latencyNs + workNs);
  costs.staticBytes.assign(4, 0);
  costs.stageDevice = {0, 1, 2, 3};
  if (hosts) {
    costs.deviceHost = {0, 0, 1, 1};
    costs.copyLatencyNs.assign(copies, latencyNs);
  }
  return costs;
}

std::vector<TimeNs> copyEnds(const std::vector<std::pair<std::int32_t, std::int32_t>>& copies, bool hosts) {
  const CompiledSchedule compiled = copiesOnly(copies);
  const ResolvedCosts costs = copyCosts(copies.size(), 100, 1000, hosts);
  Engine engine;
  engine.run(compiled, costs, 4, false);
  std::vector<TimeNs> ends;
  for (std::size_t op = 0; op < copies.size(); ++op) {
    if (hosts) {
      EXPECT_EQ(engine.startNs(op), 0) << "shared links start every ready copy at once";
    }
    ends.push_back(engine.endNs(op));
  }
  return ends;
}

// Latency 100, work 1000: alone a copy takes 1100 (Link::transferNs).
TEST(EngineSharedLinks, TwoDevicesOfOneHostSendingToTwoOfAnotherShareTheHostsLink) {
  // 0 -> 2 and 1 -> 3 both go from host A to host B: latency, then 2 * 1000 each.
  EXPECT_EQ(copyEnds({{0, 2}, {1, 3}}, true), (std::vector<TimeNs>{2100, 2100}));
  // Different device pairs without hosts: two links, no interference.
  EXPECT_EQ(copyEnds({{0, 2}, {1, 3}}, false), (std::vector<TimeNs>{1100, 1100}));
  // A -> B and B -> A are the two directions of the hosts' link: no interference.
  EXPECT_EQ(copyEnds({{0, 2}, {3, 1}}, true), (std::vector<TimeNs>{1100, 1100}));
  // Three senders on A to B: 3 * 1000 each.
  EXPECT_EQ(copyEnds({{0, 2}, {1, 3}, {0, 3}}, true), (std::vector<TimeNs>{3100, 3100, 3100}));
}

TEST(EngineSharedLinks, IntraHostLinksAreDevicePairs) {
  // 0 -> 1 and 2 -> 3 are on different hosts' device pairs, 0 -> 1 and 1 -> 0 the two
  // directions of one pair: no interference.
  EXPECT_EQ(copyEnds({{0, 1}, {2, 3}, {1, 0}}, true), (std::vector<TimeNs>{1100, 1100, 1100}));
  // Two copies on one pair share it; a third on the inter-host link does not slow them.
  EXPECT_EQ(copyEnds({{0, 1}, {0, 1}, {0, 2}}, true), (std::vector<TimeNs>{2100, 2100, 1100}));
  // Without hosts the same pair runs its copies one at a time (FIFO): the second starts at 1100.
  EXPECT_EQ(copyEnds({{0, 1}, {0, 1}}, false), (std::vector<TimeNs>{1100, 2200}));
}

// ---- Pipelines on clusters with hosts ------------------------------------------------------

constexpr TimeNs kF = 10;  // forward per layer per sample
constexpr TimeNs kB = 20;  // backward per layer per sample

/// One-layer stages of forward kF, backward kB and `outputBytes` boundaries, with a skip
/// route of `skipBytes` from stash to pop when skipBytes > 0.
Profile pipelineProfile(std::int64_t layers, Bytes outputBytes, std::int64_t stash, std::int64_t pop, Bytes skipBytes) {
  Profile profile = test::uniformProfile(layers, {kF, kB, 0, outputBytes, 0, 0});
  if (skipBytes > 0) profile.skips.push_back({"skip", stash, pop, skipBytes});
  return profile;
}

std::map<std::string, TraceEvent> copySpans(const Trace& trace) {
  std::map<std::string, TraceEvent> spans;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Span && (event.phase == Phase::Copy || event.phase == Phase::SkipCopy)) {
      spans[event.name] = event;
    }
  }
  return spans;
}

SimulationResult forwardOnly(const Profile& profile, const Cluster& cluster, std::vector<std::int64_t> devices) {
  Candidate candidate =
      test::makeCandidate(std::vector<std::int64_t>(profile.layers.size(), 1), 1, Checkpoint::Never, 1);
  candidate.devices = std::move(devices);
  SimulationOptions options;
  options.training = false;
  options.recordTrace = true;
  return simulate(profile, cluster, candidate, options);
}

// Stage 0 on device 0, stages 1 and 2 on device 1 (hosts h0, h1; latency 100, 1 byte/ns):
// forward(0,0) ends at 10 and sends its 500-byte output (to stage 1) and its 500-byte skip
// (to stage 2) over the same link at once. Each takes 100 + 2 * 500 = 1100, ending at 1110;
// forward(0,1) runs [1110, 1120] and forward(0,2) [1120, 1130].
TEST(SimulateSharedLinks, TwoTransfersStartingTogetherOnOneLink) {
  const Profile profile = pipelineProfile(3, 500, 0, 2, 500);
  const Cluster cluster = Cluster::withHosts({"h0", "h1"}, std::nullopt, Link{}, Link{100, 1e9});
  const SimulationResult result = forwardOnly(profile, cluster, {0, 1, 1});
  EXPECT_EQ(result.prediction.iterationNs, 1130);
  std::map<std::string, TraceEvent> spans = copySpans(result.trace);
  ASSERT_EQ(spans.size(), 3u);  // stage 1 -> 2 on device 1 is a free copy
  for (const char* name : {"copy(0,0->1)", "skip-copy(skip,0,0->2)"}) {
    ASSERT_TRUE(spans.count(name)) << name;
    EXPECT_EQ(spans[name].startNs, 10) << name;
    EXPECT_EQ(spans[name].durationNs, 100 + 2 * 500) << name;
    EXPECT_EQ(spans[name].lane, "copy 0->1") << name;
    EXPECT_EQ(spans[name].bytes, 500) << name;
  }
  // Without hosts the link runs them one at a time: the output first (lower op index), ending at
  // 10 + 600; the skip at 1210; forward(0,2) then runs [1210, 1220].
  const SimulationResult fifo = forwardOnly(profile, Cluster::uniform(2, std::nullopt, 1e9, 100), {0, 1, 1});
  EXPECT_EQ(fifo.prediction.iterationNs, 1220);
}

// Stages 0 and 1 on device 0, stage 2 on device 1 (latency 0, 1 byte/ns). The 20-byte skip
// leaves at 10 (end of forward(0,0)); at 20, halfway, the 30-byte output of forward(0,1) joins
// it: the skip's last 10 bytes take 20 ns (ends at 40), the output has 30 - 10 = 20 left alone
// (ends at 60); forward(0,2) runs [60, 70].
TEST(SimulateSharedLinks, ATransferJoiningHalfway) {
  const Profile profile = pipelineProfile(3, 30, 0, 2, 20);
  const Cluster cluster = Cluster::withHosts({"h0", "h1"}, std::nullopt, Link{}, Link{0, 1e9});
  const SimulationResult result = forwardOnly(profile, cluster, {0, 0, 1});
  EXPECT_EQ(result.prediction.iterationNs, 70);
  std::map<std::string, TraceEvent> spans = copySpans(result.trace);
  EXPECT_EQ(spans["skip-copy(skip,0,0->2)"].startNs, 10);
  EXPECT_EQ(spans["skip-copy(skip,0,0->2)"].durationNs, 30);
  EXPECT_EQ(spans["copy(0,1->2)"].startNs, 20);
  EXPECT_EQ(spans["copy(0,1->2)"].durationNs, 40);
  EXPECT_EQ(spans["copy(0,1->2)"].lane, "copy 0->1");
}

// Stage j on device j, all on one host: the output (0 -> 1) and the skip (0 -> 2) of
// forward(0,0) leave together on two device pairs and each takes 100 + 500 as alone. On hosts
// h0 h1 h1 both cross the same inter-host link and take 100 + 2 * 500.
TEST(SimulateSharedLinks, TransfersOnDifferentIntraHostLinksDoNotInterfere) {
  const Profile profile = pipelineProfile(3, 500, 0, 2, 500);
  const Link link{100, 1e9};
  const SimulationResult oneHost =
      forwardOnly(profile, Cluster::withHosts({"h0", "h0", "h0"}, std::nullopt, link, link), {0, 1, 2});
  std::map<std::string, TraceEvent> spans = copySpans(oneHost.trace);
  EXPECT_EQ(spans["copy(0,0->1)"].durationNs, 600);
  EXPECT_EQ(spans["skip-copy(skip,0,0->2)"].durationNs, 600);
  EXPECT_EQ(spans["skip-copy(skip,0,0->2)"].lane, "copy 0->2");
  // forward(0,1) [610, 620], copy 1 -> 2 [620, 1220], forward(0,2) [1220, 1230].
  EXPECT_EQ(oneHost.prediction.iterationNs, 1230);
  const SimulationResult twoHosts =
      forwardOnly(profile, Cluster::withHosts({"h0", "h1", "h1"}, std::nullopt, link, link), {0, 1, 2});
  spans = copySpans(twoHosts.trace);
  EXPECT_EQ(spans["copy(0,0->1)"].durationNs, 1100);
  EXPECT_EQ(spans["skip-copy(skip,0,0->2)"].durationNs, 1100);
}

// A training step (GPipe, never, one micro-batch) on 4 devices, hosts A A B B, stage j on
// device j; 100-byte outputs and a 100-byte skip from stage 0 to stage 3. Intra-host: 10 bytes
// per ns (10 ns a copy); inter-host: latency 5, 1 byte/ns (105 ns alone). By hand:
//
//   forward(0,0) [0,10]; copy 0->1 [10,20]; forward(0,1) [20,30]
//   skip 0->3 (A->B) leaves at 10, drains from 15; copy 1->2 (A->B) leaves at 30, drains from
//   35, when the skip has 80 left: the skip ends at 35 + 2 * 80 = 195, copy 1->2 has 20 left and
//   ends at 215; forward(0,2) [215,225]; copy 2->3 [225,235]; forward(0,3) [235,245]
//   backward(0,3) [245,265]; grad 3->2 [265,275]; backward(0,2) [275,295]
//   skip gradient 3->0 (B->A) leaves at 265, drains from 270; grad 2->1 (B->A) leaves at 295,
//   drains from 300, when the skip gradient has 70 left: that ends at 300 + 140 = 440, grad 2->1
//   has 30 left and ends at 470; backward(0,1) [470,490]; grad 1->0 [490,500];
//   backward(0,0) [500,520]
TEST(SimulateSharedLinks, FourDevicesOnTwoHostsHandComputed) {
  const Profile profile = pipelineProfile(4, 100, 0, 3, 100);
  const Cluster cluster = Cluster::withHosts({"A", "A", "B", "B"}, std::nullopt, Link{0, 10e9}, Link{5, 1e9}, "cuda");
  SimulationOptions options;
  options.recordTrace = true;
  const SimulationResult result =
      simulate(profile, cluster, test::makeCandidate({1, 1, 1, 1}, 1, Checkpoint::Never, 1), options);
  EXPECT_EQ(result.prediction.iterationNs, 520);
  EXPECT_EQ(result.prediction.busyNs, (std::vector<TimeNs>{30, 30, 30, 30}));
  std::map<std::string, TraceEvent> spans = copySpans(result.trace);
  struct Expected {
    const char* name;
    TimeNs startNs;
    TimeNs endNs;
    const char* lane;
    const char* device;
  };
  for (const Expected& e : std::vector<Expected>{{"copy(0,0->1)", 10, 20, "copy 0->1", "cuda:0"},
                                                 {"skip-copy(skip,0,0->3)", 10, 195, "copy 0->3", "cuda:0"},
                                                 {"copy(0,1->2)", 30, 215, "copy 1->2", "cuda:1"},
                                                 {"copy(0,2->3)", 225, 235, "copy 2->3", "cuda:2"},
                                                 {"grad-copy(0,3->2)", 265, 275, "copy 3->2", "cuda:3"},
                                                 {"skip-grad-copy(skip,0,3->0)", 265, 440, "copy 3->0", "cuda:3"},
                                                 {"grad-copy(0,2->1)", 295, 470, "copy 2->1", "cuda:2"},
                                                 {"grad-copy(0,1->0)", 490, 500, "copy 1->0", "cuda:1"}}) {
    ASSERT_TRUE(spans.count(e.name)) << e.name;
    EXPECT_EQ(spans[e.name].startNs, e.startNs) << e.name;
    EXPECT_EQ(spans[e.name].startNs + spans[e.name].durationNs, e.endNs) << e.name;
    EXPECT_EQ(spans[e.name].lane, e.lane) << e.name;
    EXPECT_EQ(spans[e.name].device, e.device) << e.name;
  }
  // Naming no hosts (same links as a matrix) keeps one link per device pair: the skip and
  // copy 1->2 no longer meet. Skip [10,115], copy 1->2 [30,135], forward(0,2) [135,145],
  // copy 2->3 [145,155], forward(0,3) [155,165], backward(0,3) [165,185], grad 3->2 [185,195],
  // backward(0,2) [195,215], grad 2->1 [215,320], backward(0,1) [320,340], grad 1->0 [340,350],
  // backward(0,0) [350,370].
  Cluster matrix = cluster;
  matrix.hosts.clear();
  EXPECT_EQ(
      simulate(profile, matrix, test::makeCandidate({1, 1, 1, 1}, 1, Checkpoint::Never, 1)).prediction.iterationNs,
      370);
}

// GPipe, never, two micro-batches, stages placed 0 2 1 3 on hosts A A B B so that every
// boundary crosses hosts (latency 5, 1 byte/ns, 40-byte outputs: 45 ns alone). Consecutive
// micro-batches' copies on one boundary overlap: the first drains alone for 10 ns (the
// forward in between), then both share, so the pair ends 85 and 95 ns after the first left.
//
//   copies 0->1 leave 10, 20: end 85, 95       forward(i,1) [85,95] [95,105]
//   copies 1->2 leave 95, 105: end 170, 180    forward(i,2) [170,180] [180,190]
//   copies 2->3 leave 180, 190: end 255, 265   forward(i,3) [255,265] [265,275]
//   backward(1,3) [275,295], backward(0,3) [295,315]; the gradients 3->2 leave 295, 315 and
//   drain from 300, 320: the first has 20 left at 320 and ends 360, the second 380
//   backward(i,2) [360,380] [380,400]; gradients 2->1 end 445, 465
//   backward(i,1) [445,465] [465,485]; gradients 1->0 end 530, 550
//   backward(1,0) [530,550], backward(0,0) [550,570]
TEST(SimulateSharedLinks, EveryBoundaryAcrossHostsHandComputed) {
  const Profile profile = pipelineProfile(4, 40, 0, 0, 0);
  const Cluster cluster = Cluster::withHosts({"A", "A", "B", "B"}, std::nullopt, Link{0, 10e9}, Link{5, 1e9});
  Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 2, Checkpoint::Never, 2);
  candidate.devices = {0, 2, 1, 3};
  EXPECT_EQ(simulate(profile, cluster, candidate).prediction.iterationNs, 570);
  // One at a time (no hosts) the first copy of a boundary is not slowed by the second: copies
  // 0->1 end at 55 and 100, and every boundary hands micro-batch 0 on 30 ns sooner; the
  // gradients 3->2 leave 240 and 260 and end 285 and 330 (the second queues), then
  // backward(0,2) [330,350], gradients 2->1 end 350, 395, gradients 1->0 end 415, 460, and
  // backward(0,0) runs [460,480].
  Cluster fifo = cluster;
  fifo.hosts.clear();
  EXPECT_EQ(simulate(profile, fifo, candidate).prediction.iterationNs, 480);
}

// Without hosts, and with hosts but no two transfers in flight on one link at once, the
// prediction is today's: every copy takes Link::transferNs.
TEST(SimulateSharedLinks, OneTransferAtATimeIsTransferNs) {
  const Profile profile = pipelineProfile(4, 100, 0, 0, 0);
  const Link link{5, 1e9};
  const Candidate candidate = test::makeCandidate({1, 1, 1, 1}, 1, Checkpoint::Never, 1);
  const TimeNs uniform = simulate(profile, Cluster::uniform(4, std::nullopt, 1e9, 5), candidate).prediction.iterationNs;
  // One micro-batch through 4 stages: 4 (f + b) + 6 copies of 105.
  EXPECT_EQ(uniform, 4 * (kF + kB) + 6 * 105);
  EXPECT_EQ(simulate(profile, Cluster::withHosts({"A", "A", "B", "B"}, std::nullopt, link, link), candidate)
                .prediction.iterationNs,
            uniform);
  EXPECT_EQ(simulate(profile, Cluster::withHosts({"A", "B", "C", "D"}, std::nullopt, link, link), candidate)
                .prediction.iterationNs,
            uniform);
}

TEST(SimulateSharedLinks, HostsNotOnePerDeviceAreRejected) {
  const Profile profile = pipelineProfile(2, 100, 0, 0, 0);
  Cluster cluster = Cluster::withHosts({"A", "B"}, std::nullopt, Link{}, Link{5, 1e9});
  cluster.hosts.pop_back();
  EXPECT_THROW(simulate(profile, cluster, test::makeCandidate({1, 1}, 1, Checkpoint::Never, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof::sim
