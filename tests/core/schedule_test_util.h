// The schedule the core tests build: p * v one-layer stages, m micro-batches.
#pragma once

#include <pipeprof/core/schedule.h>

#include <cstdint>

namespace pipeprof::test {

inline Schedule uniformSchedule(ScheduleKind kind, std::int64_t p, std::int64_t m, std::int64_t v,
                                Checkpoint checkpoint = Checkpoint::Never, bool training = true) {
  ScheduleSpec spec;
  spec.schedule = kind;
  spec.stagesPerDevice = v;
  spec.balance.assign(static_cast<std::size_t>(p * v), 1);
  spec.chunks = m;
  spec.checkpoint = checkpoint;
  spec.training = training;
  return Schedule::build(spec);
}

}  // namespace pipeprof::test
