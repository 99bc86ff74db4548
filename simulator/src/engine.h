// The discrete-event engine: runs a compiled schedule against resolved costs on devices and links.
#pragma once

#include "compiled_schedule.h"
#include "cost_model.h"
#include "event_queue.h"
#include "late_releases.h"
#include "link_sharing.h"
#include "memory_timeline.h"

#include <pipeprof/core/units.h>

#include <cstdint>
#include <vector>

namespace pipeprof::sim {

/// Resources: one compute resource per cluster device and one copy resource per link
/// direction. Each pipeline device d is a lane: its worker runs deviceOrder(d) (the compute ops
/// of all its virtual stages, losses included) on cluster device deviceOf(d); lanes placed on
/// one cluster device contend for it. A compute op starts when its dependencies are done, it
/// is next in its lane's order and its device is free; among ready ops of one device the one
/// ready first wins, then the lower lane, then the lower op index. All events at one time are
/// processed before any op starts at that time. Without launch data, a lane's worker that slept
/// waiting for another lane's op starts its next op costs.wakeLatencyNs after that op made it
/// ready (docs/simulator.md, "Waking a worker").
///
/// Links (docs/simulator.md, "Links"). Without hosts (costs.sharedLinks() false) a link is the
/// (from device, to device) pair and its copies run one at a time, FIFO by ready time, then op
/// index. With hosts a link is the device pair within a host and the (from host, to host) pair
/// between hosts; a copy starts when it is ready, pays its latency, then drains on its link
/// at a share of the bandwidth (LinkSharing).
///
/// Launches (costs.launches(): the profile carries launch data; docs/simulator.md, "Launches").
/// Compute ops no longer hold their cluster device: a forward, recompute or loss is launched by
/// its lane's worker thread, a backward by the autograd thread of its cluster device (one per
/// device, shared by every lane on it; among its ready backwards the one ready first wins, then
/// the lower lane), each for the op's host launch time, and its kernels run on its stage's
/// stream as launchTimes() says. A lane's next op may start once the host has launched the
/// previous one (the schedule's device-order dependency is met then); everything else that
/// waits for an op (its other successors, copies, memory effects at its end) waits for its
/// last kernel. busyNs is then the device time.
///
/// Memory (docs/simulator.md, "Memory model"): each op's effects at its start and end, except
/// that a release of a tensor another lane counts is seen late by that lane, by kFreeSkew
/// of the time since the two lanes last waited for each other, or at the start of that lane's
/// first op that waits for the releasing one (late_releases.h); with LateFrees::kAtTheLatest
/// only at the latter, else at the step's end. The times do not depend on it.
///
/// An Engine keeps its buffers between runs, so a search reuses one per thread.
class Engine {
 public:
  /// Simulates one step. Throws std::logic_error if the schedule cannot finish (a cycle).
  void run(const CompiledSchedule& compiled, const ResolvedCosts& costs, std::int32_t deviceCount,
           bool recordMemorySamples, LateFrees lateFrees = LateFrees::kSkewed);

  TimeNs iterationNs() const { return iterationNs_; }
  std::int64_t eventCount() const { return eventCount_; }
  /// Per lane (pipeline device): the sum of its compute ops' durations.
  const std::vector<TimeNs>& busyNs() const { return busyNs_; }
  TimeNs startNs(std::size_t op) const { return startNs_[op]; }
  TimeNs endNs(std::size_t op) const { return endNs_[op]; }
  /// Launches only: when the host launched op's last kernel, and when its first kernel started.
  TimeNs launchedNs(std::size_t op) const { return launchedNs_[op]; }
  TimeNs firstKernelNs(std::size_t op) const { return firstKernelNs_[op]; }
  /// The op's device (cluster device index), or with launches a compute op's host thread (lane
  /// d's worker: d; cluster device c's autograd thread: lanes + c), or deviceCount + link
  /// index for copies.
  std::int32_t resourceOf(std::size_t op) const { return resource_[op]; }
  const MemoryTimeline& memory() const { return memory_; }

 private:
  struct Queued {
    TimeNs readyNs;
    std::uint32_t op;
  };
  struct LateDue {  ///< a late release not yet applied: effect's index, when it is due
    TimeNs dueNs;
    std::uint32_t effect;
    /// The heap's order: the earliest due (then the lowest index) on top.
    static bool later(const LateDue& a, const LateDue& b) {
      return a.dueNs != b.dueNs ? a.dueNs > b.dueNs : a.effect > b.effect;
    }
  };
  struct LinkQueue {
    std::vector<Queued> items;
    std::size_t head = 0;
  };

  /// run()'s steps. Sizes and clears the per-op, per-lane and per-compute-resource buffers.
  void resetOps(bool recordMemorySamples);
  /// Clears the links (the device pairs, then `hosts` squared host pairs) and the touched lists.
  void resetLinks(std::int32_t hosts);
  /// Each lane's cluster device, and the lanes of each device.
  void placeLanes();
  /// Each op's dependency count and resource (see resourceOf); each lane's busy time.
  void assignResources(std::int32_t hosts);
  /// The event loop; returns the time of the last event.
  template <bool Launches>
  TimeNs runEvents(std::size_t& finished);
  void makeReady(std::uint32_t op, TimeNs timeNs);
  /// Whether compute op `op`, made ready at timeNs by an op of causeLane_, waits for its
  /// worker to wake (costs.wakeLatencyNs, docs/simulator.md "Waking a worker"): another lane's
  /// op made it ready and its lane's previous op (endNs) ended earlier, so the worker slept.
  bool wakesWorker(std::uint32_t op, TimeNs timeNs) const;
  /// Op, next in its lane and ready, may take its device from timeNs.
  void makeEligible(std::uint32_t op, TimeNs timeNs);
  /// The worker of op's lane is awake: op becomes eligible for its device.
  void wake(std::uint32_t op, TimeNs timeNs);
  /// A copy, or without launches a compute op, completes.
  void finish(std::uint32_t op, TimeNs timeNs);
  void dispatchDevice(std::int32_t device, TimeNs timeNs);
  /// Launches: starts the next op of a free host thread (a lane's worker or a device's autograd thread).
  void dispatchHost(std::int32_t host, TimeNs timeNs);
  /// Launches: the host starts launching compute op (its kernels follow on its stage's stream).
  /// The compute ops' start, as start() is the copies' and, without launches, everything's.
  void startLaunch(std::uint32_t op, TimeNs timeNs);
  /// Launches: the host has launched op's last kernel.
  void launched(std::uint32_t op, TimeNs timeNs);
  /// Launches: op's last kernel ended; releases its successors but the lane's next op.
  void kernelsDone(std::uint32_t op, TimeNs timeNs);
  /// Whether op frees tensors of another lane (CompiledSchedule::opLate).
  bool releasesLate(std::uint32_t op) const {
    return !compiled_->opLate.empty() && compiled_->opLate[op].release.begin != compiled_->opLate[op].release.end;
  }
  /// Whether op is the first of its lane to wait for such a free.
  bool seesLate(std::uint32_t op) const {
    return !compiled_->opLate.empty() && compiled_->opLate[op].seen.begin != compiled_->opLate[op].seen.end;
  }
  /// Op's releases of other lanes' tensors (late_releases.h): due at timeNs + kFreeSkew *
  /// (timeNs - when the two lanes last waited for each other), unless a waiting op of their lane
  /// starts first (seeLate).
  void endLate(std::uint32_t op, TimeNs timeNs);
  /// Late release `index` (lateDone_'s) of `effect`, which op ends at timeNs: now where the two
  /// lanes just waited for each other, else pending until its due time (kAtTheLatest: until its
  /// lane sees it, or the step ends).
  void releaseLateFrom(std::uint32_t op, const MemoryEffect& effect, std::uint32_t index, TimeNs timeNs);
  /// Applies the late releases due by nowNs, each at its due time (at most endNs).
  void releaseDue(TimeNs nowNs, TimeNs endNs);
  /// A compute op became ready when an op of causeLane ended (its lane was waiting for it): the
  /// two lanes' timelines meet at timeNs (syncNs_).
  void noteWait(const CompiledOp& waiting, std::int32_t causeLane, TimeNs timeNs);
  /// Releases late release `effect` (an effect's index, or effects.size() + a hold's) where it
  /// is still pending.
  void releaseLate(std::uint32_t effect, TimeNs timeNs);
  /// At op's start: the late releases it is the first of its lane to wait for.
  void seeLate(std::uint32_t op, TimeNs timeNs);
  /// Starts the holds op begins where their other holder has not ended (kAtTheLatest: or, on
  /// another lane, has not been waited for), and ends those op ends.
  void applyHolds(std::uint32_t op, TimeNs timeNs);
  /// Launches: frees op's host thread and makes the next op of its lane ready when it can be.
  void advanceLane(std::uint32_t op, TimeNs timeNs);
  void dispatchLink(std::int32_t link, TimeNs timeNs);
  void start(std::uint32_t op, TimeNs timeNs);
  void touchDevice(std::int32_t device);
  void touchLink(std::int32_t link);
  /// Shared links: handles a drain or link-check event; returns how many ops finished.
  std::size_t linkEvent(const Event& event, TimeNs timeNs);
  /// Shared links: finishes the transfers on link done by timeNs; returns how many.
  std::size_t finishDrained(std::int32_t link, TimeNs timeNs);
  /// Shared links: schedules the check of link's next finish (older checks become stale).
  void scheduleCheck(std::int32_t link);

  const CompiledSchedule* compiled_ = nullptr;
  const ResolvedCosts* costs_ = nullptr;
  std::int32_t deviceCount_ = 0;
  LateFrees lateFrees_ = LateFrees::kSkewed;

  EventQueue events_;
  MemoryTimeline memory_;
  std::vector<std::uint32_t> remaining_;
  std::vector<TimeNs> startNs_;
  std::vector<TimeNs> endNs_;
  std::vector<char> held_;                     ///< per CompiledSchedule::holds: started and not yet ended
  std::vector<char> lateDone_;                 ///< per effect, then per hold (with late releases): not pending
  std::vector<char> lateSeen_;                 ///< the same: its lane started the op that waits for it
  std::vector<LateDue> lateDue_;               ///< late releases not yet applied, a min-heap
  std::vector<TimeNs> syncNs_;                 ///< lanes x lanes: when the two last waited for each other
  std::int32_t causeLane_ = -1;                ///< the lane whose op's end is making ops ready, or -1
  std::vector<std::int32_t> resource_;         ///< see resourceOf
  std::int32_t linkCount_ = 0;                 ///< D * D device pairs, then (shared links) H * H host pairs
  std::vector<std::uint32_t> nextPosition_;    ///< per lane
  std::vector<std::int64_t> eligibleOp_;       ///< per lane, -1 when none
  std::vector<TimeNs> eligibleSinceNs_;        ///< per lane
  std::vector<std::int64_t> wakingOp_;         ///< per lane: the op its worker wakes up for, or -1
  std::vector<std::int32_t> laneDevice_;       ///< per lane: its cluster device
  std::vector<std::int32_t> deviceLaneStart_;  ///< deviceCount + 1 offsets
  std::vector<std::int32_t> deviceLanes_;
  std::vector<char> deviceBusy_;  ///< per compute resource: cluster device, or with launches host thread
  std::vector<LinkQueue> links_;
  std::vector<char> linkBusy_;
  std::vector<char> deviceTouched_;
  std::vector<char> linkTouched_;
  std::vector<std::int32_t> touchedDevices_;
  std::vector<std::int32_t> touchedLinks_;
  std::vector<TimeNs> busyNs_;
  bool sharedLinks_ = false;
  LinkSharing sharing_;
  std::vector<std::uint32_t> checkGeneration_;  ///< per link: the generation of its live check
  std::vector<std::uint32_t> drained_;          ///< scratch: ops LinkSharing reports done
  bool launches_ = false;
  std::vector<TimeNs> streamFreeNs_;   ///< launches: per stage, when its stream's last kernel ends
  std::vector<TimeNs> launchedNs_;     ///< launches: per op
  std::vector<TimeNs> firstKernelNs_;  ///< launches: per op
  TimeNs iterationNs_ = 0;
  std::int64_t eventCount_ = 0;
};

}  // namespace pipeprof::sim
