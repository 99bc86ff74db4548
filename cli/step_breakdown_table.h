// The step breakdown of one candidate, measured beside predicted, as `pipeprof explain` and
// `pipeprof trace explain` print it.
#pragma once

#include <pipeprof/core/report.h>

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

namespace pipeprof::cli {

/// The report index of the candidate `explain` describes: the one of predicted rank
/// `predictedRank` when given, else the best measured. Throws UsageError when there is none, or
/// when that candidate has no breakdown (not measured), naming what the report holds.
std::size_t candidateToExplain(const Report& report, std::optional<std::int64_t> predictedRank);

/// Per device, each category's measured and predicted time per step and their difference
/// (categories zero in both left out), then the categories where the two differ most. Either
/// breakdown may be missing (a candidate not measured, an older report): its column reads "-".
void printStepBreakdown(const CandidateResult& result, std::ostream& out);
/// The same for any two breakdowns (`pipeprof trace explain`) under `heading`; `missing` says
/// why one is not there ("none in the report").
void printStepBreakdown(const std::string& heading, const std::optional<StepBreakdown>& measured,
                        const std::optional<StepBreakdown>& predicted, std::ostream& out,
                        const char* missing = "no trace given");

/// The candidate's label, naming gpipe too (which label() leaves out).
std::string candidateHeading(const Candidate& candidate);

}  // namespace pipeprof::cli
