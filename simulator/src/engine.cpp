// The discrete-event engine: runs a compiled schedule against resolved costs on devices and links.
#include "engine.h"

#include "late_releases.h"
#include "launch_model.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace pipeprof::sim {
namespace {

// Event tags. Without shared links and launches every event is an op's completion.
constexpr std::uint32_t kFinishTag = 0;    ///< op completes
constexpr std::uint32_t kDrainTag = 1;     ///< op has paid its latency and starts draining on its link
constexpr std::uint32_t kLaunchedTag = 2;  ///< launches: the host has launched op's last kernel
constexpr std::uint32_t kWakeTag = 3;      ///< op's lane's worker, woken by another lane's op, can take it
constexpr std::uint32_t kCheckTag = 4;     ///< kCheckTag + generation: link `op`'s next transfer is due
constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

}  // namespace

void Engine::run(const CompiledSchedule& compiled, const ResolvedCosts& costs, std::int32_t deviceCount,
                 bool recordMemorySamples, LateFrees lateFrees) {
  compiled_ = &compiled;
  costs_ = &costs;
  deviceCount_ = deviceCount;
  lateFrees_ = lateFrees;
  const std::size_t count = compiled.ops.size();
  resetOps(recordMemorySamples);
  // Links: the device pairs, then (shared links) the host pairs.
  sharedLinks_ = costs.sharedLinks();
  const std::int32_t hosts = sharedLinks_ ? costs.hostCount() : 0;
  resetLinks(hosts);
  placeLanes();
  assignResources(hosts);
  for (std::size_t op = 0; op < count; ++op) {
    if (remaining_[op] == 0) makeReady(static_cast<std::uint32_t>(op), 0);
  }

  std::size_t finished = 0;
  // The loop is compiled once per model, so the one without launches pays nothing for them.
  const TimeNs now = launches_ ? runEvents<true>(finished) : runEvents<false>(finished);
  if (finished != count) {
    throw std::logic_error("simulation stalled: " + std::to_string(count - finished) + " of " + std::to_string(count) +
                           " ops never became ready (cyclic dependencies?)");
  }
  // A stale link check may outlive the last op; the step ends with the last op.
  iterationNs_ = sharedLinks_ ? (count > 0 ? *std::max_element(endNs_.begin(), endNs_.end()) : 0) : now;
}

void Engine::resetOps(bool recordMemorySamples) {
  const CompiledSchedule& compiled = *compiled_;
  const ResolvedCosts& costs = *costs_;
  const std::size_t count = compiled.ops.size();
  const auto lanes = static_cast<std::size_t>(compiled.lanes);
  const auto devices = static_cast<std::size_t>(deviceCount_);
  events_.clear();
  memory_.reset(compiled.stageLane, compiled.lanes, costs.stageDevice, costs.staticBytes, deviceCount_,
                recordMemorySamples);
  remaining_.resize(count);
  startNs_.assign(count, -1);
  endNs_.assign(count, -1);
  held_.assign(compiled_->holds.size(), 0);
  lateDue_.clear();
  causeLane_ = -1;
  if (!compiled.opLate.empty()) {
    lateDone_.assign(compiled.effects.size(), 0);
    lateDone_.resize(compiled.effects.size() + compiled.holds.size(), 1);  // a hold: when it ends late
    lateSeen_.assign(lateDone_.size(), 0);
    syncNs_.assign(lanes * lanes, 0);
  } else {
    lateDone_.clear();  // empty: no late release (seeLate is not called)
    lateSeen_.clear();
    syncNs_.clear();
  }
  resource_.resize(count);
  nextPosition_.assign(lanes, 0);
  eligibleOp_.assign(lanes, -1);
  eligibleSinceNs_.assign(lanes, 0);
  wakingOp_.assign(lanes, -1);
  busyNs_.assign(lanes, 0);
  // Compute resources: the cluster devices, or with launches the host threads (the lanes'
  // workers, then one autograd thread per cluster device).
  launches_ = costs.launches();
  const std::size_t computeResources = launches_ ? lanes + devices : devices;
  deviceBusy_.assign(computeResources, 0);
  deviceTouched_.assign(computeResources, 0);
  if (launches_) {
    streamFreeNs_.assign(static_cast<std::size_t>(compiled.layout.n), 0);
    launchedNs_.assign(count, -1);
    firstKernelNs_.assign(count, -1);
  }
}

void Engine::resetLinks(std::int32_t hosts) {
  linkCount_ = deviceCount_ * deviceCount_ + hosts * hosts;
  const auto linkCount = static_cast<std::size_t>(linkCount_);
  if (links_.size() < linkCount) links_.resize(linkCount);
  for (LinkQueue& link : links_) {
    link.items.clear();
    link.head = 0;
  }
  linkBusy_.assign(linkCount, 0);
  linkTouched_.assign(linkCount, 0);
  if (sharedLinks_) {
    sharing_.reset(linkCount);
    checkGeneration_.assign(linkCount, 0);
  }
  touchedDevices_.clear();
  touchedLinks_.clear();
  iterationNs_ = 0;
  eventCount_ = 0;
}

void Engine::placeLanes() {
  // Lane d runs on stage d's cluster device; the lanes of each device in increasing d.
  const auto lanes = static_cast<std::size_t>(compiled_->lanes);
  const auto devices = static_cast<std::size_t>(deviceCount_);
  laneDevice_.resize(lanes);
  for (std::size_t d = 0; d < lanes; ++d) laneDevice_[d] = costs_->stageDevice[d];
  deviceLaneStart_.assign(devices + 1, 0);
  for (std::size_t d = 0; d < lanes; ++d) ++deviceLaneStart_[static_cast<std::size_t>(laneDevice_[d]) + 1];
  for (std::size_t device = 0; device < devices; ++device) deviceLaneStart_[device + 1] += deviceLaneStart_[device];
  deviceLanes_.resize(lanes);
  std::vector<std::int32_t>& fill = touchedDevices_;  // scratch, cleared below
  fill.assign(deviceLaneStart_.begin(), deviceLaneStart_.end() - 1);
  for (std::size_t d = 0; d < lanes; ++d) {
    const auto device = static_cast<std::size_t>(laneDevice_[d]);
    deviceLanes_[static_cast<std::size_t>(fill[device]++)] = static_cast<std::int32_t>(d);
  }
  fill.clear();
}

void Engine::assignResources(std::int32_t hosts) {
  const CompiledSchedule& compiled = *compiled_;
  const ResolvedCosts& costs = *costs_;
  const std::int32_t deviceCount = deviceCount_;
  const std::size_t count = compiled.ops.size();
  for (std::size_t op = 0; op < count; ++op) {
    const CompiledOp& c = compiled.ops[op];
    remaining_[op] = c.dependencyCount;
    if (c.isCompute()) {
      resource_[op] = laneDevice_[static_cast<std::size_t>(c.lane)];
      busyNs_[static_cast<std::size_t>(c.lane)] += costs.opDurationNs(static_cast<std::size_t>(c.durationSlot), c);
    } else {
      const std::int32_t from = costs.stageDevice[static_cast<std::size_t>(c.j)];
      const std::int32_t to = costs.stageDevice[static_cast<std::size_t>(c.toJ)];
      std::int32_t link = from * deviceCount + to;
      if (sharedLinks_) {
        const std::int32_t fromHost = costs.deviceHost[static_cast<std::size_t>(from)];
        const std::int32_t toHost = costs.deviceHost[static_cast<std::size_t>(to)];
        if (fromHost != toHost) link = deviceCount * deviceCount + fromHost * hosts + toHost;
      }
      resource_[op] = deviceCount + link;
    }
  }
  if (launches_) {
    // A compute op's resource is the host thread that launches it.
    for (std::size_t op = 0; op < count; ++op) {
      const CompiledOp& c = compiled.ops[op];
      if (!c.isCompute()) continue;
      resource_[op] = c.isBackwardPass() ? compiled.lanes + resource_[op] : c.lane;
    }
  }
}

template <bool Launches>
TimeNs Engine::runEvents(std::size_t& finished) {
  TimeNs now = 0;
  while (true) {
    for (std::int32_t device : touchedDevices_) {
      deviceTouched_[static_cast<std::size_t>(device)] = 0;
      if constexpr (Launches) {
        dispatchHost(device, now);
      } else {
        dispatchDevice(device, now);
      }
    }
    touchedDevices_.clear();
    for (std::int32_t link : touchedLinks_) {
      linkTouched_[static_cast<std::size_t>(link)] = 0;
      dispatchLink(link, now);
    }
    touchedLinks_.clear();
    if (events_.empty()) break;
    now = events_.top().timeNs;
    if (!lateDue_.empty() && lateDue_.front().dueNs <= now) releaseDue(now, now);
    while (!events_.empty() && events_.top().timeNs == now) {
      const Event event = events_.pop();
      if (event.tag == kFinishTag) {
        ++eventCount_;
        ++finished;
        if constexpr (Launches) {
          if (compiled_->ops[event.op].isCompute()) {
            kernelsDone(event.op, now);
            continue;
          }
        }
        finish(event.op, now);
      } else if (Launches && event.tag == kLaunchedTag) {
        ++eventCount_;
        launched(event.op, now);
      } else if (event.tag == kWakeTag) {
        ++eventCount_;
        wake(event.op, now);
      } else {
        finished += linkEvent(event, now);
      }
    }
  }
  if (!lateDue_.empty()) releaseDue(kNever, now);  // the step is over: what is pending goes with it
  return now;
}

void Engine::makeReady(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  if (c.isCompute()) {
    const auto lane = static_cast<std::size_t>(c.lane);
    if (c.orderPosition != nextPosition_[lane] || eligibleOp_[lane] == static_cast<std::int64_t>(op) ||
        wakingOp_[lane] == static_cast<std::int64_t>(op)) {
      return;
    }
    noteWait(c, causeLane_, timeNs);
    if (wakesWorker(op, timeNs)) {
      wakingOp_[lane] = op;
      events_.push(timeNs + costs_->wakeLatencyNs, op, kWakeTag);
      return;
    }
    makeEligible(op, timeNs);
  } else {
    const std::int32_t link = resource_[op] - deviceCount_;
    LinkQueue& queue = links_[static_cast<std::size_t>(link)];
    queue.items.push_back(Queued{timeNs, op});
    // Keep the pending items sorted by (ready time, op index).
    for (std::size_t k = queue.items.size() - 1; k > queue.head; --k) {
      Queued& a = queue.items[k - 1];
      Queued& b = queue.items[k];
      if (a.readyNs < b.readyNs || (a.readyNs == b.readyNs && a.op < b.op)) break;
      std::swap(a, b);
    }
    touchLink(link);
  }
}

bool Engine::wakesWorker(std::uint32_t op, TimeNs timeNs) const {
  if (costs_->wakeLatencyNs <= 0 || launches_ || causeLane_ < 0 || causeLane_ == compiled_->ops[op].lane) return false;
  // The worker slept if its lane's previous op ended before this moment; its own lane's op ending
  // now (or none before: the step's first op, whose worker the step woke) finds it awake.
  const std::uint32_t previous = compiled_->previousInLane(op);
  return previous == kNoOp ? timeNs > 0 : endNs_[previous] < timeNs;
}

void Engine::makeEligible(std::uint32_t op, TimeNs timeNs) {
  const auto lane = static_cast<std::size_t>(compiled_->ops[op].lane);
  eligibleOp_[lane] = op;
  eligibleSinceNs_[lane] = timeNs;
  touchDevice(resource_[op]);
}

void Engine::wake(std::uint32_t op, TimeNs timeNs) {
  wakingOp_[static_cast<std::size_t>(compiled_->ops[op].lane)] = -1;
  makeEligible(op, timeNs);
}

void Engine::endLate(std::uint32_t op, TimeNs timeNs) {
  const Range late = compiled_->opLate[op].release;
  for (std::uint32_t e = late.begin; e < late.end; ++e) releaseLateFrom(op, compiled_->effects[e], e, timeNs);
}

void Engine::releaseLateFrom(std::uint32_t op, const MemoryEffect& effect, std::uint32_t index, TimeNs timeNs) {
  const auto lanes = static_cast<std::size_t>(compiled_->lanes);
  const auto lane = static_cast<std::size_t>(compiled_->ops[op].lane);
  const auto owner = static_cast<std::size_t>(compiled_->stageLane[static_cast<std::size_t>(effect.j)]);
  const TimeNs apartNs = timeNs - syncNs_[lane * lanes + owner];
  const TimeNs dueNs = lateFrees_ == LateFrees::kAtTheLatest
                           ? kNever
                           : timeNs + static_cast<TimeNs>(kFreeSkew * static_cast<double>(apartNs));
  if (dueNs <= timeNs) {
    releaseLate(index, timeNs);
    return;
  }
  lateDue_.push_back(LateDue{dueNs, index});
  std::push_heap(lateDue_.begin(), lateDue_.end(), LateDue::later);
}

void Engine::releaseDue(TimeNs nowNs, TimeNs endNs) {
  // Each at its due time, in time order (a min-heap): they fall after everything before nowNs
  // happened, so the counter's samples stay in order. What is due after the step's end goes at
  // its end.
  while (!lateDue_.empty() && lateDue_.front().dueNs <= nowNs) {
    std::pop_heap(lateDue_.begin(), lateDue_.end(), LateDue::later);
    const LateDue due = lateDue_.back();
    lateDue_.pop_back();
    releaseLate(due.effect, std::min(due.dueNs, endNs));
  }
}

void Engine::noteWait(const CompiledOp& waiting, std::int32_t causeLane, TimeNs timeNs) {
  if (syncNs_.empty() || causeLane < 0 || causeLane == waiting.lane) return;
  const auto lanes = static_cast<std::size_t>(compiled_->lanes);
  const auto a = static_cast<std::size_t>(waiting.lane);
  const auto b = static_cast<std::size_t>(causeLane);
  syncNs_[a * lanes + b] = syncNs_[b * lanes + a] = timeNs;
}

void Engine::releaseLate(std::uint32_t effect, TimeNs timeNs) {
  char& done = lateDone_[effect];
  if (done) return;
  done = 1;
  const std::size_t effects = compiled_->effects.size();
  const MemoryEffect* e =
      effect < effects ? compiled_->effects.data() + effect : &compiled_->holds[effect - effects].effect;
  memory_.release(e, e + 1, costs_->bytes.data(), timeNs);
}

void Engine::seeLate(std::uint32_t op, TimeNs timeNs) {
  const Range seen = compiled_->opLate[op].seen;
  for (std::uint32_t k = seen.begin; k < seen.end; ++k) {
    lateSeen_[compiled_->lateSeenEffects[k]] = 1;
    releaseLate(compiled_->lateSeenEffects[k], timeNs);
  }
}

void Engine::applyHolds(std::uint32_t op, TimeNs timeNs) {
  const CompiledSchedule::OpHolds& c = compiled_->opHolds[op];
  const Bytes* bytes = costs_->bytes.data();
  for (std::uint32_t h = c.from.begin; h < c.from.end; ++h) {
    const CompiledSchedule::Hold& hold = compiled_->holds[h];
    const auto index = static_cast<std::uint32_t>(compiled_->effects.size() + h);
    const bool otherEnded = endNs_[hold.untilOp] >= 0;
    // The other holder let go already; at the latest, its lane's free is seen only where this
    // lane has waited for it.
    const bool unseen = otherEnded && lateFrees_ == LateFrees::kAtTheLatest && !lateDone_.empty() &&
                        endsLate(*compiled_, hold) && !lateSeen_[index];
    if (otherEnded && !unseen) continue;
    memory_.allocate(&hold.effect, &hold.effect + 1, bytes, op, timeNs);
    if (!otherEnded) {
      held_[h] = 1;
      continue;
    }
    lateDone_[index] = 0;  // pending until seen, or the step's end
    lateDue_.push_back(LateDue{kNever, index});
    std::push_heap(lateDue_.begin(), lateDue_.end(), LateDue::later);
  }
  for (std::uint32_t r = c.until.begin; r < c.until.end; ++r) {
    const std::uint32_t h = compiled_->holdRefs[r];
    if (!held_[h]) continue;
    const CompiledSchedule::Hold& hold = compiled_->holds[h];
    held_[h] = 0;
    if (!lateDone_.empty() && endsLate(*compiled_, hold)) {
      const auto index = static_cast<std::uint32_t>(compiled_->effects.size() + h);
      lateDone_[index] = 0;  // pending
      releaseLateFrom(op, hold.effect, index, timeNs);
      continue;
    }
    memory_.release(&hold.effect, &hold.effect + 1, bytes, timeNs);
  }
}

// finish() and start() keep their steps inline (the launch model's kernelsDone(), launched()
// and startLaunch() repeat the few they share): calls here cost the search a few percent.
void Engine::finish(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  endNs_[op] = timeNs;
  const Bytes* bytes = costs_->bytes.data();
  memory_.release(*compiled_, c.transient, bytes, timeNs);
  memory_.allocate(*compiled_, c.endTransient, bytes, op, timeNs);
  memory_.release(*compiled_, c.endTransient, bytes, timeNs);
  memory_.allocate(*compiled_, c.endAlloc, bytes, op, timeNs);
  memory_.release(*compiled_, c.endRelease, bytes, timeNs);
  if (releasesLate(op)) endLate(op, timeNs);
  if (!compiled_->opHolds.empty()) applyHolds(op, timeNs);
  if (c.isCompute()) {
    const auto lane = static_cast<std::size_t>(c.lane);
    deviceBusy_[static_cast<std::size_t>(resource_[op])] = 0;
    touchDevice(resource_[op]);
    const std::uint32_t position = ++nextPosition_[lane];
    const std::uint32_t orderIndex = compiled_->orderStart[lane] + position;
    if (orderIndex < compiled_->orderStart[lane + 1]) {
      const std::uint32_t next = compiled_->orderOps[orderIndex];
      if (remaining_[next] == 0) makeReady(next, timeNs);
    }
  } else if (!sharedLinks_) {
    const std::int32_t link = resource_[op] - deviceCount_;
    linkBusy_[static_cast<std::size_t>(link)] = 0;
    touchLink(link);
  }
  causeLane_ = c.isCompute() ? c.lane : compiled_->stageLane[static_cast<std::size_t>(c.j)];
  for (std::uint32_t s = c.successors.begin; s < c.successors.end; ++s) {
    const std::uint32_t successor = compiled_->successors[s];
    if (--remaining_[successor] == 0) makeReady(successor, timeNs);
  }
  causeLane_ = -1;
}

void Engine::kernelsDone(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  endNs_[op] = timeNs;
  const Bytes* bytes = costs_->bytes.data();
  memory_.release(*compiled_, c.transient, bytes, timeNs);
  memory_.allocate(*compiled_, c.endTransient, bytes, op, timeNs);
  memory_.release(*compiled_, c.endTransient, bytes, timeNs);
  memory_.allocate(*compiled_, c.endAlloc, bytes, op, timeNs);
  memory_.release(*compiled_, c.endRelease, bytes, timeNs);
  if (releasesLate(op)) endLate(op, timeNs);
  if (!compiled_->opHolds.empty()) applyHolds(op, timeNs);
  const std::uint32_t released = compiled_->nextInLane(op);  // when op had launched (launched())
  causeLane_ = c.lane;
  for (std::uint32_t s = c.successors.begin; s < c.successors.end; ++s) {
    const std::uint32_t successor = compiled_->successors[s];
    if (successor != released && --remaining_[successor] == 0) makeReady(successor, timeNs);
  }
  causeLane_ = -1;
}

void Engine::advanceLane(std::uint32_t op, TimeNs timeNs) {
  const auto lane = static_cast<std::size_t>(compiled_->ops[op].lane);
  deviceBusy_[static_cast<std::size_t>(resource_[op])] = 0;
  touchDevice(resource_[op]);
  const std::uint32_t position = ++nextPosition_[lane];
  const std::uint32_t orderIndex = compiled_->orderStart[lane] + position;
  if (orderIndex < compiled_->orderStart[lane + 1]) {
    const std::uint32_t next = compiled_->orderOps[orderIndex];
    if (remaining_[next] == 0) makeReady(next, timeNs);
  }
}

void Engine::launched(std::uint32_t op, TimeNs timeNs) {
  launchedNs_[op] = timeNs;
  // The schedule chains every compute op to the previous one of its lane: with launches that
  // dependency is the host's, met once the previous op is launched (its kernels, on the same
  // stream or another, are ordered by their streams, not by the host).
  const std::uint32_t next = compiled_->nextInLane(op);
  if (next != kNoOp) --remaining_[next];
  advanceLane(op, timeNs);
}

void Engine::dispatchHost(std::int32_t host, TimeNs timeNs) {
  const auto h = static_cast<std::size_t>(host);
  if (deviceBusy_[h]) return;
  const std::int32_t lanes = compiled_->lanes;
  std::int64_t best = -1;
  std::size_t bestLane = 0;
  if (host < lanes) {
    // Lane `host`'s worker launches its forwards, recomputes and losses; a backward waiting
    // there is the autograd thread's.
    const std::int64_t op = eligibleOp_[h];
    if (op < 0 || resource_[static_cast<std::size_t>(op)] != host) return;
    best = op;
    bestLane = h;
  } else {
    // The autograd thread of a cluster device: the backwards of every lane on it.
    const auto device = static_cast<std::size_t>(host - lanes);
    for (std::int32_t k = deviceLaneStart_[device]; k < deviceLaneStart_[device + 1]; ++k) {
      const auto lane = static_cast<std::size_t>(deviceLanes_[static_cast<std::size_t>(k)]);
      const std::int64_t op = eligibleOp_[lane];
      if (op < 0 || resource_[static_cast<std::size_t>(op)] != host) continue;
      // Lanes are visited in increasing d, so on equal ready times the lower lane wins.
      if (best < 0 || eligibleSinceNs_[lane] < eligibleSinceNs_[bestLane]) {
        best = op;
        bestLane = lane;
      }
    }
    if (best < 0) return;
  }
  eligibleOp_[bestLane] = -1;
  deviceBusy_[h] = 1;
  startLaunch(static_cast<std::uint32_t>(best), timeNs);
}

void Engine::dispatchDevice(std::int32_t device, TimeNs timeNs) {
  const auto d = static_cast<std::size_t>(device);
  if (deviceBusy_[d]) return;
  std::int64_t best = -1;
  std::size_t bestLane = 0;
  for (std::int32_t k = deviceLaneStart_[d]; k < deviceLaneStart_[d + 1]; ++k) {
    const auto lane = static_cast<std::size_t>(deviceLanes_[static_cast<std::size_t>(k)]);
    if (eligibleOp_[lane] < 0) continue;
    // Lanes are visited in increasing d, so on equal ready times the lower lane wins.
    if (best < 0 || eligibleSinceNs_[lane] < eligibleSinceNs_[bestLane]) {
      best = eligibleOp_[lane];
      bestLane = lane;
    }
  }
  if (best < 0) return;
  eligibleOp_[bestLane] = -1;
  deviceBusy_[d] = 1;
  start(static_cast<std::uint32_t>(best), timeNs);
}

void Engine::dispatchLink(std::int32_t link, TimeNs timeNs) {
  const auto l = static_cast<std::size_t>(link);
  LinkQueue& queue = links_[l];
  if (sharedLinks_) {
    // Shared links run every ready copy at once, in (ready time, op index) order.
    for (std::size_t k = queue.head; k < queue.items.size(); ++k) start(queue.items[k].op, timeNs);
    queue.items.clear();
    queue.head = 0;
    return;
  }
  if (linkBusy_[l] || queue.head == queue.items.size()) return;
  const std::uint32_t op = queue.items[queue.head++].op;
  if (queue.head == queue.items.size()) {
    queue.items.clear();
    queue.head = 0;
  }
  linkBusy_[l] = 1;
  start(op, timeNs);
}

void Engine::start(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  startNs_[op] = timeNs;
  const Bytes* bytes = costs_->bytes.data();
  if (seesLate(op)) seeLate(op, timeNs);
  memory_.allocate(*compiled_, c.startAlloc, bytes, op, timeNs);
  memory_.allocate(*compiled_, c.transient, bytes, op, timeNs);
  const auto slot = static_cast<std::size_t>(c.durationSlot);
  const TimeNs durationNs = costs_->opDurationNs(slot, c);
  if (sharedLinks_ && !c.isCompute() && durationNs > costs_->copyLatencyNs[slot]) {
    events_.push(timeNs + costs_->copyLatencyNs[slot], op, kDrainTag);  // bytes to drain after the latency
    return;
  }
  events_.push(timeNs + durationNs, op);
}

void Engine::startLaunch(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  startNs_[op] = timeNs;
  const Bytes* bytes = costs_->bytes.data();
  if (seesLate(op)) seeLate(op, timeNs);
  memory_.allocate(*compiled_, c.startAlloc, bytes, op, timeNs);
  memory_.allocate(*compiled_, c.transient, bytes, op, timeNs);
  const auto slot = static_cast<std::size_t>(c.durationSlot);
  TimeNs& streamFreeNs = streamFreeNs_[static_cast<std::size_t>(c.j)];
  const LaunchTimes times =
      launchTimes(timeNs, costs_->launchNs[slot], costs_->opDurationNs(slot, c), costs_->kernels[slot], streamFreeNs);
  streamFreeNs = times.endNs;
  firstKernelNs_[op] = times.firstKernelNs;
  events_.push(times.launchedNs, op, kLaunchedTag);
  events_.push(times.endNs, op);
}

std::size_t Engine::linkEvent(const Event& event, TimeNs timeNs) {
  if (event.tag == kDrainTag) {
    ++eventCount_;
    const std::uint32_t op = event.op;
    const std::int32_t link = resource_[op] - deviceCount_;
    // Transfers due now leave before this one enters, whatever the order of the events at one time.
    const std::size_t finished = finishDrained(link, timeNs);
    const auto slot = static_cast<std::size_t>(compiled_->ops[op].durationSlot);
    sharing_.enter(link, op, costs_->durationNs[slot] - costs_->copyLatencyNs[slot], timeNs);
    scheduleCheck(link);
    return finished;
  }
  const auto link = static_cast<std::int32_t>(event.op);
  if (event.tag - kCheckTag != checkGeneration_[static_cast<std::size_t>(link)]) return 0;  // re-rated since
  ++eventCount_;
  const std::size_t finished = finishDrained(link, timeNs);
  scheduleCheck(link);
  return finished;
}

std::size_t Engine::finishDrained(std::int32_t link, TimeNs timeNs) {
  drained_.clear();
  sharing_.finishDue(link, timeNs, drained_);
  for (std::uint32_t op : drained_) finish(op, timeNs);
  return drained_.size();
}

void Engine::scheduleCheck(std::int32_t link) {
  const std::uint32_t generation = ++checkGeneration_[static_cast<std::size_t>(link)];
  const TimeNs dueNs = sharing_.nextFinishNs(link);
  if (dueNs >= 0) events_.push(dueNs, static_cast<std::uint32_t>(link), kCheckTag + generation);
}

void Engine::touchDevice(std::int32_t device) {
  auto& flag = deviceTouched_[static_cast<std::size_t>(device)];
  if (!flag) {
    flag = 1;
    touchedDevices_.push_back(device);
  }
}

void Engine::touchLink(std::int32_t link) {
  auto& flag = linkTouched_[static_cast<std::size_t>(link)];
  if (!flag) {
    flag = 1;
    touchedLinks_.push_back(link);
  }
}

}  // namespace pipeprof::sim
