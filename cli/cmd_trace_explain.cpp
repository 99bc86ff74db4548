// `pipeprof trace explain`: the step breakdown of a measured trace and of its prediction outside a
// sweep's report -- a `run --trace` (threads, or one merged from the ranks of `--procs`) beside
// the `simulate --trace` of the same candidate.
#include "commands.h"
#include "model_options.h"
#include "schedule_options.h"
#include "step_breakdown_table.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/step_breakdown.h>

#include <fmt/format.h>

#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::cli {
namespace {

struct TraceExplainFlags {
  std::vector<std::string> traces;
  ModelFlags model;
  CandidateFlags candidate{"", 4, "except_last", {}};  ///< with run's default chunks
  bool json = false;
};

/// The candidate the flags describe (those its run was given), checked against the model.
Candidate candidateOfRun(const TraceExplainFlags& flags, const Model& model) {
  const Candidate candidate = candidateFromFlags(flags.candidate, batchFromFlags(flags.model, model));
  const auto layers = static_cast<std::int64_t>(model.sequential->size());
  const std::int64_t balanced = std::accumulate(candidate.balance.begin(), candidate.balance.end(), std::int64_t{0});
  if (balanced != layers) {
    throw UsageError(fmt::format("--balance {} holds {} layers; model '{}' has {}", flags.candidate.balance, balanced,
                                 flags.model.model, layers));
  }
  return candidate;
}

/// A trace's candidate (its "candidate" metadata, which `run` and `simulate` write) must be the
/// one the flags describe: another schedule would name other ops.
void checkTraceCandidate(const Trace& trace, const std::string& path, const Candidate& candidate) {
  const auto named = trace.metadata.find("candidate");
  if (named == trace.metadata.end() || named->second == candidate.label()) return;
  throw UsageError(fmt::format("{} is a trace of {}; the flags describe {} -- give the flags its run was given", path,
                               named->second, candidate.label()));
}

void runTraceExplain(const TraceExplainFlags& flags) {
  if (flags.traces.size() > 2) throw UsageError("give one measured trace and at most one predicted trace");
  const Model model = buildModelFromFlags(flags.model);
  const Candidate candidate = candidateOfRun(flags, model);
  const Schedule schedule = Schedule::build(candidate.scheduleSpec(model.skips));
  std::optional<StepBreakdown> measured, predicted;
  for (const std::string& path : flags.traces) {
    const Trace trace = readChromeTraceFile(path);
    checkTraceCandidate(trace, path, candidate);
    const auto source = trace.metadata.find("source");
    const bool isPredicted = source != trace.metadata.end() && source->second == "predicted";
    std::optional<StepBreakdown>& slot = isPredicted ? predicted : measured;
    if (slot) {
      throw UsageError(fmt::format("{} is the second {} trace: give one measured trace and its prediction", path,
                                   isPredicted ? "predicted" : "measured"));
    }
    slot = breakDownSteps(schedule, trace);
    if (slot->steps == 0) {
      throw UsageError(fmt::format("{} holds no step of {}: give a trace that `pipeprof run --trace` or "
                                   "`simulate --trace` wrote for it",
                                   path, candidate.label()));
    }
  }
  if (flags.json) {
    nlohmann::json json = {{"candidate", candidate.label()}};
    json["measured"] = measured ? toJson(*measured) : nlohmann::json();
    json["predicted"] = predicted ? toJson(*predicted) : nlohmann::json();
    std::cout << json.dump(2) << "\n";
    return;
  }
  printStepBreakdown(candidateHeading(candidate), measured, predicted, std::cout);
}

}  // namespace

void addTraceExplainCommand(CLI::App& trace) {
  auto [command, flags] = addCommand<TraceExplainFlags>(
      trace, "explain",
      {"Break each pipeline device's step down (compute by op kind, the schedule's bubble, waiting for a\n"
       "slower peer, transfer, overhead) from a measured trace and its prediction, as `pipeprof explain`\n"
       "does for a sweep's candidate. Give the traces (a measured one -- `run --trace`, threads or merged\n"
       "from `--procs` ranks -- and the `simulate --trace` of the same candidate, in any order; each goes\n"
       "in the column its source names) and the model and candidate flags the run was given.",
       {"pipeprof trace explain run.json predicted.json --model mlp --batch 64 --balance 8,7 --chunks 8",
        "pipeprof trace explain run.json --model gpt --balance 3,4 --chunks 4 --schedule 1f1b --json"}},
      runTraceExplain);
  command.add_option("traces", flags.traces, "a measured trace and, optionally, its prediction")
      ->required()
      ->check(CLI::ExistingFile);
  addModelFlags(command, flags.model);
  addCandidateFlags(command, flags.candidate, "Layers per stage, as the run was given them");
  command.add_flag("--json", flags.json, "Print both breakdowns as JSON");
}

}  // namespace pipeprof::cli
