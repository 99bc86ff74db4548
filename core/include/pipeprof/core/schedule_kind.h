// The schedule family (gpipe, 1f1b, interleaved) and its names as users type and read them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// The schedule family: gpipe (all forwards, then all backwards), 1f1b (one forward one
/// backward), interleaved (1F1B over v >= 2 virtual stages per device).
enum class ScheduleKind { GPipe, OneFOneB, Interleaved };

/// "gpipe", "1f1b", "interleaved". parseScheduleKind throws std::invalid_argument on unknown
/// text; parseScheduleKindList parses a comma-separated list such as "gpipe,1f1b".
std::string scheduleKindName(ScheduleKind kind);
ScheduleKind parseScheduleKind(const std::string& text);
std::vector<ScheduleKind> parseScheduleKindList(const std::string& text);

/// The schedule as users read it: "gpipe", "1f1b", "interleaved v2" (v named only for
/// interleaved, the one family that has a choice).
std::string scheduleLabel(ScheduleKind kind, std::int64_t stagesPerDevice);

}  // namespace pipeprof
