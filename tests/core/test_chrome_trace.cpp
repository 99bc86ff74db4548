// Tests for chrome_trace.cpp: the exact written form, exact round trips, foreign and malformed input.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <sstream>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

TraceEvent span(const std::string& name, const std::string& device, const std::string& lane, TimeNs startNs,
                TimeNs durationNs, Phase phase, std::int64_t i, std::int64_t j) {
  TraceEvent event;
  event.name = name;
  event.device = device;
  event.lane = lane;
  event.startNs = startNs;
  event.durationNs = durationNs;
  event.phase = phase;
  event.microBatch = i;
  event.partition = j;
  return event;
}

Trace exampleTrace() {
  Trace trace;
  trace.baseNs = 1000000;
  trace.metadata = {{"source", "measured"}, {"candidate", "[1,1] x2 never"}};
  // Partition 1 lives on cpu:0 and partition 0 on cpu:1, so processes follow partitions, not names.
  trace.events.push_back(span("forward(0,0)", "cpu:1", "partition 0", 1000000, 1500, Phase::Forward, 0, 0));
  TraceEvent copy = span("copy(0,0->1)", "cpu:1", "copy 0->1", 1001500, 250, Phase::Copy, 0, 0);
  copy.bytes = 4096;
  copy.correlationId = 7;
  copy.args = {{"to", "cpu:0"}, {"bytes", "reserved name"}, {"args.x", "escaped too"}};
  trace.events.push_back(copy);
  trace.events.push_back(span("forward(0,1)", "cpu:0", "partition 1", 1001750, 999, Phase::Forward, 0, 1));
  TraceEvent counter;
  counter.kind = EventKind::Counter;
  counter.name = "memory";
  counter.device = "cpu:0";
  counter.lane = "partition 1";
  counter.startNs = 1001750;
  counter.value = 12345.5;
  counter.partition = 1;
  trace.events.push_back(counter);
  TraceEvent flowStart;
  flowStart.kind = EventKind::FlowStart;
  flowStart.name = "activation";
  flowStart.device = "cpu:1";
  flowStart.lane = "partition 0";
  flowStart.startNs = 1001499;
  flowStart.correlationId = 3;
  flowStart.phase = Phase::Forward;
  TraceEvent flowEnd = flowStart;
  flowEnd.kind = EventKind::FlowEnd;
  flowEnd.device = "cpu:0";
  flowEnd.lane = "partition 1";
  flowEnd.startNs = 1001750;
  trace.events.push_back(flowStart);
  trace.events.push_back(flowEnd);
  TraceEvent early = span("warmup", "host", "main", 999000, 1000000001, Phase::Warmup, -1, -1);
  trace.events.push_back(early);
  return trace;
}

void expectSameEvent(const TraceEvent& a, const TraceEvent& b) {
  EXPECT_EQ(a.kind, b.kind) << a.name;
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.device, b.device) << a.name;
  EXPECT_EQ(a.lane, b.lane) << a.name;
  EXPECT_EQ(a.startNs, b.startNs) << a.name;
  EXPECT_EQ(a.durationNs, b.durationNs) << a.name;
  EXPECT_EQ(a.microBatch, b.microBatch) << a.name;
  EXPECT_EQ(a.partition, b.partition) << a.name;
  EXPECT_EQ(a.phase, b.phase) << a.name;
  EXPECT_EQ(a.correlationId, b.correlationId) << a.name;
  EXPECT_EQ(a.bytes, b.bytes) << a.name;
  EXPECT_EQ(a.value, b.value) << a.name;
  EXPECT_EQ(a.args, b.args) << a.name;
}

void expectSameTrace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.baseNs, b.baseNs);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t k = 0; k < a.events.size(); ++k) expectSameEvent(a.events[k], b.events[k]);
}

std::string written(const Trace& trace) {
  std::ostringstream out;
  writeChromeTrace(trace, out);
  return out.str();
}

Trace readText(const std::string& text) {
  std::istringstream in(text);
  return readChromeTrace(in, "t.json");
}

TEST(ChromeTrace, WrittenForm) {
  nlohmann::json json = nlohmann::json::parse(written(exampleTrace()));
  EXPECT_EQ(json["displayTimeUnit"], "ms");
  EXPECT_EQ(
      json["otherData"],
      nlohmann::json::parse(R"J({"pipeprof_base_ns": 1000000, "source": "measured", "candidate": "[1,1] x2 never"})J"));
  const nlohmann::json& events = json["traceEvents"];
  // Processes in partition order: cpu:1 (partition 0) is pid 1, cpu:0 pid 2, host (no partition) pid 3.
  EXPECT_EQ(events[0], nlohmann::json::parse(
                           R"J({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "cpu:1"}})J"));
  EXPECT_EQ(events[1],
            nlohmann::json::parse(
                R"J({"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 1}})J"));
  EXPECT_EQ(events[2],
            nlohmann::json::parse(
                R"J({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "partition 0"}})J"));
  EXPECT_EQ(events[4],
            nlohmann::json::parse(
                R"J({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "copy 0->1"}})J"));
  EXPECT_EQ(events[6]["args"]["name"], "cpu:0");
  EXPECT_EQ(events[10]["args"]["name"], "host");
  EXPECT_EQ(events[14], nlohmann::json::parse(R"J({"ph": "X", "name": "forward(0,0)", "cat": "forward", "pid": 1,
      "tid": 1, "ts": 0.0, "dur": 1.5, "args": {"phase": "forward", "i": 0, "j": 0}})J"));
  EXPECT_EQ(events[15], nlohmann::json::parse(R"J({"ph": "X", "name": "copy(0,0->1)", "cat": "copy", "pid": 1,
      "tid": 2, "ts": 1.5, "dur": 0.25, "args": {"phase": "copy", "i": 0, "j": 0, "corr": 7, "bytes": 4096,
      "to": "cpu:0", "args.bytes": "reserved name", "args.args.x": "escaped too"}})J"));
  EXPECT_EQ(events[17], nlohmann::json::parse(R"J({"ph": "C", "name": "memory", "cat": "other", "pid": 2, "tid": 1,
      "ts": 1.75, "args": {"memory": 12345.5}, "pipeprof": {"phase": "other", "j": 1}})J"));
  EXPECT_EQ(events[18], nlohmann::json::parse(R"J({"ph": "s", "name": "activation", "cat": "flow", "pid": 1,
      "tid": 1, "ts": 1.499, "id": 3, "args": {"phase": "forward", "corr": 3}})J"));
  EXPECT_EQ(events[19], nlohmann::json::parse(R"J({"ph": "f", "name": "activation", "cat": "flow", "pid": 2,
      "tid": 1, "ts": 1.75, "id": 3, "bp": "e", "args": {"phase": "forward", "corr": 3}})J"));
  EXPECT_EQ(events[20]["pid"], 3);
}

TEST(ChromeTrace, TimestampsAreFixedPointWithThreeDecimals) {
  std::string text = written(exampleTrace());
  EXPECT_THAT(text, HasSubstr("\"ts\": 0.000, \"dur\": 1.500,"));
  EXPECT_THAT(text, HasSubstr("\"ts\": 1.500, \"dur\": 0.250,"));
  EXPECT_THAT(text, HasSubstr("\"ts\": 1.499, \"id\": 3"));
  EXPECT_THAT(text, HasSubstr("\"ts\": -1.000, \"dur\": 1000000.001,"));
  EXPECT_THAT(text, HasSubstr("\"ts\": 1.750, \"dur\": 0.999,"));
}

TEST(ChromeTrace, RoundTripIsExact) {
  Trace trace = exampleTrace();
  expectSameTrace(readText(written(trace)), trace);
  std::string path = ::testing::TempDir() + "pipeprof_core_trace_" + std::to_string(::getpid()) + ".json";
  writeChromeTraceFile(trace, path);
  expectSameTrace(readChromeTraceFile(path), trace);
  ::unlink(path.c_str());
  Trace empty;
  expectSameTrace(readText(written(empty)), empty);
}

TEST(ChromeTrace, RoundTripOfLargeTimestampsIsExact) {
  Trace trace;
  trace.baseNs = 0;  // absolute host-clock nanoseconds written as they are
  trace.events.push_back(span("step", "cpu:0", "main", 987654321987654, 123456789012, Phase::Step, -1, -1));
  trace.events.push_back(span("step", "cpu:0", "main", 987654321987655, 1, Phase::Step, -1, -1));
  expectSameTrace(readText(written(trace)), trace);
}

TEST(ChromeTrace, LanesSortNaturally) {
  Trace trace;
  for (const char* lane : {"stream 10", "stream 2", "partition 1"}) {
    trace.events.push_back(span("k", "cuda:0", lane, 0, 1, Phase::Kernel, -1, -1));
  }
  trace.events[2].phase = Phase::Forward;
  nlohmann::json events = nlohmann::json::parse(written(trace))["traceEvents"];
  EXPECT_EQ(events[2]["args"]["name"], "partition 1");  // compute lanes first
  EXPECT_EQ(events[4]["args"]["name"], "stream 2");
  EXPECT_EQ(events[6]["args"]["name"], "stream 10");
}

TEST(ChromeTrace, ReadsTracesFromOtherTools) {
  Trace trace = readText(R"J([
    {"ph": "M", "name": "thread_name", "pid": 9, "tid": 4, "args": {"name": "worker"}},
    {"ph": "X", "name": "conv", "cat": "kernel", "pid": 9, "tid": 4, "ts": 10, "dur": 2.5,
     "args": {"stream": 7, "grid": "[1,1,1]"}},
    {"ph": "X", "name": "op", "pid": 9, "tid": 5, "ts": 11.0004, "dur": 0},
    {"ph": "B", "name": "ignored", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "i", "name": "ignored too", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "C", "name": "mem", "pid": 9, "ts": 12, "args": {"used": 5, "free": 6}},
    {"ph": "s", "name": "f", "id": "0x10", "pid": 9, "tid": 4, "ts": 10}])J");
  EXPECT_EQ(trace.baseNs, 0);
  ASSERT_EQ(trace.events.size(), 5u);
  const TraceEvent& conv = trace.events[0];
  EXPECT_EQ(conv.device, "process 9");
  EXPECT_EQ(conv.lane, "worker");
  EXPECT_EQ(conv.startNs, 10000);
  EXPECT_EQ(conv.durationNs, 2500);
  EXPECT_EQ(conv.phase, Phase::Kernel);
  EXPECT_EQ(conv.args.at("stream"), "7");
  EXPECT_EQ(conv.args.at("grid"), "[1,1,1]");
  EXPECT_EQ(conv.microBatch, -1);
  EXPECT_EQ(trace.events[1].lane, "thread 5");
  EXPECT_EQ(trace.events[1].startNs, 11000);
  EXPECT_EQ(trace.events[1].phase, Phase::Other);
  EXPECT_EQ(trace.events[2].kind, EventKind::Counter);
  EXPECT_EQ(trace.events[2].name, "mem free");
  EXPECT_EQ(trace.events[2].value, 6.0);
  EXPECT_EQ(trace.events[3].name, "mem used");
  EXPECT_EQ(trace.events[4].kind, EventKind::FlowStart);
  EXPECT_EQ(trace.events[4].correlationId, 16);
}

TEST(ChromeTrace, RejectsMalformedInput) {
  EXPECT_THAT([] { readText("{\"traceEvents\": [}"); },
              ThrowsMessage<FormatError>(StartsWith("t.json: invalid JSON: parse error at line 1, column 18")));
  // A number past a double's range is the parser's refusal too (found by fuzz_trace_reader).
  EXPECT_THAT([] { readText("{\"traceEvents\": [{\"ts\": 12869e632}]}"); },
              ThrowsMessage<FormatError>(StartsWith("t.json: invalid JSON: number overflow parsing '12869e632'")));
  EXPECT_THAT([] { readText("{\"events\": []}"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $: missing required field 'traceEvents'")));
  EXPECT_THAT([] { readText("42"); },
              ThrowsMessage<FormatError>(
                  StrEq("t.json: $: expected a Chrome trace: an object with traceEvents or an array of events")));
  EXPECT_THAT([] { readText("{\"traceEvents\": {}}"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $.traceEvents: expected an array, got an object")));
  EXPECT_THAT([] { readText("[1]"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0]: expected an event object, got number")));
  EXPECT_THAT([] { readText(R"J([{"name": "x"}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0]: missing required field 'ph'")));
  EXPECT_THAT([] { readText(R"J([{"ph": "X", "ts": 1}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0]: missing required field 'dur'")));
  EXPECT_THAT([] { readText(R"J([{"ph": "X", "ts": "soon", "dur": 1}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0].ts: expected a number, got \"soon\"")));
  EXPECT_THAT([] { readText(R"J([{"ph": "X", "ts": 1, "dur": -1}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0].dur: expected a non-negative duration, got -1")));
  EXPECT_THAT([] { readText(R"J([{"ph": "X", "ts": 1, "dur": 1, "pid": "a"}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0].pid: expected an integer, got \"a\"")));
  EXPECT_THAT([] { readText(R"J([{"ph": "C", "name": "m", "ts": 1, "args": {"a": "x"}}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0].args: expected a numeric counter value")));
  EXPECT_THAT([] { readText(R"J({"traceEvents": [], "otherData": {"pipeprof_base_ns": 1.5}})J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $.otherData.pipeprof_base_ns: expected an integer, got 1.5")));
  EXPECT_THAT([] { readText(R"J([{"ph": "X", "ts": 1, "dur": 1, "args": [1]}])J"); },
              ThrowsMessage<FormatError>(StrEq("t.json: $[0].args: expected an object, got array")));
  EXPECT_THAT(
      [] { readChromeTraceFile("/nonexistent/trace.json"); },
      ThrowsMessage<FormatError>(StrEq("/nonexistent/trace.json: cannot open file: No such file or directory")));
}

}  // namespace
}  // namespace pipeprof
