// The step breakdown table of `pipeprof explain`.
#include "step_breakdown_table.h"

#include "commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace pipeprof::cli {
namespace {

/// How many (device, category) differences the summary names.
constexpr std::size_t kLargestDifferences = 3;

const DeviceStepBreakdown* deviceOf(const std::optional<StepBreakdown>& breakdown, std::size_t d) {
  if (!breakdown || d >= breakdown->devices.size()) return nullptr;
  return &breakdown->devices[d];
}

std::string durationOrDash(const DeviceStepBreakdown* device, std::optional<StepCategory> category) {
  if (device == nullptr) return "-";
  return formatDuration(category ? device->at(*category) : device->stepNs());
}

std::string signedDuration(TimeNs ns) { return (ns < 0 ? "-" : "+") + formatDuration(std::llabs(ns)); }

std::string share(TimeNs ns, TimeNs stepNs) {
  return stepNs > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(ns) / static_cast<double>(stepNs)) : "-";
}

struct Difference {
  std::size_t device = 0;
  StepCategory category = StepCategory::Overhead;
  TimeNs predictedNs = 0;
  TimeNs measuredNs = 0;
  TimeNs stepNs = 0;  ///< the measured step
};

std::string describeSource(const std::optional<StepBreakdown>& breakdown, const char* what, const char* missing) {
  if (!breakdown) return fmt::format("{}: {}", what, missing);
  return fmt::format("{}: mean of {} step{}", what, breakdown->steps, breakdown->steps == 1 ? "" : "s");
}

}  // namespace

std::size_t candidateToExplain(const Report& report, std::optional<std::int64_t> predictedRank) {
  if (predictedRank) {
    if (const auto index = report.candidateOfRank(*predictedRank)) {
      const CandidateResult& result = report.candidates[*index];
      if (!result.measuredBreakdown && !result.predictedBreakdown) {
        throw UsageError(fmt::format(
            "--candidate {}: {} has no step breakdown: a sweep breaks down the candidates it measured, and this one "
            "was {}{}",
            *predictedRank, result.candidate.label(), candidateStatusName(result.status),
            result.notMeasuredReason.empty() ? "" : " (" + result.notMeasuredReason + ")"));
      }
      return *index;
    }
    throw UsageError(fmt::format("--candidate: no candidate of predicted rank {} (the report ranks {} that fit; "
                                 "`pipeprof compare --all` lists them)",
                                 *predictedRank,
                                 std::count_if(report.candidates.begin(), report.candidates.end(),
                                               [](const CandidateResult& r) { return r.predictedRank > 0; })));
  }
  if (report.suggestion.bestMeasured) return *report.suggestion.bestMeasured;
  throw UsageError("the report has no measured candidate; name one with --candidate N (its predicted rank, the "
                   "pred# of `pipeprof compare`) to see its predicted breakdown");
}

std::string candidateHeading(const Candidate& candidate) {
  const bool gpipe = candidate.schedule == ScheduleKind::GPipe;  // the one label() leaves out
  return candidate.label() + (gpipe ? " gpipe" : "");
}

void printStepBreakdown(const CandidateResult& result, std::ostream& out) {
  printStepBreakdown(fmt::format("{}  (pred# {})", candidateHeading(result.candidate), result.predictedRank),
                     result.measuredBreakdown, result.predictedBreakdown, out, "none in the report");
}

void printStepBreakdown(const std::string& heading, const std::optional<StepBreakdown>& measuredBreakdown,
                        const std::optional<StepBreakdown>& predictedBreakdown, std::ostream& out,
                        const char* missing) {
  out << heading << "\n";
  out << describeSource(measuredBreakdown, "measured", missing) << "; "
      << describeSource(predictedBreakdown, "predicted", missing) << "\n\n";
  const std::size_t devices = std::max(measuredBreakdown ? measuredBreakdown->devices.size() : 0,
                                       predictedBreakdown ? predictedBreakdown->devices.size() : 0);
  std::vector<Difference> differences;
  for (std::size_t d = 0; d < devices; ++d) {
    const DeviceStepBreakdown* measured = deviceOf(measuredBreakdown, d);
    const DeviceStepBreakdown* predicted = deviceOf(predictedBreakdown, d);
    const DeviceStepBreakdown* named = measured != nullptr ? measured : predicted;
    out << fmt::format("device {}{}\n", d, named->traceDevice.empty() ? "" : " (" + named->traceDevice + ")");
    out << fmt::format("  {:<20} {:>11} {:>7} {:>11} {:>7} {:>11}\n", "", "measured", "share", "predicted", "share",
                       "difference");
    for (const StepCategory category : stepCategories()) {
      const TimeNs measuredNs = measured != nullptr ? measured->at(category) : 0;
      const TimeNs predictedNs = predicted != nullptr ? predicted->at(category) : 0;
      if (measuredNs == 0 && predictedNs == 0) continue;
      const bool both = measured != nullptr && predicted != nullptr;
      out << fmt::format("  {:<20} {:>11} {:>7} {:>11} {:>7} {:>11}\n", stepCategoryName(category),
                         durationOrDash(measured, category), measured ? share(measuredNs, measured->stepNs()) : "-",
                         durationOrDash(predicted, category), predicted ? share(predictedNs, predicted->stepNs()) : "-",
                         both ? signedDuration(predictedNs - measuredNs) : "-");
      if (both) differences.push_back({d, category, predictedNs, measuredNs, measured->stepNs()});
    }
    out << fmt::format("  {:<20} {:>11} {:>7} {:>11} {:>7} {:>11}\n\n", "step", durationOrDash(measured, std::nullopt),
                       "", durationOrDash(predicted, std::nullopt), "",
                       measured && predicted ? signedDuration(predicted->stepNs() - measured->stepNs()) : "-");
  }
  if (differences.empty()) return;
  std::stable_sort(differences.begin(), differences.end(), [](const Difference& a, const Difference& b) {
    return std::llabs(a.predictedNs - a.measuredNs) > std::llabs(b.predictedNs - b.measuredNs);
  });
  out << "where prediction and measurement differ most:\n";
  for (std::size_t k = 0; k < std::min(kLargestDifferences, differences.size()); ++k) {
    const Difference& difference = differences[k];
    if (difference.predictedNs == difference.measuredNs) break;
    out << fmt::format("  device {} {}: predicted {}, measured {} ({} of the measured step)\n", difference.device,
                       stepCategoryName(difference.category), formatDuration(difference.predictedNs),
                       formatDuration(difference.measuredNs),
                       share(difference.predictedNs - difference.measuredNs, difference.stepNs));
  }
}

}  // namespace pipeprof::cli
