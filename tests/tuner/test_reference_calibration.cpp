// Tests of tuner/reference_calibration: the reference plan's order, and rounds within the budget.
#include <pipeprof/tuner/reference_calibration.h>

#include "four_layer_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace pipeprof::tuner {
namespace {

using test::fourLayerProfile;
using Clock = std::chrono::steady_clock;

/// Trains nothing: records the references it is asked for, and when; each takes `sleep`.
class CountingMeasurer : public CandidateMeasurer {
 public:
  explicit CountingMeasurer(std::chrono::milliseconds sleep = std::chrono::milliseconds(0)) : sleep_(sleep) {}

  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override {
    EXPECT_TRUE(request.traced) << "the calibration fits the references' traces";
    const auto start = Clock::now();
    std::this_thread::sleep_for(sleep_);
    chunks.push_back(candidate.chunks);
    MeasuredRun run;
    run.measurement.addRound(std::vector<TimeNs>(static_cast<std::size_t>(request.steps), 1000), {0, 0},
                             candidate.batch);
    if (calls.empty()) first = start;
    last = Clock::now();
    longest = std::max(longest, last - start);
    calls.push_back(last);
    return run;
  }

  std::vector<std::int64_t> chunks;
  std::vector<Clock::time_point> calls;
  Clock::time_point first;
  Clock::time_point last;
  Clock::duration longest{};

 private:
  std::chrono::milliseconds sleep_;
};

PipelineShape shape(ScheduleKind schedule, std::int64_t v, Checkpoint mode) {
  PipelineShape s;
  s.schedule = schedule;
  s.stagesPerDevice = v;
  s.checkpoint = mode;
  return s;
}

TEST(ReferenceCalibration, ThePlanTimesEveryShapeAtItsLargestAmongGPipesChunkCountsThenTheRest) {
  const std::vector<PipelineShape> shapes = {gpipeReferenceShape(),
                                             shape(ScheduleKind::OneFOneB, 1, Checkpoint::Always),
                                             shape(ScheduleKind::Interleaved, 2, Checkpoint::Never)};
  // Batch 8 over 2 devices: interleaved runs chunks 2, 4 and 8 only (a multiple of the devices).
  std::vector<std::string> plan;
  for (const Candidate& reference : referencePlan(4, 8, {1, 2, 4, 8, 16}, 2, shapes)) {
    plan.push_back(reference.orderLabel() + " x" + std::to_string(reference.chunks));
  }
  // GPipe's x4, x2 and x1 spread over the other shapes' largest (the j-th before shape (j+1)n/4
  // of n = 2), GPipe x8 before and after them; then the rest; GPipe x8 last (the speed probe).
  EXPECT_EQ(plan, (std::vector<std::string>{"gpipe x8", "gpipe x4", "1f1b x8", "gpipe x2", "gpipe x1",
                                            "interleaved v2 x8", "gpipe x8",  //
                                            "1f1b x4", "interleaved v2 x4",   //
                                            "1f1b x2", "interleaved v2 x2",   //
                                            "1f1b x1", "gpipe x8"}));
}

/// "1f1b always x4": a reference's shape and chunk count.
std::vector<std::string> labels(const std::vector<Candidate>& plan) {
  std::vector<std::string> result;
  for (const Candidate& reference : plan) {
    result.push_back(reference.orderLabel() + " " + std::string(checkpointName(reference.checkpoint)) + " x" +
                     std::to_string(reference.chunks));
  }
  return result;
}

Candidate candidateOf(ScheduleKind schedule, std::int64_t v, Checkpoint mode, std::int64_t chunks) {
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = shape(schedule, v, mode);
  candidate.balance = v == 1 ? std::vector<std::int64_t>{3, 1} : std::vector<std::int64_t>{1, 1, 1, 1};
  candidate.chunks = chunks;
  candidate.batch = 8;
  return candidate;
}

TEST(ReferenceCalibration, APlanForCandidatesTimesGPipeAtEveryChunkCountAndEachCandidatesShapeAtItsOwn) {
  const std::vector<Candidate> candidates = {
      candidateOf(ScheduleKind::OneFOneB, 1, Checkpoint::Always, 4),
      candidateOf(ScheduleKind::OneFOneB, 1, Checkpoint::Always, 2),
      candidateOf(ScheduleKind::Interleaved, 2, Checkpoint::Never, 8),
      candidateOf(ScheduleKind::GPipe, 1, Checkpoint::Never, 4),  // GPipe's own reference covers it
      candidateOf(ScheduleKind::GPipe, 1, Checkpoint::Always, 1),
  };
  // Batch 8, 4 layers, 2 devices: GPipe at each of its chunk counts, spread among the other
  // shapes at their largest; GPipe's largest again; then the rest; GPipe's largest last (the
  // probe of the machine's speed). Never a shape or chunk count no candidate has (the grid of
  // these shapes would hold 11 references, not 9).
  EXPECT_EQ(labels(referencePlanFor(4, 8, 2, {1, 2, 4, 8}, candidates)),
            (std::vector<std::string>{"gpipe never x8", "gpipe never x4", "1f1b always x4", "gpipe never x2",
                                      "interleaved v2 never x8", "gpipe never x1", "gpipe always x1", "gpipe never x8",
                                      "1f1b always x2", "gpipe never x8"}));
  // References timed already (an earlier pass) are left out; GPipe's largest left opens the plan;
  // the probe, timed already, still closes it.
  const std::vector<Candidate> timed = {referenceCandidate(4, 2, 8, 8),
                                        referenceCandidate(4, 2, 4, 8, ScheduleKind::OneFOneB, 1, Checkpoint::Always)};
  EXPECT_EQ(labels(referencePlanFor(4, 8, 2, {1, 2, 4, 8}, candidates, timed)),
            (std::vector<std::string>{"gpipe never x4", "1f1b always x2", "gpipe never x2", "interleaved v2 never x8",
                                      "gpipe never x1", "gpipe always x1", "gpipe never x4", "gpipe never x8"}));
  // Everything timed: nothing to plan.
  std::vector<Candidate> all = referencePlanFor(4, 8, 2, {1, 2, 4, 8}, candidates);
  EXPECT_TRUE(referencePlanFor(4, 8, 2, {1, 2, 4, 8}, candidates, all).empty());
}

TEST(ReferenceCalibration, AReferenceExpectedToOverrunTheBudgetDoesNotStart) {
  // A later pass knows what a reference takes: with less budget left than that, nothing runs.
  CountingMeasurer measurer;
  CalibrationRounds rounds;
  rounds.budgetSeconds = 0.5;
  rounds.expectedSeconds = 1.0;
  std::vector<ReferenceRun> runs;
  EXPECT_EQ(timeReferences(measurer, {referenceCandidate(4, 2, 4, 8)}, rounds, runs), 0);
  EXPECT_TRUE(runs.empty());
  EXPECT_TRUE(measurer.chunks.empty());
}

/// Its first run's threads waited for a CPU half of every step (another process took the cores).
class ContendedOnceMeasurer : public CandidateMeasurer {
 public:
  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override {
    ++calls;
    MeasuredRun run;
    const auto steps = static_cast<std::size_t>(request.steps);
    run.measurement.addRound(std::vector<TimeNs>(steps, 1000), {0, 0}, candidate.batch, 0.0,
                             std::vector<TimeNs>(steps, calls == 1 ? 500 : 0));
    run.trace.metadata["run"] = std::to_string(calls);
    return run;
  }
  int calls = 0;
};

TEST(ReferenceCalibration, AContendedReferenceIsTimedAgainAndTheSecondRunKept) {
  ContendedOnceMeasurer measurer;
  CalibrationRounds rounds;
  rounds.maxRounds = 1;
  std::vector<std::string> retried;
  rounds.onContended = [&](const Candidate& reference) { retried.push_back(reference.label()); };
  std::vector<ReferenceRun> runs;
  EXPECT_EQ(timeReferences(measurer, {referenceCandidate(4, 2, 4, 8), referenceCandidate(4, 2, 1, 8)}, rounds, runs),
            1);
  EXPECT_EQ(measurer.calls, 3) << "the first reference twice, the second once";
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].trace.metadata.at("run"), "2");
  EXPECT_EQ(retried, (std::vector<std::string>{referenceCandidate(4, 2, 4, 8).label()}));
}

TEST(ReferenceCalibration, EachRunKnowsWhenItRanOnTheCalibrationsClock) {
  // Rounds that begin 10 s into the calibration (a later pass): each run's moment is the middle
  // of its run, counted from the calibration's start, so that every pass's probe runs sample
  // one timeline (simulator/reference_speed.h).
  CountingMeasurer measurer(std::chrono::milliseconds(5));
  CalibrationRounds rounds;
  rounds.maxRounds = 1;
  rounds.startedS = 10.0;
  std::vector<ReferenceRun> runs;
  timeReferences(measurer, {referenceCandidate(4, 2, 4, 8), referenceCandidate(4, 2, 1, 8)}, rounds, runs);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_GE(runs[0].atS, 10.0025);
  EXPECT_LT(runs[0].atS, 11.0);
  EXPECT_GE(runs[1].atS - runs[0].atS, 0.005) << "one run's length apart, at least";
}

TEST(ReferenceCalibration, ANoughtBudgetTimesTheFirstReferenceOnce) {
  CountingMeasurer measurer;
  CalibrationRounds rounds;
  rounds.budgetSeconds = 0;
  std::vector<std::size_t> reported;
  rounds.onRound = [&](std::int64_t round, std::size_t measured, std::size_t planned, double seconds) {
    EXPECT_EQ(round, 1);
    EXPECT_EQ(planned, 3U) << "chunks 4 and 1 (8 exceeds the batch), and the probe x4 again";
    EXPECT_GE(seconds, 0.0);
    reported.push_back(measured);
  };
  const Cluster cluster = sweepCluster({DeviceDesc{}, DeviceDesc{}}, std::nullopt);
  const Calibration calibration =
      measureCalibration(measurer, fourLayerProfile(), cluster, 4, {1, 4, 8}, 2, rounds, {gpipeReferenceShape()});
  EXPECT_EQ(measurer.chunks, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(reported, (std::vector<std::size_t>{1}));
  EXPECT_EQ(calibration.provenance.rounds, 1);
}

TEST(ReferenceCalibration, RoundsRepeatThePlanAndEndWithinTheBudget) {
  // Each reference takes 5 ms or more; a reference starts only when it is expected to end
  // within the budget, so the last one ends at most one reference's overrun past it.
  CountingMeasurer measurer(std::chrono::milliseconds(5));
  CalibrationRounds rounds;
  rounds.budgetSeconds = 0.1;
  std::vector<std::int64_t> reported;
  rounds.onRound = [&](std::int64_t round, std::size_t measured, std::size_t planned, double /*seconds*/) {
    EXPECT_EQ(planned, 3U);  // x4, x1 and the probe x4 again
    EXPECT_LE(measured, planned);
    reported.push_back(round);
  };
  const Cluster cluster = sweepCluster({DeviceDesc{}, DeviceDesc{}}, std::nullopt);
  const auto start = Clock::now();
  const Calibration calibration =
      measureCalibration(measurer, fourLayerProfile(), cluster, 4, {1, 4, 8}, 2, rounds, {gpipeReferenceShape()});
  ASSERT_GE(measurer.chunks.size(), 2U);
  for (std::size_t k = 0; k < measurer.chunks.size(); ++k) {
    EXPECT_EQ(measurer.chunks[k], k % 3 == 1 ? 1 : 4) << "interleaved rounds, the plan's order";
  }
  EXPECT_LE(measurer.last - start, std::chrono::duration<double>(rounds.budgetSeconds) + measurer.longest);
  EXPECT_EQ(calibration.provenance.rounds, static_cast<std::int64_t>(reported.size()));
  EXPECT_EQ(reported.back(), static_cast<std::int64_t>((measurer.chunks.size() + 2) / 3));
}

}  // namespace
}  // namespace pipeprof::tuner
