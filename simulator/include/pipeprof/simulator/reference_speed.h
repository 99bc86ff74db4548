// How fast the machine ran while a calibration's references were timed, as its probe saw it.
//
// A calibration times one reference again and again among the others: GPipe without checkpoints
// at its largest chunk count, the probe (a round opens with it, meets it again after every
// shape's largest, and ends with it; tuner/reference_calibration.h). Each probe run's median
// step samples the machine's speed at that moment (ReferenceRun::atS); the sweep prints how far
// it moved while the references ran.
//
//   probe step (ms)   43.8                    47.3                       45.1
//   runs              [probe][1f1b x8][zbv x4][probe][interleaved x4] ...[probe]
//   "the machine's speed moved 7.9% while the references ran"
//
// The samples are reported, not corrected for. Scaling every reference by the probe's median
// step over the probe's step interpolated to its moment was tried (2026-12-01): refitted from
// the same traces, two sweeps of the same space agreed no better (between-run median -0.6 to
// +0.5 points, 90th percentile -3.4 to +8.2) and the measured candidates' error moved -2.6 to
// +4.2 points, so the probe's own noise (a median of 4 steps) is as large as the spells it would
// take out (docs/performance.md, "A probe of the machine's speed during calibration").
#pragma once

#include <pipeprof/simulator/calibration_fit.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// The probe's samples of the machine's speed.
struct MachineSpeedSamples {
  std::int64_t probeChunks = 0;  ///< the probe's chunk count (0: no probe among the runs)
  std::vector<double> atS;       ///< each probe run's moment, in order
  std::vector<TimeNs> stepNs;    ///< its median step

  /// At least two samples: enough to see the machine's speed move.
  bool usable() const { return stepNs.size() >= 2; }
  /// The fastest and the slowest sample's step; 0 without samples.
  TimeNs fastestNs() const;
  TimeNs slowestNs() const;
  /// The slowest sample's step over the fastest's, minus one (0.25: the machine ran 25% slower
  /// at its slowest than at its fastest); 0 when not usable.
  double spread() const;
};

/// The probe runs of `runs` (GPipe without checkpoints at the largest chunk count it was timed
/// at) whose moment is known, by moment.
MachineSpeedSamples machineSpeedSamples(const std::vector<ReferenceRun>& runs);

}  // namespace pipeprof
