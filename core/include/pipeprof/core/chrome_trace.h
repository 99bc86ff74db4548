// Chrome trace event format: writer and reader (Perfetto and chrome://tracing open the output).
//
// Output is the object form {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
// Timestamps are microseconds with 3 decimals relative to Trace::baseNs (so nanoseconds round-
// trip exactly). Devices become processes and lanes threads, named by "M" metadata events;
// spans are "X", counters "C", flows "s"/"f". pipeprof's own fields (i, j, phase, correlation,
// bytes) travel in each event's "args" so a trace read back equals the trace written.
#pragma once

#include <pipeprof/core/trace.h>

#include <iosfwd>
#include <string>

namespace pipeprof {

void writeChromeTrace(const Trace& trace, std::ostream& out);
/// Writes atomically (temporary file, then rename). Throws std::runtime_error on I/O failure.
void writeChromeTraceFile(const Trace& trace, const std::string& path);

/// Reads a Chrome trace written by pipeprof or by another tool (events without pipeprof args
/// get defaults). Throws FormatError naming the source, the JSON path and what was expected.
Trace readChromeTrace(std::istream& in, const std::string& sourceName);
Trace readChromeTraceFile(const std::string& path);

}  // namespace pipeprof
