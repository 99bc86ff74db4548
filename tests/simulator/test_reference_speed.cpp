// Tests of simulator/reference_speed: the calibration probe's samples of the machine's speed.
#include <pipeprof/simulator/reference_speed.h>

#include <gtest/gtest.h>

namespace pipeprof::test_reference_speed {
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
  EXPECT_TRUE(samples.usable());
  EXPECT_EQ(samples.fastestNs(), 95);
  EXPECT_EQ(samples.slowestNs(), 120);
  EXPECT_DOUBLE_EQ(samples.spread(), 120.0 / 95.0 - 1.0);
}

TEST(ReferenceSpeed, OneProbeRunSaysNothing) {
  const std::vector<ReferenceRun> runs = {run(4, 0.0, {100}), run(2, 1.0, {40}), run(4, -1.0, {200})};
  EXPECT_FALSE(machineSpeedSamples(runs).usable());
  EXPECT_DOUBLE_EQ(machineSpeedSamples(runs).spread(), 0.0);
  EXPECT_EQ(machineSpeedSamples({}).probeChunks, 0);
  EXPECT_EQ(machineSpeedSamples({}).fastestNs(), 0);
}

}  // namespace
}  // namespace pipeprof::test_reference_speed
