// Timeline analysis of measured and predicted traces (one code path for both).
#include <pipeprof/profiler/timeline_analysis.h>

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

namespace pipeprof {

namespace {

using Interval = std::pair<TimeNs, TimeNs>;  // [start, end)

bool isCompute(const TraceEvent& e) {
  return e.kind == EventKind::Span && (e.phase == Phase::Forward || e.phase == Phase::Recompute ||
                                       e.phase == Phase::Backward || e.phase == Phase::Loss);
}

bool isCopy(const TraceEvent& e) {
  return e.kind == EventKind::Span &&
         (e.phase == Phase::Copy || e.phase == Phase::SkipCopy || e.phase == Phase::Memcpy);
}

/// Stage key: partition j when known, else the device (partition -1).
using StageKey = std::pair<std::int64_t, std::string>;
StageKey stageOf(const TraceEvent& e) { return e.partition >= 0 ? StageKey{e.partition, ""} : StageKey{-1, e.device}; }

std::vector<Interval> mergeIntervals(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

/// "a->b" from a name or lane such as "copy(2,0->1)" or "copy 0->1"; empty when absent.
std::string directionOf(const TraceEvent& e) {
  if (e.phase == Phase::Memcpy) {
    const auto kind = e.args.find("copy_kind");
    return kind != e.args.end() ? kind->second : std::string("memcpy");
  }
  for (const std::string* text : {&e.name, &e.lane}) {
    const auto arrow = text->find("->");
    if (arrow == std::string::npos) continue;
    std::size_t from = arrow;
    while (from > 0 && std::isdigit(static_cast<unsigned char>((*text)[from - 1])) != 0) --from;
    std::size_t to = arrow + 2;
    while (to < text->size() && std::isdigit(static_cast<unsigned char>((*text)[to])) != 0) ++to;
    if (from < arrow && to > arrow + 2) return text->substr(from, to - from);
  }
  return "unknown";
}

/// The step spans, or one window around every compute and copy span (none without any).
std::vector<Interval> stepWindows(const Trace& trace) {
  std::vector<Interval> windows;
  for (const TraceEvent* step : stepSpans(trace)) windows.emplace_back(step->startNs, step->endNs());
  std::sort(windows.begin(), windows.end());
  if (windows.empty()) {
    bool any = false;
    TimeNs first = 0, last = 0;
    for (const TraceEvent& e : trace.events) {
      if (!isCompute(e) && !isCopy(e)) continue;
      first = any ? std::min(first, e.startNs) : e.startNs;
      last = any ? std::max(last, e.endNs()) : e.endNs();
      any = true;
    }
    if (any) windows.emplace_back(first, last);
  }
  return windows;
}

/// The window an event starts in, or -1.
int windowOf(const std::vector<Interval>& windows, const TraceEvent& e) {
  for (std::size_t w = 0; w < windows.size(); ++w) {
    if (e.startNs >= windows[w].first && e.startNs <= windows[w].second) return static_cast<int>(w);
  }
  return -1;
}

/// The spans inside the windows, added up per stage, device, op kind, copy direction and kernel.
struct Tally {
  std::map<StageKey, std::vector<std::vector<Interval>>> busy;  // stage -> per window intervals
  std::map<StageKey, StageSummary> stages;
  std::map<std::string, std::vector<std::vector<const TraceEvent*>>> deviceOps;  // device -> per window
  std::map<std::string, DeviceSummary> devices;
  std::map<std::string, OpKindSummary> kinds;
  std::map<std::string, CopySummary> copies;
  std::map<std::string, KernelSummary> kernels;
};

/// A compute span in window w: its stage's and its device's ops and busy intervals.
void tallyCompute(const TraceEvent& e, int w, const std::vector<Interval>& windows, Tally& tally) {
  const StageKey key = stageOf(e);
  StageSummary& stage = tally.stages[key];
  stage.partition = e.partition;
  if (stage.device.empty()) stage.device = e.device;
  ++stage.ops;
  auto& perWindow = tally.busy[key];
  perWindow.resize(windows.size());
  perWindow[static_cast<std::size_t>(w)].emplace_back(e.startNs,
                                                      std::min(e.endNs(), windows[static_cast<std::size_t>(w)].second));
  DeviceSummary& device = tally.devices[e.device];
  device.device = e.device;
  ++device.ops;
  if (e.partition >= 0 &&
      std::find(device.partitions.begin(), device.partitions.end(), e.partition) == device.partitions.end()) {
    device.partitions.push_back(e.partition);
  }
  auto& opsPerWindow = tally.deviceOps[e.device];
  opsPerWindow.resize(windows.size());
  opsPerWindow[static_cast<std::size_t>(w)].push_back(&e);
}

/// Tallies the spans inside the windows (the step spans aside) and counts the counter samples.
void tallyEvents(const Trace& trace, const std::vector<Interval>& windows, Tally& tally, std::int64_t& counters) {
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Counter) {
      ++counters;
      continue;
    }
    if (e.kind != EventKind::Span) continue;
    const int w = windowOf(windows, e);
    if (w < 0 || e.phase == Phase::Step) continue;
    OpKindSummary& kind = tally.kinds[phaseName(e.phase)];
    kind.kind = phaseName(e.phase);
    ++kind.count;
    kind.totalNs += e.durationNs;
    if (isCompute(e)) {
      tallyCompute(e, w, windows, tally);
    } else if (isCopy(e)) {
      const std::string direction = directionOf(e);
      CopySummary& copy = tally.copies[direction];
      copy.direction = direction;
      ++copy.count;
      copy.bytes += e.bytes;
      copy.totalNs += e.durationNs;
    } else if (e.phase == Phase::Kernel) {
      KernelSummary& kernel = tally.kernels[e.name];
      kernel.name = e.name;
      ++kernel.count;
      kernel.totalNs += e.durationNs;
    }
  }
}

/// The idle time of a stage or device busy for busyNs, and its share of the windows.
std::pair<TimeNs, double> idleOf(TimeNs windowNs, TimeNs busyNs) {
  return std::make_pair(windowNs - busyNs,
                        windowNs > 0 ? static_cast<double>(windowNs - busyNs) / static_cast<double>(windowNs) : 0.0);
}

void summarizeStages(Tally& tally, TimelineAnalysis& out) {
  for (auto& [key, stage] : tally.stages) {
    for (const std::vector<Interval>& intervals : tally.busy[key]) {
      for (const Interval& iv : mergeIntervals(intervals)) stage.busyNs += iv.second - iv.first;
    }
    std::tie(stage.idleNs, stage.bubbleFraction) = idleOf(out.windowNs, stage.busyNs);
    out.stages.push_back(stage);
  }
}

/// Device `name`'s compute spans in one window: adds their union to device.busyNs, and its
/// idle gaps (the lead-in, between busy intervals, the tail) to `gaps`.
void scanDeviceWindow(const Trace& trace, const std::string& name, DeviceSummary& device,
                      std::vector<const TraceEvent*> ops, const Interval& window, TimeNs origin,
                      std::vector<IdleGap>& gaps) {
  std::sort(ops.begin(), ops.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->startNs < b->startNs; });
  std::vector<Interval> intervals;
  for (const TraceEvent* op : ops) intervals.emplace_back(op->startNs, std::min(op->endNs(), window.second));
  const std::vector<Interval> merged = mergeIntervals(std::move(intervals));
  for (const Interval& iv : merged) device.busyNs += iv.second - iv.first;
  // Gaps: lead-in, between busy intervals, tail.
  TimeNs cursor = window.first;
  auto addGap = [&](TimeNs from, TimeNs to) {
    if (to <= from) return;
    IdleGap gap;
    gap.partition = device.partitions.size() == 1 ? device.partitions.front() : -1;
    gap.device = name;
    gap.startNs = from - origin;
    gap.durationNs = to - from;
    for (const TraceEvent* op : ops) {
      if (op->startNs >= to) {
        gap.nextOp = op->name;
        gap.partition = op->partition;
        break;
      }
    }
    // What it waited for: the compute span on another device, or the copy, that ended
    // last within (from, to].
    TimeNs bestEnd = from;
    for (const TraceEvent& e : trace.events) {
      if (!(isCompute(e) || isCopy(e)) || (isCompute(e) && e.device == name)) continue;
      if (e.endNs() > bestEnd && e.endNs() <= to) {
        bestEnd = e.endNs();
        gap.waitedFor = e.name;
      }
    }
    gaps.push_back(std::move(gap));
  };
  for (const Interval& iv : merged) {
    addGap(cursor, iv.first);
    cursor = std::max(cursor, iv.second);
  }
  addGap(cursor, window.second);
}

/// The devices' busy and idle time, the mean bubble over them, and every idle gap.
std::vector<IdleGap> summarizeDevices(const Trace& trace, const std::vector<Interval>& windows, TimeNs origin,
                                      Tally& tally, TimelineAnalysis& out) {
  std::vector<IdleGap> gaps;
  double bubbleSum = 0.0;
  for (auto& [name, device] : tally.devices) {
    std::sort(device.partitions.begin(), device.partitions.end());
    for (std::size_t w = 0; w < windows.size(); ++w) {
      scanDeviceWindow(trace, name, device, tally.deviceOps[name][w], windows[w], origin, gaps);
    }
    std::tie(device.idleNs, device.bubbleFraction) = idleOf(out.windowNs, device.busyNs);
    bubbleSum += device.bubbleFraction;
    out.devices.push_back(device);
  }
  out.bubbleFraction = out.devices.empty() ? 0.0 : bubbleSum / static_cast<double>(out.devices.size());
  return gaps;
}

/// The longest gaps first (ties: the earlier, then the lower partition), at most maxGaps.
std::vector<IdleGap> largestGaps(std::vector<IdleGap> gaps, std::size_t maxGaps) {
  std::stable_sort(gaps.begin(), gaps.end(), [](const IdleGap& a, const IdleGap& b) {
    if (a.durationNs != b.durationNs) return a.durationNs > b.durationNs;
    if (a.startNs != b.startNs) return a.startNs < b.startNs;
    return a.partition < b.partition;
  });
  if (gaps.size() > maxGaps) gaps.resize(maxGaps);
  return gaps;
}

/// The op kinds' and kernels' means, the copies' bandwidths, and the top kernels.
void summarizeTotals(Tally& tally, const AnalysisOptions& options, TimelineAnalysis& out) {
  for (auto& [name, kind] : tally.kinds) {
    kind.meanNs = kind.count > 0 ? kind.totalNs / kind.count : 0;
    out.opKinds.push_back(kind);
  }
  for (auto& [direction, copy] : tally.copies) {
    copy.bandwidthBytesPerS =
        copy.totalNs > 0 ? static_cast<double>(copy.bytes) * 1e9 / static_cast<double>(copy.totalNs) : 0.0;
    out.copies.push_back(copy);
  }
  for (auto& [name, kernel] : tally.kernels) {
    kernel.meanNs = kernel.count > 0 ? kernel.totalNs / kernel.count : 0;
    out.topKernels.push_back(kernel);
  }
  std::stable_sort(out.topKernels.begin(), out.topKernels.end(),
                   [](const KernelSummary& a, const KernelSummary& b) { return a.totalNs > b.totalNs; });
  if (out.topKernels.size() > options.maxKernels) out.topKernels.resize(options.maxKernels);
}

}  // namespace

TimelineAnalysis analyzeTimeline(const Trace& trace, const AnalysisOptions& options) {
  TimelineAnalysis out;
  const auto source = trace.metadata.find("source");
  if (source != trace.metadata.end()) out.source = source->second;

  const std::vector<Interval> windows = stepWindows(trace);
  const TimeNs origin = windows.empty() ? 0 : windows.front().first;
  out.steps = static_cast<std::int64_t>(windows.size());
  for (const Interval& w : windows) out.windowNs += w.second - w.first;
  out.iterationNs = out.steps > 0 ? out.windowNs / out.steps : 0;

  Tally tally;
  tallyEvents(trace, windows, tally, out.counters);
  summarizeStages(tally, out);
  out.largestGaps = largestGaps(summarizeDevices(trace, windows, origin, tally, out), options.maxGaps);
  summarizeTotals(tally, options, out);
  return out;
}

nlohmann::json toJson(const TimelineAnalysis& a) {
  nlohmann::json j;
  j["source"] = a.source;
  j["steps"] = a.steps;
  j["window_ns"] = a.windowNs;
  j["iteration_ns"] = a.iterationNs;
  j["bubble_fraction"] = a.bubbleFraction;
  j["counters"] = a.counters;
  j["stages"] = nlohmann::json::array();
  for (const StageSummary& s : a.stages) {
    j["stages"].push_back({{"partition", s.partition},
                           {"device", s.device},
                           {"ops", s.ops},
                           {"busy_ns", s.busyNs},
                           {"idle_ns", s.idleNs},
                           {"bubble_fraction", s.bubbleFraction}});
  }
  j["devices"] = nlohmann::json::array();
  for (const DeviceSummary& d : a.devices) {
    j["devices"].push_back({{"device", d.device},
                            {"partitions", d.partitions},
                            {"ops", d.ops},
                            {"busy_ns", d.busyNs},
                            {"idle_ns", d.idleNs},
                            {"bubble_fraction", d.bubbleFraction}});
  }
  j["op_kinds"] = nlohmann::json::array();
  for (const OpKindSummary& k : a.opKinds) {
    j["op_kinds"].push_back({{"kind", k.kind}, {"count", k.count}, {"total_ns", k.totalNs}, {"mean_ns", k.meanNs}});
  }
  j["copies"] = nlohmann::json::array();
  for (const CopySummary& c : a.copies) {
    j["copies"].push_back({{"direction", c.direction},
                           {"count", c.count},
                           {"bytes", c.bytes},
                           {"total_ns", c.totalNs},
                           {"bandwidth_bytes_per_s", c.bandwidthBytesPerS}});
  }
  j["largest_gaps"] = nlohmann::json::array();
  for (const IdleGap& g : a.largestGaps) {
    j["largest_gaps"].push_back({{"partition", g.partition},
                                 {"device", g.device},
                                 {"start_ns", g.startNs},
                                 {"duration_ns", g.durationNs},
                                 {"next_op", g.nextOp},
                                 {"waited_for", g.waitedFor}});
  }
  j["top_kernels"] = nlohmann::json::array();
  for (const KernelSummary& k : a.topKernels) {
    j["top_kernels"].push_back({{"name", k.name}, {"count", k.count}, {"total_ns", k.totalNs}, {"mean_ns", k.meanNs}});
  }
  return j;
}

std::string formatAnalysis(const TimelineAnalysis& a) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << "timeline (" << (a.source.empty() ? "unknown source" : a.source) << "): " << a.steps << " step(s), iteration "
      << formatDuration(a.iterationNs) << ", mean bubble " << a.bubbleFraction * 100.0 << "%\n";
  out << "stages:\n";
  for (const StageSummary& s : a.stages) {
    out << "  " << (s.partition >= 0 ? "partition " + std::to_string(s.partition) : s.device) << " on " << s.device
        << ": " << s.ops << " ops, busy " << formatDuration(s.busyNs) << ", idle " << formatDuration(s.idleNs)
        << ", bubble " << s.bubbleFraction * 100.0 << "%\n";
  }
  if (std::any_of(a.devices.begin(), a.devices.end(), [](const DeviceSummary& d) { return d.partitions.size() > 1; })) {
    out << "devices:\n";
    for (const DeviceSummary& d : a.devices) {
      out << "  " << d.device << " (stages";
      for (std::size_t k = 0; k < d.partitions.size(); ++k) out << (k == 0 ? " " : ", ") << d.partitions[k];
      out << "): " << d.ops << " ops, busy " << formatDuration(d.busyNs) << ", idle " << formatDuration(d.idleNs)
          << ", bubble " << d.bubbleFraction * 100.0 << "%\n";
    }
  }
  out << "op kinds:\n";
  for (const OpKindSummary& k : a.opKinds) {
    out << "  " << k.kind << ": " << k.count << " x mean " << formatDuration(k.meanNs) << " = "
        << formatDuration(k.totalNs) << "\n";
  }
  if (!a.copies.empty()) {
    out << "copies:\n";
    for (const CopySummary& c : a.copies) {
      out << "  " << c.direction << ": " << c.count << " copies, " << formatBytes(c.bytes) << " in "
          << formatDuration(c.totalNs);
      if (c.bandwidthBytesPerS > 0) out << " (" << formatBytes(static_cast<Bytes>(c.bandwidthBytesPerS)) << "/s)";
      out << "\n";
    }
  }
  if (!a.largestGaps.empty()) {
    out << "largest idle gaps:\n";
    for (const IdleGap& g : a.largestGaps) {
      out << "  " << g.device << (g.partition >= 0 ? " (partition " + std::to_string(g.partition) + ")" : "") << " at +"
          << formatDuration(g.startNs) << ": " << formatDuration(g.durationNs);
      if (!g.waitedFor.empty()) out << ", waiting for " << g.waitedFor;
      if (!g.nextOp.empty()) out << ", then " << g.nextOp;
      out << "\n";
    }
  }
  if (!a.topKernels.empty()) {
    out << "top kernels:\n";
    for (const KernelSummary& k : a.topKernels) {
      out << "  " << formatDuration(k.totalNs) << "  " << k.count << " x " << k.name << "\n";
    }
  }
  out << "counters: " << a.counters << " samples\n";
  return out.str();
}

}  // namespace pipeprof
