// The checkpoint mode: which micro-batches are recomputed in backward instead of kept.
#include <pipeprof/core/checkpoint.h>

#include <stdexcept>
#include <string>

namespace pipeprof {

std::string_view checkpointName(Checkpoint mode) {
  switch (mode) {
    case Checkpoint::Always: return "always";
    case Checkpoint::ExceptLast: return "except_last";
    case Checkpoint::Never: return "never";
  }
  return "unknown";
}

Checkpoint parseCheckpoint(std::string_view text) {
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    if (text == checkpointName(mode)) return mode;
  }
  throw std::invalid_argument("invalid checkpoint mode '" + std::string(text) +
                              "': expected one of always, except_last, never");
}

std::vector<Checkpoint> parseCheckpointList(std::string_view text) {
  std::vector<Checkpoint> modes;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    modes.push_back(parseCheckpoint(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return modes;
}

std::int64_t checkpointStop(Checkpoint mode, std::int64_t m, bool training) {
  if (!training) return 0;
  switch (mode) {
    case Checkpoint::Always: return m;
    case Checkpoint::ExceptLast: return m > 0 ? m - 1 : 0;
    case Checkpoint::Never: return 0;
  }
  return 0;
}

}  // namespace pipeprof
