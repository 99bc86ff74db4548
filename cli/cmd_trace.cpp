// `pipeprof trace summarize` and `merge`: the timeline analysis of a Chrome trace, one timeline from rank traces
// (`trace explain` is cmd_trace_explain.cpp).
#include "commands.h"
#include "output_file.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/profiler/timeline_analysis.h>

#include <iostream>
#include <string>

namespace pipeprof::cli {

namespace {

struct SummarizeFlags {
  std::string path;
  bool json = false;
  std::size_t gaps = 5;
  std::size_t kernels = 10;
};

void runSummarize(const SummarizeFlags& flags) {
  const Trace trace = readChromeTraceFile(flags.path);
  AnalysisOptions options;
  options.maxGaps = flags.gaps;
  options.maxKernels = flags.kernels;
  const TimelineAnalysis analysis = analyzeTimeline(trace, options);
  if (flags.json) {
    std::cout << toJson(analysis).dump(2) << "\n";
  } else {
    std::cout << flags.path << ": " << trace.events.size() << " events\n" << formatAnalysis(analysis);
  }
}

struct MergeFlags {
  std::vector<std::string> paths;
  std::string output;
};

void runMerge(const MergeFlags& flags) {
  checkOutputFile("-o", flags.output);
  std::vector<Trace> traces;
  for (const std::string& path : flags.paths) traces.push_back(readChromeTraceFile(path));
  const Trace merged = concatenateTraces(traces);
  writeChromeTraceFile(merged, flags.output);
  std::cout << flags.output << ": " << merged.events.size() << " events from " << traces.size() << " traces\n";
}

}  // namespace

void addTraceCommand(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Work with timelines (Chrome trace JSON written by pipeprof)");
  trace->require_subcommand(1);
  auto [summarize, flags] = addCommand<SummarizeFlags>(
      *trace, "summarize",
      {"Busy/idle time and bubbles per partition, op kinds, copy bandwidth, the largest idle gaps and\n"
       "what they waited for, and the top kernels.",
       {"pipeprof trace summarize run.json"}},
      runSummarize);
  summarize.add_option("trace", flags.path, "trace file (measured or predicted)")->required();
  summarize.add_flag("--json", flags.json, "print the analysis as JSON");
  summarize.add_option("--gaps", flags.gaps, "how many idle gaps to list")->capture_default_str();
  summarize.add_option("--kernels", flags.kernels, "how many kernels to list")->capture_default_str();

  auto [merge, mergeFlags] = addCommand<MergeFlags>(
      *trace, "merge",
      {"One timeline from the per-rank traces of a multi-process run (each rank of a torchrun launch writes\n"
       "TRACE.rankR.json; their clocks are aligned at set-up): one process per rank, flows between them.",
       {"pipeprof trace merge run.rank0.json run.rank1.json -o run.json"}},
      runMerge);
  merge.add_option("traces", mergeFlags.paths, "the rank traces")->required()->check(CLI::ExistingFile);
  merge.add_option("-o,--output", mergeFlags.output, "the merged trace to write")->required();
  addTraceExplainCommand(*trace);
}

}  // namespace pipeprof::cli
