// Tests of simulator/reference_speed: the probe's samples of the machine's speed and each
// reference run's factor to its steady speed.
#include <pipeprof/simulator/reference_speed.h>

#include <gtest/gtest.h>

namespace pipeprof {
namespace {

/// A reference run of `schedule`, `mode` and `chunks` at moment atS, whose timed steps took
/// stepsNs (nothing else in its trace).
ReferenceRun run(std::int64_t chunks, double atS, const std::vector<TimeNs>& stepsNs,
                 ScheduleKind schedule = ScheduleKind::GPipe, Checkpoint mode = Checkpoint::Never) {
  ReferenceRun reference;
  reference.candidate.balance = {1, 1};
  reference.candidate.chunks = chunks;
  reference.candidate.batch = 8;
  reference.candidate.schedule = schedule;
  reference.candidate.checkpoint = mode;
  reference.atS = atS;
  TimeNs startNs = 0;
  for (const TimeNs stepNs : stepsNs) {
    TraceEvent step;
    step.kind = EventKind::Span;
    step.phase = Phase::Step;
    step.startNs = startNs;
    step.durationNs = stepNs;
    reference.trace.events.push_back(step);
    startNs += stepNs;
  }
  return reference;
}

TEST(ReferenceSpeed, TheProbeIsGPipeWithoutCheckpointsAtItsLargestChunkCount) {
  // GPipe x4's runs sample the machine (each its median step); GPipe x2, GPipe with checkpoints
  // and 1F1B at x4 are references like any other, and a probe run of unknown moment is no sample.
  const MachineSpeedSamples samples = machineSpeedSamples({
      run(4, 3.0, {120, 110, 130}),
      run(2, 0.5, {50}),
      run(4, 0.0, {100, 100}),
      run(4, 1.0, {999}, ScheduleKind::GPipe, Checkpoint::Always),
      run(4, 1.5, {999}, ScheduleKind::OneFOneB),
      run(4, -1.0, {999}),
      run(4, 2.0, {90, 95, 300}),
  });
  EXPECT_EQ(samples.probeChunks, 4);
  EXPECT_EQ(samples.atS, (std::vector<double>{0.0, 2.0, 3.0}));  // by moment
  EXPECT_EQ(samples.stepNs, (std::vector<TimeNs>{100, 95, 120}));
  EXPECT_EQ(samples.medianStepNs, 100);
  EXPECT_TRUE(samples.usable());
  EXPECT_DOUBLE_EQ(samples.spread(), 120.0 / 95.0 - 1.0);
}

TEST(ReferenceSpeed, EachRunIsScaledByTheProbesMedianOverItsStepAtThatMoment) {
  // Probe samples 100 at 0 s, 150 at 2 s, 100 at 4 s (median 100). At 1 s the probe's step is
  // 125 (halfway between), at 2 s 150, before the first and after the last the nearest's.
  const std::vector<ReferenceRun> runs = {
      run(4, 0.0, {100}), run(2, 1.0, {40}), run(4, 2.0, {150}), run(2, 2.0, {60}),
      run(4, 4.0, {100}), run(2, 5.0, {40}), run(2, -1.0, {77}),  // unknown moment: as timed
  };
  const std::vector<double> factors = steadySpeedFactors(runs);
  ASSERT_EQ(factors.size(), runs.size());
  EXPECT_DOUBLE_EQ(factors[0], 1.0);
  EXPECT_DOUBLE_EQ(factors[1], 100.0 / 125.0);
  EXPECT_DOUBLE_EQ(factors[2], 100.0 / 150.0);
  EXPECT_DOUBLE_EQ(factors[3], 100.0 / 150.0);
  EXPECT_DOUBLE_EQ(factors[4], 1.0);
  EXPECT_DOUBLE_EQ(factors[5], 1.0);
  EXPECT_DOUBLE_EQ(factors[6], 1.0);

  const std::vector<ReferenceRun> steady = atSteadySpeed(runs);
  EXPECT_EQ(steady[2].trace.events[0].durationNs, 100);  // every probe run at the median
  EXPECT_EQ(steady[3].trace.events[0].durationNs, 40);   // the slow spell's 60 at steady speed
  EXPECT_EQ(steady[1].trace.events[0].durationNs, 32);   // 40 x 0.8
  EXPECT_EQ(steady[6].trace.events[0].durationNs, 77);
}

TEST(ReferenceSpeed, OneProbeRunSaysNothingAndScalesNothing) {
  const std::vector<ReferenceRun> runs = {run(4, 0.0, {100}), run(2, 1.0, {40}), run(4, -1.0, {200})};
  EXPECT_FALSE(machineSpeedSamples(runs).usable());
  EXPECT_DOUBLE_EQ(machineSpeedSamples(runs).spread(), 0.0);
  EXPECT_EQ(steadySpeedFactors(runs), (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(steadySpeedFactors({}), std::vector<double>{});
}

TEST(ReferenceSpeed, AFactorStaysWithinHalfAndTwice) {
  // Probe samples 100, 100, 1000: a run beside the 1000 would be scaled by 0.1.
  const std::vector<double> factors = steadySpeedFactors({run(4, 0.0, {100}), run(4, 1.0, {100}), run(4, 2.0, {1000}),
                                                          run(2, 2.0, {500}), run(4, 3.0, {10}), run(2, 3.0, {5})});
  EXPECT_DOUBLE_EQ(factors[3], 0.5);
  EXPECT_DOUBLE_EQ(factors[5], 2.0);
}

}  // namespace
}  // namespace pipeprof
