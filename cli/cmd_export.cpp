// `pipeprof export`: a report's candidate as PyTorch's pipelining runtime takes it (torchtitan's
// settings, pipeline()'s split_spec, the schedule's class or action CSV), or what PyTorch cannot
// express of it.
#include "commands.h"
#include "output_file.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/pytorch_export.h>
#include <pipeprof/core/report.h>

#include <fmt/format.h>

#include <iostream>
#include <optional>

namespace pipeprof::cli {
namespace {

struct ExportFlags {
  std::string report;
  std::optional<std::int64_t> candidate;
  std::string output;  ///< empty: standard output
};

/// The suggested candidate (the best measured, else the best predicted), or the one of the
/// predicted rank asked for.
std::size_t candidateToExport(const Report& report, std::optional<std::int64_t> predictedRank) {
  if (predictedRank) {
    if (const auto index = report.candidateOfRank(*predictedRank)) return *index;
    throw UsageError(fmt::format("--candidate: no candidate of predicted rank {} (`pipeprof compare --all` lists "
                                 "them)",
                                 *predictedRank));
  }
  if (report.suggestion.bestMeasured) return *report.suggestion.bestMeasured;
  if (report.suggestion.bestPredicted) return *report.suggestion.bestPredicted;
  throw UsageError("the report has no candidate that fits");
}

void runExport(const ExportFlags& flags) {
  if (!flags.output.empty()) checkOutputFile("-o", flags.output);
  const Report report = readReport(flags.report);
  if (!report.profile) {
    throw UsageError(flags.report + ": the report holds no profile, so it names no layers to export");
  }
  std::vector<std::string> layers;
  for (const LayerProfile& layer : report.profile->layers) layers.push_back(layer.name);
  const CandidateResult& chosen = report.candidates.at(candidateToExport(report, flags.candidate));
  nlohmann::json configuration = pytorchConfiguration(chosen.candidate, layers);
  configuration["model"] = report.environment.model;
  configuration["candidate"] = chosen.candidate.label();
  configuration["batch"] = chosen.candidate.batch;
  const std::string text = configuration.dump(2) + "\n";
  for (const auto& reason : configuration.at("not_expressible")) {
    std::cerr << "PyTorch cannot express this of " << chosen.candidate.label() << ": " << reason.get<std::string>()
              << "\n";
  }
  if (flags.output.empty()) {
    std::cout << text;
    return;
  }
  writeFileAtomically(flags.output, text);
  std::cout << fmt::format("{}: {} of {} as PyTorch's configuration\n", flags.output, chosen.candidate.label(),
                           report.environment.model);
}

}  // namespace

void addExportCommand(CLI::App& app) {
  auto [command, flags] = addCommand<ExportFlags>(
      app, "export",
      {"A report's candidate as PyTorch's pipelining runtime takes it: the module paths of each stage\n"
       "(torchtitan's module_fqns_per_model_part), pipeline()'s split_spec, the schedule's class\n"
       "(pipeline_parallel_schedule) and its action CSV, the micro-batches (num_pp_microbatches), the\n"
       "stages' placement and the activation checkpointing; what PyTorch cannot express (a checkpoint\n"
       "mode it has no switch for, a cut no module path names) is left null and said on stderr.",
       {"pipeprof export out/report.json                  # the suggested candidate",
        "pipeprof export out/report.json --candidate 3    # the candidate of predicted rank 3",
        "pipeprof export out/report.json -o pp.json"}},
      runExport);
  command.add_option("report", flags.report, "Report file (pipeprof.report/v1) written by sweep")->required();
  command
      .add_option("--candidate", flags.candidate,
                  "The candidate of this predicted rank (pred# in `pipeprof compare`; default: the suggestion, the "
                  "best measured)")
      ->check(CLI::PositiveNumber);
  command.add_option("-o,--output", flags.output, "Write the JSON here instead of standard output");
}

}  // namespace pipeprof::cli
