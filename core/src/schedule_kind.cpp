// The schedule family's names: printing and parsing "gpipe", "1f1b", "interleaved".
#include <pipeprof/core/schedule_kind.h>

#include <algorithm>
#include <stdexcept>

namespace pipeprof {

std::string scheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
    case ScheduleKind::OneFOneB: return "1f1b";
    case ScheduleKind::Interleaved: return "interleaved";
  }
  return "unknown";
}

ScheduleKind parseScheduleKind(const std::string& text) {
  if (text == "gpipe") return ScheduleKind::GPipe;
  if (text == "1f1b") return ScheduleKind::OneFOneB;
  if (text == "interleaved") return ScheduleKind::Interleaved;
  throw std::invalid_argument("invalid schedule '" + text + "': expected gpipe, 1f1b or interleaved");
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
  if (kind == ScheduleKind::Interleaved) return "interleaved v" + std::to_string(stagesPerDevice);
  return scheduleKindName(kind);
}

}  // namespace pipeprof
