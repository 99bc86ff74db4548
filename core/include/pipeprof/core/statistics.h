// Small statistics over timings, shared by the measurement, the calibration and its drift.
#pragma once

#include <pipeprof/core/units.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace pipeprof {

/// The median of `samples`: the middle one, or the mean of the middle two (rounded down) for
/// an even count; 0 for none.
TimeNs medianNs(std::vector<TimeNs> samples);

/// The median of `values`: the middle one, or the mean of the middle two; 0 for none.
double median(std::vector<double> values);

/// The pooled within-group variance of `groups`: the squared deviations of every value from its
/// group's mean, over (values - groups). Empty when no group has two values.
std::optional<double> pooledVariance(const std::map<std::int64_t, std::vector<double>>& groups);

/// How much of a measured deviation an empirical-Bayes estimate keeps, both normal:
/// priorSd^2 / (priorSd^2 + noiseVariance), priorSd how far the true values spread, noiseVariance
/// how noisy the measurement is.
double shrinkageShare(double priorSd, double noiseVariance);

}  // namespace pipeprof
