// The reference pipelines' traces kept beside the report, and read back for a refit.
#include <pipeprof/tuner/reference_traces.h>

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCandidateKey = "reference_candidate";
constexpr const char* kIndexKey = "reference_index";
constexpr const char* kMomentKey = "reference_at_s";
constexpr const char* kSuffix = ".measured.json";

/// The reference's moment from its otherData text: seconds after the calibration began.
double momentOf(const std::string& text, const std::string& path) {
  std::size_t used = 0;
  double seconds = -1.0;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(seconds) || seconds < 0.0) {
    throw FormatError(path, std::string("$.otherData.") + kMomentKey,
                      "expected when the reference ran, in seconds after the calibration began, got '" + text + "'");
  }
  return seconds;
}

}  // namespace

std::string referenceTracesDir(const std::string& tracesDir) { return (fs::path(tracesDir) / "calibration").string(); }

void writeReferenceTrace(const ReferenceRun& run, std::size_t index, const std::string& dir) {
  fs::create_directories(dir);
  Trace trace = run.trace;
  trace.metadata[kCandidateKey] = toJson(run.candidate).dump();
  trace.metadata[kIndexKey] = std::to_string(index);
  // The shortest text that reads back as the same double: a refit sees the moments the sweep saw.
  if (run.atS >= 0.0) trace.metadata[kMomentKey] = fmt::format("{}", run.atS);
  const std::string name = fmt::format("ref{:03}_{}{}", index, candidateSlug(run.candidate), kSuffix);
  writeChromeTraceFile(trace, (fs::path(dir) / name).string());
}

std::vector<ReferenceRun> readReferenceTraces(const std::string& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error("'" + dir + "': no such directory of reference traces");
  std::map<std::int64_t, ReferenceRun> byIndex;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::size_t suffix = std::string(kSuffix).size();
    if (name.size() <= suffix || name.compare(name.size() - suffix, suffix, kSuffix) != 0) continue;
    const std::string path = entry.path().string();
    ReferenceRun run;
    run.trace = readChromeTraceFile(path);
    const auto candidate = run.trace.metadata.find(kCandidateKey);
    const auto index = run.trace.metadata.find(kIndexKey);
    if (candidate == run.trace.metadata.end() || index == run.trace.metadata.end()) {
      throw FormatError(path, "$.otherData", "names no reference candidate: not a reference trace of a sweep");
    }
    run.candidate = candidateFromJson(parseJsonText(candidate->second, path), path, "$.otherData.reference_candidate");
    run.trace.metadata.erase(candidate->first);
    const std::string& position = index->second;
    if (position.empty() || !std::all_of(position.begin(), position.end(), ::isdigit)) {
      throw FormatError(path, "$.otherData.reference_index",
                        "expected the reference's place in the order, got '" + position + "'");
    }
    if (const auto moment = run.trace.metadata.find(kMomentKey); moment != run.trace.metadata.end()) {
      run.atS = momentOf(moment->second, path);
      run.trace.metadata.erase(moment);
    }
    byIndex[std::stoll(position)] = std::move(run);
  }
  if (byIndex.empty()) throw std::runtime_error("'" + dir + "' holds no reference traces (*" + kSuffix + ")");
  std::vector<ReferenceRun> runs;
  for (auto& [index, run] : byIndex) runs.push_back(std::move(run));
  return runs;
}

}  // namespace pipeprof::tuner
