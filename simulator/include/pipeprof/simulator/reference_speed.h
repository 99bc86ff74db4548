// Reference runs brought to one machine speed before they are fitted: a shared machine's slow
// spells taken out of the calibration's evidence.
//
// A calibration times one reference again and again among the others: GPipe without checkpoints
// at its largest chunk count, the probe (a round opens with it, meets it again halfway, and ends
// with it; tuner/reference_calibration.h). Each probe run's median step samples how fast the
// machine ran at that moment. Every run whose moment is known is scaled by
//
//     (the median of the probe runs' steps) / (the probe's step at the run's moment)
//
// the probe's step at a moment being the line between the probe runs just before and just after
// it (the nearest one's outside them), so that a reference timed in a slow spell counts as if
// timed at the machine's usual speed, and the shapes are compared with each other, not with the
// spells they happened to run in. (A 1f1b reference timed while another process held a core
// read 20% slow and moved 1f1b's corrections, and every 1f1b prediction with them.)
//
//   probe step (ms)   12.1                  15.3                      12.0
//   runs              [probe][1f1b x8][zbv x4][probe][interleaved x4][probe]
//   at the zbv run                    13.7 = between 12.1 and 15.3; scaled by 12.1 / 13.7
//
// With fewer than two probe runs of known moment nothing is scaled: one sample of the machine's
// speed says nothing about how it moved.
#pragma once

#include <pipeprof/simulator/calibration_fit.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// How fast the machine ran while the references were timed, as the probe saw it.
struct MachineSpeedSamples {
  std::int64_t probeChunks = 0;  ///< the probe's chunk count (0: no probe among the runs)
  std::vector<double> atS;       ///< each probe run's moment, in order
  std::vector<TimeNs> stepNs;    ///< its median step
  TimeNs medianStepNs = 0;       ///< over the probe runs: the speed every run is brought to

  /// At least two samples: enough to see the machine's speed move.
  bool usable() const { return stepNs.size() >= 2; }
  /// The slowest sample's step over the fastest's, minus one (0.25: the machine ran 25% slower
  /// at its slowest than at its fastest); 0 when not usable.
  double spread() const;
};

/// The probe runs of `runs` (GPipe without checkpoints at the largest chunk count it was timed
/// at) whose moment is known.
MachineSpeedSamples machineSpeedSamples(const std::vector<ReferenceRun>& runs);

/// What each run is scaled by (the file comment): 1 for a run of unknown moment, or when the
/// samples are not usable; clamped to [0.5, 2].
std::vector<double> steadySpeedFactors(const std::vector<ReferenceRun>& runs);

/// `runs` with every trace scaled by its steadySpeedFactors().
std::vector<ReferenceRun> atSteadySpeed(std::vector<ReferenceRun> runs);

}  // namespace pipeprof
