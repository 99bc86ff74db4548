// The schedule family (gpipe, 1f1b, interleaved, zb1p, interleaved-zb) and its names as users type and read them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// The schedule family: gpipe (all forwards, then all backwards), 1f1b (one forward one
/// backward), interleaved (1F1B over v >= 2 virtual stages per device), and the zero-bubble
/// ones, which split each backward into I (the input's gradient) then W (the weights'):
/// zb1p (ZB-H1, 1F1B's order with W deferred into the cool-down) and interleaved-zb (the same
/// over v >= 2 virtual stages per device; torch's ScheduleInterleavedZeroBubble).
enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubble, InterleavedZeroBubble };

/// Every family, in the order users read them.
inline constexpr ScheduleKind kScheduleKinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                                  ScheduleKind::Interleaved, ScheduleKind::ZeroBubble,
                                                  ScheduleKind::InterleavedZeroBubble};

/// Whether the family runs v >= 2 virtual stages per device (interleaved, interleaved-zb); the
/// others run one.
bool hasVirtualStages(ScheduleKind kind);
/// Whether the family splits each backward into I then W (zb1p, interleaved-zb).
bool splitsBackward(ScheduleKind kind);

/// "gpipe", "1f1b", "interleaved", "zb1p", "interleaved-zb". parseScheduleKind throws
/// std::invalid_argument on unknown text; parseScheduleKindList parses a comma-separated list
/// such as "gpipe,1f1b".
std::string scheduleKindName(ScheduleKind kind);
ScheduleKind parseScheduleKind(const std::string& text);
std::vector<ScheduleKind> parseScheduleKindList(const std::string& text);

/// The schedule as users read it: "gpipe", "1f1b", "interleaved v2", "zb1p",
/// "interleaved-zb v2" (v named only for the families that have a choice).
std::string scheduleLabel(ScheduleKind kind, std::int64_t stagesPerDevice);

}  // namespace pipeprof
