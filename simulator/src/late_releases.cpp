// Frees another device sees late: splitting the releases and finding who waits for them.
#include "late_releases.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace pipeprof::sim {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();  ///< no position

/// Per op and lane (op * lanes + lane): the earliest position in that lane's order of an op that
/// waits for this one (a strict descendant through dependencies and lane orders), or kNone.
std::vector<std::uint32_t> firstWaitingPositions(const CompiledSchedule& compiled) {
  const std::size_t count = compiled.ops.size();
  const auto lanes = static_cast<std::size_t>(compiled.lanes);
  // Kahn's order over both kinds of edge, walked backwards.
  std::vector<std::uint32_t> indegree(count, 0);
  auto forEachSuccessor = [&](std::uint32_t op, auto&& visit) {
    const CompiledOp& c = compiled.ops[op];
    for (std::uint32_t s = c.successors.begin; s < c.successors.end; ++s) visit(compiled.successors[s]);
    const std::uint32_t next = c.isCompute() ? compiled.nextInLane(op) : kNoOp;
    if (next != kNoOp) visit(next);
  };
  for (std::uint32_t op = 0; op < count; ++op) forEachSuccessor(op, [&](std::uint32_t s) { ++indegree[s]; });
  std::vector<std::uint32_t> order;
  order.reserve(count);
  for (std::uint32_t op = 0; op < count; ++op) {
    if (indegree[op] == 0) order.push_back(op);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    forEachSuccessor(order[k], [&](std::uint32_t s) {
      if (--indegree[s] == 0) order.push_back(s);
    });
  }
  std::vector<std::uint32_t> first(count * lanes, kNone);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::uint32_t op = *it;
    std::uint32_t* mine = first.data() + op * lanes;
    forEachSuccessor(op, [&](std::uint32_t s) {
      const std::uint32_t* theirs = first.data() + s * lanes;
      for (std::size_t lane = 0; lane < lanes; ++lane) mine[lane] = std::min(mine[lane], theirs[lane]);
      const CompiledOp& c = compiled.ops[s];
      if (c.isCompute()) {
        std::uint32_t& own = mine[static_cast<std::size_t>(c.lane)];
        own = std::min(own, c.orderPosition);
      }
    });
  }
  return first;
}

}  // namespace

void splitLateReleases(CompiledSchedule& out) {
  std::vector<CompiledSchedule::OpLate> late(out.ops.size());
  bool any = false;
  for (std::size_t op = 0; op < out.ops.size(); ++op) {
    CompiledOp& c = out.ops[op];
    late[op].release = Range{c.endRelease.end, c.endRelease.end};
    if (!c.isCompute()) continue;
    auto begin = out.effects.begin() + c.endRelease.begin;
    auto end = out.effects.begin() + c.endRelease.end;
    const std::int32_t lane = c.lane;
    auto elsewhere = std::stable_partition(
        begin, end, [&](const MemoryEffect& e) { return out.stageLane[static_cast<std::size_t>(e.j)] == lane; });
    c.endRelease.end = static_cast<std::uint32_t>(elsewhere - out.effects.begin());
    late[op].release.begin = c.endRelease.end;
    any = any || late[op].release.begin != late[op].release.end;
  }
  for (const CompiledSchedule::Hold& hold : out.holds) any = any || endsLate(out, hold);
  if (!any) return;
  const std::vector<std::uint32_t> first = firstWaitingPositions(out);
  std::vector<std::vector<std::uint32_t>> seenBy(out.ops.size());
  // The first op of `effect`'s lane that waits for `op` sees late release `index`.
  auto seenByFirstWaiting = [&](std::size_t op, const MemoryEffect& effect, std::uint32_t index) {
    const auto lane = static_cast<std::size_t>(out.stageLane[static_cast<std::size_t>(effect.j)]);
    const std::uint32_t position = first[op * static_cast<std::size_t>(out.lanes) + lane];
    if (position == kNone) return;  // nothing of that lane waits: the skew alone ends it
    seenBy[out.orderOps[out.orderStart[lane] + position]].push_back(index);
  };
  for (std::size_t op = 0; op < out.ops.size(); ++op) {
    for (std::uint32_t e = late[op].release.begin; e < late[op].release.end; ++e) {
      seenByFirstWaiting(op, out.effects[e], e);
    }
  }
  const auto effects = static_cast<std::uint32_t>(out.effects.size());
  for (std::uint32_t h = 0; h < out.holds.size(); ++h) {
    const CompiledSchedule::Hold& hold = out.holds[h];
    if (endsLate(out, hold)) seenByFirstWaiting(hold.untilOp, hold.effect, effects + h);
  }
  for (std::size_t op = 0; op < out.ops.size(); ++op) {
    late[op].seen.begin = static_cast<std::uint32_t>(out.lateSeenEffects.size());
    out.lateSeenEffects.insert(out.lateSeenEffects.end(), seenBy[op].begin(), seenBy[op].end());
    late[op].seen.end = static_cast<std::uint32_t>(out.lateSeenEffects.size());
  }
  out.opLate = std::move(late);
}

}  // namespace pipeprof::sim
