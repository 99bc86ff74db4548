// `pipeprof explain`: where a measured candidate's step went, device by device, measured beside
// predicted (the step breakdown of core/step_breakdown.h, kept in the sweep's report).
#include "commands.h"

#include "step_breakdown_table.h"

#include <pipeprof/core/report.h>

#include <iostream>
#include <optional>

namespace pipeprof::cli {

void addExplainCommand(CLI::App& app) {
  struct Flags {
    std::string report;
    std::optional<std::int64_t> candidate;
    bool json = false;
  };
  auto [command, flags] = addCommand<Flags>(
      app, "explain",
      {"Break a candidate's training step down per device, measured beside predicted: compute by op kind\n"
       "(forward, recompute, loss, backward or its I and W halves, optimizer), the schedule's bubble,\n"
       "waiting for a slower peer, transfer and overhead; then the categories where prediction and\n"
       "measurement differ most. Reads a report written by `pipeprof sweep` (docs/runtime.md, \"Where a\n"
       "step goes\", defines the categories).",
       {"pipeprof explain out/report.json                  # the best measured candidate",
        "pipeprof explain out/report.json --candidate 3    # the candidate of predicted rank 3 (pred#)",
        "pipeprof explain out/report.json --json"}},
      [](const Flags& flags) {
        const Report report = readReport(flags.report);
        const CandidateResult& result = report.candidates.at(candidateToExplain(report, flags.candidate));
        if (flags.json) {
          nlohmann::json json = {{"candidate", result.candidate.label()}, {"predicted_rank", result.predictedRank}};
          json["measured"] = result.measuredBreakdown ? toJson(*result.measuredBreakdown) : nlohmann::json();
          json["predicted"] = result.predictedBreakdown ? toJson(*result.predictedBreakdown) : nlohmann::json();
          std::cout << json.dump(2) << "\n";
          return;
        }
        printStepBreakdown(result, std::cout);
      });
  command.add_option("report", flags.report, "Report file (pipeprof.report/v1)")->required();
  command
      .add_option("--candidate", flags.candidate,
                  "The candidate of this predicted rank (pred# in `pipeprof compare`; default: the best measured)")
      ->check(CLI::PositiveNumber);
  command.add_flag("--json", flags.json, "Print both breakdowns as JSON");
}

}  // namespace pipeprof::cli
