// Which predicted candidates a sweep measures: `--measure top:N|all|none` and its spread rule.
#include <pipeprof/tuner/candidate_selection.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <stdexcept>

namespace pipeprof::tuner {

MeasurePolicy parseMeasurePolicy(const std::string& text) {
  const std::string help = "expected top:N (N >= 1), all or none";
  if (text == "all") return {MeasureKind::All, 0};
  if (text == "none") return {MeasureKind::None, 0};
  const std::string prefix = "top:";
  if (text.rfind(prefix, 0) == 0) {
    const std::string number = text.substr(prefix.size());
    const bool digits = !number.empty() && number.size() <= 9 &&
                        std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) {
      const std::int64_t count = std::stoll(number);
      if (count >= 1) return {MeasureKind::Top, count};
    }
  }
  throw std::invalid_argument("--measure '" + text + "': " + help);
}

std::vector<std::size_t> selectForMeasurement(const std::vector<Candidate>& ranked,
                                              const MeasurePolicy& policy) {
  std::vector<std::size_t> picked;
  if (policy.kind == MeasureKind::None) return picked;
  const std::size_t total = ranked.size();
  if (policy.kind == MeasureKind::All) {
    for (std::size_t index = 0; index < total; ++index) picked.push_back(index);
    return picked;
  }
  const std::size_t wanted = std::min(total, static_cast<std::size_t>(policy.count));
  const std::size_t byRank = (wanted + 2) / 3;

  std::map<std::vector<std::int64_t>, std::int64_t> balanceCount;
  std::map<std::int64_t, std::int64_t> chunksCount;
  std::map<Checkpoint, std::int64_t> modeCount;
  std::map<std::pair<ScheduleKind, std::int64_t>, std::int64_t> scheduleCount;  // (schedule, v)
  auto scheduleOf = [&](std::size_t index) {
    return std::make_pair(ranked[index].schedule, ranked[index].stagesPerDevice);
  };
  std::vector<bool> taken(total, false);
  auto take = [&](std::size_t index) {
    taken[index] = true;
    picked.push_back(index);
    ++balanceCount[ranked[index].balance];
    ++chunksCount[ranked[index].chunks];
    ++modeCount[ranked[index].checkpoint];
    ++scheduleCount[scheduleOf(index)];
  };
  for (std::size_t index = 0; index < byRank; ++index) take(index);
  while (picked.size() < wanted) {
    std::size_t best = total;
    std::int64_t bestScore = std::numeric_limits<std::int64_t>::max();
    for (std::size_t index = 0; index < total; ++index) {
      if (taken[index]) continue;
      const Candidate& candidate = ranked[index];
      const std::int64_t score = balanceCount[candidate.balance] + chunksCount[candidate.chunks] +
                                 modeCount[candidate.checkpoint] + scheduleCount[scheduleOf(index)];
      if (score < bestScore) {  // strict: ties keep the better predicted (lower index)
        bestScore = score;
        best = index;
      }
    }
    take(best);
  }
  return picked;
}

}  // namespace pipeprof::tuner
