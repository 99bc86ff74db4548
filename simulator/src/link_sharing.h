// Processor sharing of link bandwidth: the transfers draining on one link at once share it equally.
#pragma once

#include <pipeprof/core/units.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// The drain phase of transfers on shared links (docs/simulator.md, "Links"). A transfer's work
/// is its drain time alone on its link, ceil(bytes / bandwidth * 1e9) ns (Link::transferNs less
/// the latency). While k transfers drain on one link, each does 1/k ns of its work per ns; when
/// one enters or finishes, the others' remaining work is re-rated. A finish time is rounded up to
/// a whole ns (the others drain at the shared rate until then), so a transfer alone on its link
/// finishes exactly its work after it entered. Two transfers of work 1000 ns, the second
/// entering at 500:
///
///        0           500                   1500                  2000
///   A    |== alone ===|======= shared =======|                          A ends at 500 + 2 * 500
///   B                 |======= shared =======|======= alone ======|     B ends at 1500 + 500
///
/// Deterministic: transfers finishing at one time are reported in the order they entered.
class LinkSharing {
 public:
  /// Starts a run with `links` idle links; keeps the storage of earlier runs.
  void reset(std::size_t links);
  /// op starts draining workNs (> 0) on link at timeNs. timeNs must not be before the link's
  /// last change, and the transfers due by timeNs must have been taken out (finishDue) first.
  void enter(std::int32_t link, std::uint32_t op, TimeNs workNs, TimeNs timeNs);
  /// The time (whole ns) at which the next transfer on link finishes; -1 when none drains.
  TimeNs nextFinishNs(std::int32_t link) const;
  /// Advances link to timeNs (not before its last change) and appends the ops of the transfers
  /// done by then to `done`, in the order they entered; the others keep draining.
  void finishDue(std::int32_t link, TimeNs timeNs, std::vector<std::uint32_t>& done);
  /// How many transfers drain on link now.
  std::size_t drainingCount(std::int32_t link) const {
    return links_[static_cast<std::size_t>(link)].transfers.size();
  }

 private:
  struct Transfer {
    std::uint32_t op = 0;
    double remainingNs = 0.0;  ///< work left, in ns at the link's full rate
  };
  struct Drains {
    std::vector<Transfer> transfers;  ///< in the order they entered
    TimeNs updatedNs = 0;             ///< the time remainingNs refers to
  };

  std::vector<Drains> links_;
};

}  // namespace pipeprof::sim
