// Chrome trace event format: writer and reader (Perfetto and chrome://tracing open the output).
//
// Layout of a written file (see docs/formats.md):
//   {"traceEvents": [
//      {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "cpu:0"}},   devices
//      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "partition 0"}},  lanes
//      {"ph": "X", "name": "forward(0,0)", "cat": "forward", "pid": 1, "tid": 1,
//       "ts": 12.345, "dur": 1.000, "args": {"phase": "forward", "i": 0, "j": 0}},
//      {"ph": "C", ..., "args": {"memory": 1024}, "pipeprof": {"phase": "other"}},
//      {"ph": "s", "id": 7, ...}, {"ph": "f", "id": 7, "bp": "e", ...}],
//    "displayTimeUnit": "ms", "otherData": {"pipeprof_base_ns": 1000, ...metadata}}
// Timestamps are written as fixed-point text (integer arithmetic) so nanoseconds round-trip.
#include <pipeprof/core/chrome_trace.h>

#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

namespace pipeprof {
namespace {

constexpr const char* kBaseKey = "pipeprof_base_ns";
constexpr const char* kEscapePrefix = "args.";

bool isReservedArg(const std::string& key) {
  return key == "phase" || key == "i" || key == "j" || key == "corr" || key == "bytes" ||
         key.rfind(kEscapePrefix, 0) == 0;
}

/// "12.345" for 12345 ns: microseconds with exactly three decimals, without floating point.
std::string microseconds(TimeNs ns) {
  bool negative = ns < 0;
  std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  std::string fraction = std::to_string(magnitude % 1000);
  fraction.insert(0, 3 - fraction.size(), '0');
  return (negative ? "-" : "") + std::to_string(magnitude / 1000) + "." + fraction;
}

/// Orders names with embedded numbers numerically: "partition 2" < "partition 10".
bool naturalLess(const std::string& a, const std::string& b) {
  std::size_t x = 0;
  std::size_t y = 0;
  while (x < a.size() && y < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[x])) && std::isdigit(static_cast<unsigned char>(b[y]))) {
      std::size_t xEnd = x;
      std::size_t yEnd = y;
      while (xEnd < a.size() && std::isdigit(static_cast<unsigned char>(a[xEnd]))) ++xEnd;
      while (yEnd < b.size() && std::isdigit(static_cast<unsigned char>(b[yEnd]))) ++yEnd;
      std::string xDigits = a.substr(x, xEnd - x);
      std::string yDigits = b.substr(y, yEnd - y);
      xDigits.erase(0, std::min(xDigits.find_first_not_of('0'), xDigits.size()));
      yDigits.erase(0, std::min(yDigits.find_first_not_of('0'), yDigits.size()));
      if (xDigits.size() != yDigits.size()) return xDigits.size() < yDigits.size();
      if (xDigits != yDigits) return xDigits < yDigits;
      x = xEnd;
      y = yEnd;
    } else {
      if (a[x] != b[y]) return a[x] < b[y];
      ++x;
      ++y;
    }
  }
  if ((a.size() - x) != (b.size() - y)) return (a.size() - x) < (b.size() - y);
  return a < b;
}

bool isComputePhase(Phase phase) {
  return phase == Phase::Forward || phase == Phase::Recompute || phase == Phase::Backward;
}

/// Process and thread ids: devices and lanes ordered by the lowest partition they show, then
/// compute lanes before others, then by name; ids count from 1 in that order.
struct Layout {
  struct Key {
    std::int64_t partition = std::numeric_limits<std::int64_t>::max();
    int rank = 1;
    std::string name;
    bool operator<(const Key& other) const {
      if (partition != other.partition) return partition < other.partition;
      if (rank != other.rank) return rank < other.rank;
      return naturalLess(name, other.name);
    }
  };
  std::vector<std::string> devices;                        // by pid - 1
  std::vector<std::vector<std::string>> lanes;             // by pid - 1, tid - 1
  std::map<std::string, int> pid;                          // device -> pid
  std::map<std::pair<std::string, std::string>, int> tid;  // (device, lane) -> tid

  explicit Layout(const Trace& trace) {
    std::map<std::string, Key> deviceKeys;
    std::map<std::string, std::map<std::string, Key>> laneKeys;
    for (const TraceEvent& event : trace.events) {
      Key& device = deviceKeys[event.device];
      device.name = event.device;
      device.rank = 0;
      Key& lane = laneKeys[event.device][event.lane];
      lane.name = event.lane;
      if (event.partition >= 0) {
        device.partition = std::min(device.partition, event.partition);
        lane.partition = std::min(lane.partition, event.partition);
      }
      if (event.kind == EventKind::Span && isComputePhase(event.phase)) lane.rank = 0;
    }
    std::vector<Key> sortedDevices;
    for (const auto& entry : deviceKeys) sortedDevices.push_back(entry.second);
    std::sort(sortedDevices.begin(), sortedDevices.end());
    for (const Key& device : sortedDevices) {
      devices.push_back(device.name);
      pid[device.name] = static_cast<int>(devices.size());
      std::vector<Key> sortedLanes;
      for (const auto& entry : laneKeys[device.name]) sortedLanes.push_back(entry.second);
      std::sort(sortedLanes.begin(), sortedLanes.end());
      lanes.emplace_back();
      for (const Key& lane : sortedLanes) {
        lanes.back().push_back(lane.name);
        tid[{device.name, lane.name}] = static_cast<int>(lanes.back().size());
      }
    }
  }
};

/// pipeprof's fields of an event and its own args (reserved names escaped with "args.").
nlohmann::json pipeprofArgs(const TraceEvent& event) {
  nlohmann::json args = nlohmann::json::object();
  args["phase"] = phaseName(event.phase);
  if (event.microBatch != -1) args["i"] = event.microBatch;
  if (event.partition != -1) args["j"] = event.partition;
  if (event.correlationId != -1) args["corr"] = event.correlationId;
  if (event.bytes != 0) args["bytes"] = event.bytes;
  for (const auto& [key, value] : event.args) {
    args[isReservedArg(key) ? kEscapePrefix + key : key] = value;
  }
  return args;
}

std::string eventLine(const TraceEvent& event, const Layout& layout, TimeNs baseNs) {
  int pid = layout.pid.at(event.device);
  int tid = layout.tid.at({event.device, event.lane});
  std::string line = "{\"ph\": ";
  switch (event.kind) {
    case EventKind::Span: line += "\"X\""; break;
    case EventKind::Counter: line += "\"C\""; break;
    case EventKind::FlowStart: line += "\"s\""; break;
    case EventKind::FlowEnd: line += "\"f\""; break;
  }
  bool flow = event.kind == EventKind::FlowStart || event.kind == EventKind::FlowEnd;
  line += ", \"name\": " + nlohmann::json(event.name).dump();
  line += ", \"cat\": " + nlohmann::json(flow ? std::string("flow") : phaseName(event.phase)).dump();
  line += ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid);
  line += ", \"ts\": " + microseconds(event.startNs - baseNs);
  if (event.kind == EventKind::Span) line += ", \"dur\": " + microseconds(event.durationNs);
  if (flow) line += ", \"id\": " + std::to_string(event.correlationId);
  if (event.kind == EventKind::FlowEnd) line += ", \"bp\": \"e\"";
  if (event.kind == EventKind::Counter) {
    // Viewers draw every member of a counter's args as a series, so pipeprof's fields go beside.
    nlohmann::json series = nlohmann::json::object();
    series[event.name] = event.value;
    line += ", \"args\": " + series.dump() + ", \"pipeprof\": " + pipeprofArgs(event).dump();
  } else {
    line += ", \"args\": " + pipeprofArgs(event).dump();
  }
  return line + "}";
}

std::string metadataLine(const char* name, int pid, int tid, const nlohmann::json& args) {
  return "{\"ph\": \"M\", \"name\": \"" + std::string(name) + "\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(tid) + ", \"args\": " + args.dump() + "}";
}

// ---- reading ----

TimeNs nanoseconds(const JsonCursor& json) {
  double us = json.asNumber();
  double ns = std::round(us * 1000.0);
  if (!(std::fabs(ns) < 9.0e18)) json.fail("timestamp out of range: " + json.value().dump());
  return static_cast<TimeNs>(ns);
}

std::int64_t optionalInt(const JsonCursor& event, const char* key, std::int64_t fallback) {
  return event.has(key) ? event.at(key).asInt() : fallback;
}

/// Fills pipeprof's fields and own args of event from an args-like object.
void readArgs(const JsonCursor& json, TraceEvent& event) {
  if (!json.value().is_object()) json.fail("expected an object, got " + std::string(json.value().type_name()));
  for (const auto& [key, value] : json.value().items()) {
    if (key == "phase" && value.is_string()) {
      try {
        event.phase = parsePhase(value.get<std::string>());
        continue;
      } catch (const std::invalid_argument&) {
        // Another tool's "phase": kept as an ordinary arg below.
      }
    } else if (value.is_number_integer() && (key == "i" || key == "j" || key == "corr" || key == "bytes")) {
      std::int64_t number = JsonCursor(value, json.file(), json.path() + "." + key).asInt();
      if (key == "i") event.microBatch = number;
      else if (key == "j") event.partition = number;
      else if (key == "corr") event.correlationId = number;
      else event.bytes = number;
      continue;
    }
    std::string name = key.rfind(kEscapePrefix, 0) == 0 ? key.substr(std::string(kEscapePrefix).size()) : key;
    event.args[name] = value.is_string() ? value.get<std::string>() : value.dump();
  }
}

Trace traceFromJson(const nlohmann::json& json, const std::string& source) {
  JsonCursor root(json, source);
  Trace trace;
  JsonCursor events = root;
  if (json.is_object()) {
    events = root.at("traceEvents");
    if (root.has("otherData")) {
      JsonCursor other = root.at("otherData");
      if (!other.value().is_object()) other.fail("expected an object, got " + std::string(other.value().type_name()));
      for (const auto& [key, value] : other.value().items()) {
        if (key == kBaseKey) trace.baseNs = other.at(key).asInt();
        else trace.metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
  } else if (!json.is_array()) {
    root.fail("expected a Chrome trace: an object with traceEvents or an array of events");
  }
  std::vector<JsonCursor> items = events.items();

  std::map<std::int64_t, std::string> processNames;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> threadNames;
  for (const JsonCursor& item : items) {
    if (!item.value().is_object()) item.fail("expected an event object, got " + std::string(item.value().type_name()));
    if (item.at("ph").asString() != "M" || !item.has("name")) continue;
    std::string name = item.at("name").asString();
    std::int64_t pid = optionalInt(item, "pid", 0);
    if (name == "process_name") processNames[pid] = item.at("args").at("name").asString();
    if (name == "thread_name") threadNames[{pid, optionalInt(item, "tid", 0)}] = item.at("args").at("name").asString();
  }

  for (const JsonCursor& item : items) {
    std::string ph = item.at("ph").asString();
    TraceEvent event;
    if (ph == "X") event.kind = EventKind::Span;
    else if (ph == "C") event.kind = EventKind::Counter;
    else if (ph == "s") event.kind = EventKind::FlowStart;
    else if (ph == "f") event.kind = EventKind::FlowEnd;
    else continue;  // metadata, instants, begin/end pairs and other phases are not modelled
    event.name = item.has("name") ? item.at("name").asString() : std::string();
    std::int64_t pid = optionalInt(item, "pid", 0);
    std::int64_t tid = optionalInt(item, "tid", 0);
    auto process = processNames.find(pid);
    event.device = process != processNames.end() ? process->second : "process " + std::to_string(pid);
    auto thread = threadNames.find({pid, tid});
    event.lane = thread != threadNames.end() ? thread->second : "thread " + std::to_string(tid);
    event.startNs = trace.baseNs + nanoseconds(item.at("ts"));
    if (item.has("cat") && item.at("cat").value().is_string()) {
      try {
        event.phase = parsePhase(item.at("cat").value().get<std::string>());
      } catch (const std::invalid_argument&) {
      }
    }
    if (event.kind == EventKind::Span) {
      JsonCursor dur = item.at("dur");
      event.durationNs = nanoseconds(dur);
      if (event.durationNs < 0) dur.fail("expected a non-negative duration, got " + dur.value().dump());
    }
    if (event.kind == EventKind::FlowStart || event.kind == EventKind::FlowEnd) {
      if (item.has("id")) {
        JsonCursor id = item.at("id");
        if (id.value().is_string()) {
          try {
            event.correlationId = std::stoll(id.value().get<std::string>(), nullptr, 0);
          } catch (const std::exception&) {
            id.fail("expected an integer flow id, got " + id.value().dump());
          }
        } else {
          event.correlationId = id.asInt();
        }
      }
    }
    if (event.kind == EventKind::Counter) {
      if (item.has("pipeprof")) readArgs(item.at("pipeprof"), event);
      JsonCursor series = item.at("args");
      if (!series.value().is_object()) series.fail("expected an object of counter values");
      if (series.has(event.name) && series.value().at(event.name).is_number()) {
        event.value = series.at(event.name).asNumber();
        trace.events.push_back(event);
        continue;
      }
      std::vector<std::pair<std::string, double>> values;
      for (const auto& [key, value] : series.value().items()) {
        if (value.is_number()) values.emplace_back(key, value.get<double>());
      }
      if (values.empty()) series.fail("expected a numeric counter value");
      std::string base = event.name;
      for (const auto& [key, value] : values) {
        event.name = values.size() == 1 ? base : base + " " + key;
        event.value = value;
        trace.events.push_back(event);
      }
      continue;
    }
    if (item.has("args")) readArgs(item.at("args"), event);
    trace.events.push_back(event);
  }
  return trace;
}

}  // namespace

void writeChromeTrace(const Trace& trace, std::ostream& out) {
  Layout layout(trace);
  out << "{\"traceEvents\": [";
  bool first = true;
  auto emit = [&](const std::string& line) {
    out << (first ? "\n  " : ",\n  ") << line;
    first = false;
  };
  for (std::size_t p = 0; p < layout.devices.size(); ++p) {
    int pid = static_cast<int>(p + 1);
    emit(metadataLine("process_name", pid, 0, {{"name", layout.devices[p]}}));
    emit(metadataLine("process_sort_index", pid, 0, {{"sort_index", pid}}));
    for (std::size_t t = 0; t < layout.lanes[p].size(); ++t) {
      int tid = static_cast<int>(t + 1);
      emit(metadataLine("thread_name", pid, tid, {{"name", layout.lanes[p][t]}}));
      emit(metadataLine("thread_sort_index", pid, tid, {{"sort_index", tid}}));
    }
  }
  for (const TraceEvent& event : trace.events) emit(eventLine(event, layout, trace.baseNs));
  nlohmann::json other = nlohmann::json::object();
  for (const auto& [key, value] : trace.metadata) other[key] = value;
  other[kBaseKey] = trace.baseNs;
  out << "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": " << other.dump() << "}\n";
}

void writeChromeTraceFile(const Trace& trace, const std::string& path) {
  std::ostringstream out;
  writeChromeTrace(trace, out);
  writeFileAtomically(path, out.str());
}

Trace readChromeTrace(std::istream& in, const std::string& sourceName) {
  std::ostringstream content;
  content << in.rdbuf();
  return traceFromJson(parseJsonText(content.str(), sourceName), sourceName);
}

Trace readChromeTraceFile(const std::string& path) { return traceFromJson(readJsonFile(path), path); }

}  // namespace pipeprof
