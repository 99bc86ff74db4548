// Processor sharing of link bandwidth: the transfers draining on one link at once share it equally.
#include "link_sharing.h"

#include <cmath>

namespace pipeprof::sim {
namespace {

/// Work below this is done: remaining work is a double re-rated by 1/k, and a transfer must not
/// take an extra nanosecond for the rounding error of the subtractions.
constexpr double kToleranceNs = 1e-6;

/// When a transfer with remainingNs of work left at updatedNs finishes while k transfers drain:
/// updatedNs + (remaining * k), rounded up to a whole ns. A whole remainder with k = 1 gives
/// exactly updatedNs + remaining.
TimeNs finishAt(TimeNs updatedNs, double remainingNs, std::size_t k) {
  if (remainingNs <= kToleranceNs) return updatedNs;
  return updatedNs + static_cast<TimeNs>(std::ceil((remainingNs - kToleranceNs) * static_cast<double>(k)));
}

}  // namespace

void LinkSharing::reset(std::size_t links) {
  if (links_.size() < links) links_.resize(links);
  for (Drains& link : links_) {
    link.transfers.clear();
    link.updatedNs = 0;
  }
}

void LinkSharing::enter(std::int32_t link, std::uint32_t op, TimeNs workNs, TimeNs timeNs) {
  Drains& drains = links_[static_cast<std::size_t>(link)];
  if (!drains.transfers.empty()) {
    const double drained = static_cast<double>(timeNs - drains.updatedNs) / static_cast<double>(drains.transfers.size());
    for (Transfer& transfer : drains.transfers) transfer.remainingNs -= drained;
  }
  drains.updatedNs = timeNs;
  drains.transfers.push_back(Transfer{op, static_cast<double>(workNs)});
}

TimeNs LinkSharing::nextFinishNs(std::int32_t link) const {
  const Drains& drains = links_[static_cast<std::size_t>(link)];
  if (drains.transfers.empty()) return -1;
  double least = drains.transfers.front().remainingNs;
  for (const Transfer& transfer : drains.transfers) least = transfer.remainingNs < least ? transfer.remainingNs : least;
  return finishAt(drains.updatedNs, least, drains.transfers.size());
}

void LinkSharing::finishDue(std::int32_t link, TimeNs timeNs, std::vector<std::uint32_t>& done) {
  Drains& drains = links_[static_cast<std::size_t>(link)];
  const std::size_t k = drains.transfers.size();
  if (k == 0) {
    drains.updatedNs = timeNs;
    return;
  }
  // Due is decided as nextFinishNs decides it, so the transfer it announced finishes now.
  const double drained = static_cast<double>(timeNs - drains.updatedNs) / static_cast<double>(k);
  std::size_t kept = 0;
  for (std::size_t t = 0; t < k; ++t) {
    Transfer transfer = drains.transfers[t];
    if (finishAt(drains.updatedNs, transfer.remainingNs, k) <= timeNs) {
      done.push_back(transfer.op);
      continue;
    }
    transfer.remainingNs -= drained;
    drains.transfers[kept++] = transfer;
  }
  drains.transfers.resize(kept);
  drains.updatedNs = timeNs;
}

}  // namespace pipeprof::sim
