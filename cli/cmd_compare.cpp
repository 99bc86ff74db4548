// `pipeprof compare`: the sweep's comparison table and summary, from a saved report.
#include "commands.h"

#include "comparison_table.h"

#include <pipeprof/core/report.h>

#include <iostream>

namespace pipeprof::cli {

void addCompareCommand(CLI::App& app) {
  struct Flags {
    std::string report;
    bool json = false;
    bool all = false;
  };
  auto [command, flags] =
      addCommand<Flags>(app, "compare",
                        {"Print the comparison table (predicted vs measured step time and peak memory, error %, rank)\n"
                         "and the summary (MAPE, Spearman, suggestion) of a report written by `pipeprof sweep`.",
                         {"pipeprof compare out/report.json",
                          "pipeprof compare out/report.json --all      # also candidates that were only predicted",
                          "pipeprof compare out/report.json --json     # the summary as JSON"}},
                        [](const Flags& flags) {
                          const Report report = readReport(flags.report);
                          if (flags.json) {
                            std::cout << summaryJson(report).dump(2) << "\n";
                            return;
                          }
                          ComparisonOptions options;
                          options.allCandidates = flags.all;
                          printComparison(report, std::cout, options);
                        });
  command.add_option("report", flags.report, "Report file (pipeprof.report/v1)")->required();
  command.add_flag("--all", flags.all, "List every candidate, not only measured and failed ones");
  command.add_flag("--json", flags.json, "Print the summary as JSON");
}

}  // namespace pipeprof::cli
