// The schedule family's names: printing and parsing "gpipe", "1f1b", "interleaved", "zb1p", "interleaved-zb".
#include <pipeprof/core/schedule_kind.h>

#include <algorithm>
#include <stdexcept>

namespace pipeprof {

std::string scheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
    case ScheduleKind::OneFOneB: return "1f1b";
    case ScheduleKind::Interleaved: return "interleaved";
    case ScheduleKind::ZeroBubble: return "zb1p";
    case ScheduleKind::InterleavedZeroBubble: return "interleaved-zb";
  }
  return "unknown";
}

bool hasVirtualStages(ScheduleKind kind) {
  return kind == ScheduleKind::Interleaved || kind == ScheduleKind::InterleavedZeroBubble;
}

bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubble || kind == ScheduleKind::InterleavedZeroBubble;
}

ScheduleKind parseScheduleKind(const std::string& text) {
  for (ScheduleKind kind : kScheduleKinds) {
    if (text == scheduleKindName(kind)) return kind;
  }
  throw std::invalid_argument("invalid schedule '" + text +
                              "': expected gpipe, 1f1b, interleaved, zb1p or interleaved-zb");
}

std::vector<ScheduleKind> parseScheduleKindList(const std::string& text) {
  std::vector<ScheduleKind> kinds;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const ScheduleKind kind = parseScheduleKind(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    if (comma == std::string::npos) return kinds;
    start = comma + 1;
  }
}

std::string scheduleLabel(ScheduleKind kind, std::int64_t stagesPerDevice) {
  if (hasVirtualStages(kind)) return scheduleKindName(kind) + " v" + std::to_string(stagesPerDevice);
  return scheduleKindName(kind);
}

}  // namespace pipeprof
