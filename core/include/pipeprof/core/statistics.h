// Small statistics over timings, shared by the measurement, the calibration and its drift.
#pragma once

#include <pipeprof/core/units.h>

#include <vector>

namespace pipeprof {

/// The median of `samples`: the middle one, or the mean of the middle two (rounded down) for
/// an even count; 0 for none.
TimeNs medianNs(std::vector<TimeNs> samples);

/// The median of `values`: the middle one, or the mean of the middle two; 0 for none.
double median(std::vector<double> values);

}  // namespace pipeprof
