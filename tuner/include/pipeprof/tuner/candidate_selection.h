// Which predicted candidates a sweep measures: `--measure top:N|all|none` and its spread rule.
#pragma once

#include <pipeprof/core/candidate.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::tuner {

enum class MeasureKind { Top, All, None };

/// The parsed `--measure` value.
struct MeasurePolicy {
  MeasureKind kind = MeasureKind::Top;
  std::int64_t count = 12;  ///< N of top:N
};

/// Parses "top:N" (N >= 1), "all" or "none". Throws std::invalid_argument naming the text and
/// the accepted forms.
MeasurePolicy parseMeasurePolicy(const std::string& text);

/// Picks the candidates to measure from `ranked` (fitting candidates, best predicted first).
/// top:N takes the best ceil(N/3) by prediction, then repeatedly the candidate whose balance,
/// chunk count, checkpoint mode and schedule (with its stages per device) are least represented
/// among those already picked (the sum of the four counts; ties go to the better predicted), so
/// the measured set spreads over schedules, balances, chunks and modes and a rank correlation
/// over it means something. (Among candidates of one schedule the schedule count adds the same
/// to every score and changes nothing.)
/// Returns indices into `ranked`, in the order picked.
std::vector<std::size_t> selectForMeasurement(const std::vector<Candidate>& ranked,
                                              const MeasurePolicy& policy);

}  // namespace pipeprof::tuner
