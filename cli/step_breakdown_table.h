// The step breakdown of one candidate, measured beside predicted, as `pipeprof explain` prints it.
#pragma once

#include <pipeprof/core/report.h>

#include <cstddef>
#include <optional>
#include <ostream>

namespace pipeprof::cli {

/// The report index of the candidate `explain` describes: the one of predicted rank
/// `predictedRank` when given, else the best measured. Throws UsageError when there is none, or
/// when that candidate has no breakdown (not measured), naming what the report holds.
std::size_t candidateToExplain(const Report& report, std::optional<std::int64_t> predictedRank);

/// Per device, each category's measured and predicted time per step and their difference
/// (categories zero in both left out), then the categories where the two differ most. Either
/// breakdown may be missing (a candidate not measured, an older report): its column reads "-".
void printStepBreakdown(const CandidateResult& result, std::ostream& out);

}  // namespace pipeprof::cli
