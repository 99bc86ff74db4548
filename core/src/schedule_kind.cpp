// The schedule family's names (printing and parsing "gpipe", "1f1b", "interleaved", "zb1p", "interleaved-zb",
// "zbv"), its stages per device and its placement.
#include <pipeprof/core/schedule_kind.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace pipeprof {

std::string scheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
    case ScheduleKind::OneFOneB: return "1f1b";
    case ScheduleKind::Interleaved: return "interleaved";
    case ScheduleKind::ZeroBubble: return "zb1p";
    case ScheduleKind::InterleavedZeroBubble: return "interleaved-zb";
    case ScheduleKind::ZeroBubbleV: return "zbv";
    case ScheduleKind::Custom: return "custom";
  }
  return "unknown";
}

bool hasVirtualStages(ScheduleKind kind) { return fixedStagesPerDevice(kind) != 1; }

bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubble || kind == ScheduleKind::InterleavedZeroBubble ||
         kind == ScheduleKind::ZeroBubbleV;
}

std::int64_t fixedStagesPerDevice(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Interleaved:
    case ScheduleKind::InterleavedZeroBubble:
    case ScheduleKind::Custom: return 0;
    case ScheduleKind::ZeroBubbleV: return 2;
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubble: return 1;
  }
  return 1;
}

bool choosesStagesPerDevice(ScheduleKind kind) {
  return fixedStagesPerDevice(kind) == 0 && kind != ScheduleKind::Custom;
}

bool runsStagesPerDevice(ScheduleKind kind, std::int64_t stagesPerDevice) {
  if (kind == ScheduleKind::Custom) return stagesPerDevice >= 1;
  const std::int64_t fixed = fixedStagesPerDevice(kind);
  return fixed == 0 ? stagesPerDevice >= 2 : stagesPerDevice == fixed;
}

std::vector<std::int64_t> stagesPerDeviceChoices(ScheduleKind kind, const std::vector<std::int64_t>& asked) {
  if (fixedStagesPerDevice(kind) != 0) return {fixedStagesPerDevice(kind)};
  std::vector<std::int64_t> choices;
  for (const std::int64_t v : asked) {
    if (runsStagesPerDevice(kind, v)) choices.push_back(v);
  }
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  return choices;
}

StagePlacement stagePlacement(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubbleV ? StagePlacement::V : StagePlacement::Loop;
}

std::int64_t placedDevice(StagePlacement placement, std::int64_t j, std::int64_t p) {
  if (p < 1) throw std::invalid_argument("placing a stage needs at least one device, got " + std::to_string(p));
  const std::int64_t d = j % p;
  return placement == StagePlacement::V && (j / p) % 2 == 1 ? p - 1 - d : d;
}

std::string scheduleKindList(const std::vector<ScheduleKind>& kinds, const std::string& conjunction) {
  std::string text;
  for (std::size_t index = 0; index < kinds.size(); ++index) {
    if (index > 0) text += index + 1 == kinds.size() ? " " + conjunction + " " : ", ";
    text += scheduleKindName(kinds[index]);
  }
  return text;
}

std::string scheduleKindChoices() {
  return scheduleKindList({std::begin(kScheduleKinds), std::end(kScheduleKinds)}, "or");
}

ScheduleKind parseScheduleKind(const std::string& text) {
  for (ScheduleKind kind : kScheduleKinds) {
    if (text == scheduleKindName(kind)) return kind;
  }
  throw std::invalid_argument("invalid schedule '" + text + "': expected " + scheduleKindChoices());
}

ScheduleKind parseScheduleKindOrCustom(const std::string& text) {
  return text == scheduleKindName(ScheduleKind::Custom) ? ScheduleKind::Custom : parseScheduleKind(text);
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
  if (choosesStagesPerDevice(kind)) {
    return scheduleKindName(kind) + " v" + std::to_string(stagesPerDevice);
  }
  return scheduleKindName(kind);
}

}  // namespace pipeprof
