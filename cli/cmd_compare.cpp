// `pipeprof compare`: the sweep's comparison table and summary, from a saved report.
#include "commands.h"

#include "comparison_table.h"

#include <pipeprof/core/report.h>

#include <iostream>
#include <memory>

namespace pipeprof::cli {

void addCompareCommand(CLI::App& app) {
  struct Flags {
    std::string report;
    bool json = false;
    bool all = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* command = app.add_subcommand(
      "compare",
      "Print the comparison table (predicted vs measured step time and peak memory, error %, rank)\n"
      "and the summary (MAPE, Spearman, suggestion) of a report written by `pipeprof sweep`.\n\n"
      "Examples:\n"
      "  pipeprof compare out/report.json\n"
      "  pipeprof compare out/report.json --all      # also candidates that were only predicted\n"
      "  pipeprof compare out/report.json --json     # the summary as JSON");
  command->add_option("report", flags->report, "Report file (pipeprof.report/v1)")->required();
  command->add_flag("--all", flags->all, "List every candidate, not only measured and failed ones");
  command->add_flag("--json", flags->json, "Print the summary as JSON");
  command->callback([flags] {
    const Report report = readReport(flags->report);
    if (flags->json) {
      std::cout << summaryJson(report).dump(2) << "\n";
      return;
    }
    ComparisonOptions options;
    options.allCandidates = flags->all;
    printComparison(report, std::cout, options);
  });
}

}  // namespace pipeprof::cli
