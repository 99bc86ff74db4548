// torch.distributed.pipelining's schedule CSV: actions parsed and printed, rows read and written.
#include <pipeprof/core/schedule_csv.h>

#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace pipeprof {
namespace {

/// The action types and their letters, the one table both directions read.
constexpr std::pair<char, OpKind> kActionTypes[] = {
    {'F', OpKind::Forward}, {'B', OpKind::Backward}, {'I', OpKind::BackwardInput}, {'W', OpKind::BackwardWeight}};

char typeLetter(OpKind kind) {
  for (const auto& [letter, type] : kActionTypes) {
    if (type == kind) return letter;
  }
  throw std::invalid_argument("a schedule action is F, B, I or W, not " + opKindName(kind));
}

std::string trimmed(const std::string& text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) --end;
  return text.substr(begin, end - begin);
}

/// The digits of `text` from `at`, as a number; `at` moves past them. -1 when there are none.
std::int64_t digitsAt(const std::string& text, std::size_t& at) {
  const std::size_t begin = at;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) ++at;
  if (at == begin || at - begin > 9) return -1;
  return std::stoll(text.substr(begin, at - begin));
}

}  // namespace

std::string actionText(const ScheduleAction& action) {
  return std::to_string(action.stage) + typeLetter(action.kind) + std::to_string(action.microBatch);
}

ScheduleAction parseAction(const std::string& text) {
  const std::string cell = trimmed(text);
  const auto fail = [&] {
    return std::invalid_argument("invalid action '" + cell +
                                 "': expected <stage><F|B|I|W><micro-batch>, e.g. 3I0 (stage 3's input "
                                 "backward of micro-batch 0)");
  };
  std::size_t at = 0;
  ScheduleAction action;
  action.stage = digitsAt(cell, at);
  if (action.stage < 0 || at >= cell.size()) throw fail();
  const char letter = cell[at++];
  const auto* type = std::find_if(std::begin(kActionTypes), std::end(kActionTypes),
                                  [letter](const auto& entry) { return entry.first == letter; });
  if (type == std::end(kActionTypes)) throw fail();
  action.kind = type->second;
  action.microBatch = digitsAt(cell, at);
  if (action.microBatch < 0 || at != cell.size()) throw fail();
  return action;
}

RankActions readScheduleCsv(const std::string& text, const std::string& file) {
  RankActions ranks;
  std::size_t lineStart = 0;
  bool any = false;
  while (lineStart < text.size()) {
    std::size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos) lineEnd = text.size();
    const std::string line = text.substr(lineStart, lineEnd - lineStart);  // a CRLF's \r is trimmed off its cell
    lineStart = lineEnd + 1;
    const std::string rank = std::to_string(ranks.size());
    std::vector<ScheduleAction>& actions = ranks.emplace_back();
    std::size_t cellStart = 0;
    for (std::size_t column = 0; cellStart <= line.size(); ++column) {
      std::size_t cellEnd = line.find(',', cellStart);
      if (cellEnd == std::string::npos) cellEnd = line.size();
      const std::string cell = trimmed(line.substr(cellStart, cellEnd - cellStart));
      cellStart = cellEnd + 1;
      if (cell.empty()) continue;
      try {
        actions.push_back(parseAction(cell));
      } catch (const std::invalid_argument& error) {
        throw FormatError(file, "$.rank[" + rank + "][" + std::to_string(column) + "]", error.what());
      }
      any = true;
    }
  }
  while (!ranks.empty() && ranks.back().empty()) ranks.pop_back();  // trailing blank lines
  if (!any) throw FormatError(file, "$", "expected one row of actions per rank, e.g. 0F0,0F1,0B0,0B1; found none");
  return ranks;
}

std::string writeScheduleCsv(const RankActions& ranks) {
  std::string text;
  for (const auto& actions : ranks) {
    for (std::size_t k = 0; k < actions.size(); ++k) text += (k > 0 ? "," : "") + actionText(actions[k]);
    text += '\n';
  }
  return text;
}

RankActions scheduleActions(const Schedule& schedule) {
  RankActions ranks(static_cast<std::size_t>(schedule.devices()));
  for (std::int64_t d = 0; d < schedule.devices(); ++d) {
    for (OpIndex index : schedule.deviceOrder(d)) {
      const Op& op = schedule.op(index);
      if (op.kind == OpKind::Recompute || op.kind == OpKind::Loss) continue;
      ranks[static_cast<std::size_t>(d)].push_back({op.j, op.kind, op.i});
    }
  }
  return ranks;
}

}  // namespace pipeprof
