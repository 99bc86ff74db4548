// Host op spans as the runtime records them, for the collector and converter tests.
#pragma once

#include <pipeprof/core/trace.h>

#include <cstdint>
#include <string>

namespace pipeprof::test {

/// The span of op `name` of partition j (micro-batch 0) on `device`'s lane "partition j", with
/// correlation id `id`, from startNs to endNs on the host clock.
inline TraceEvent opSpan(const std::string& name, Phase phase, const std::string& device, std::int64_t j,
                         std::int64_t id, std::int64_t startNs, std::int64_t endNs) {
  TraceEvent span;
  span.name = name;
  span.device = device;
  span.lane = "partition " + std::to_string(j);
  span.phase = phase;
  span.microBatch = 0;
  span.partition = j;
  span.correlationId = id;
  span.startNs = startNs;
  span.durationNs = endNs - startNs;
  return span;
}

/// The same on cuda:0.
inline TraceEvent opSpan(const std::string& name, Phase phase, std::int64_t j, std::int64_t id, std::int64_t startNs,
                         std::int64_t endNs) {
  return opSpan(name, phase, "cuda:0", j, id, startNs, endNs);
}

}  // namespace pipeprof::test
