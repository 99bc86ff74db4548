// The discrete-event engine: runs a compiled schedule against resolved costs on devices and links.
#include "engine.h"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace pipeprof::sim {

void Engine::run(const CompiledSchedule& compiled, const ResolvedCosts& costs, std::int32_t deviceCount,
                 bool recordMemorySamples) {
  compiled_ = &compiled;
  costs_ = &costs;
  deviceCount_ = deviceCount;
  const std::size_t count = compiled.ops.size();
  const auto n = static_cast<std::size_t>(compiled.layout.n);
  const auto devices = static_cast<std::size_t>(deviceCount);

  events_.clear();
  memory_.reset(costs.partitionDevice, costs.staticBytes, deviceCount, recordMemorySamples);
  remaining_.resize(count);
  startNs_.assign(count, -1);
  endNs_.assign(count, -1);
  resource_.resize(count);
  nextPosition_.assign(n, 0);
  eligibleOp_.assign(n, -1);
  eligibleSinceNs_.assign(n, 0);
  busyNs_.assign(n, 0);
  deviceBusy_.assign(devices, 0);
  deviceTouched_.assign(devices, 0);
  if (links_.size() < devices * devices) links_.resize(devices * devices);
  for (LinkQueue& link : links_) {
    link.items.clear();
    link.head = 0;
  }
  linkBusy_.assign(devices * devices, 0);
  linkTouched_.assign(devices * devices, 0);
  touchedDevices_.clear();
  touchedLinks_.clear();
  iterationNs_ = 0;
  eventCount_ = 0;

  // Partitions of each device, in increasing j.
  devicePartitionStart_.assign(devices + 1, 0);
  for (std::size_t j = 0; j < n; ++j) ++devicePartitionStart_[static_cast<std::size_t>(costs.partitionDevice[j]) + 1];
  for (std::size_t d = 0; d < devices; ++d) devicePartitionStart_[d + 1] += devicePartitionStart_[d];
  devicePartitions_.resize(n);
  {
    std::vector<std::int32_t>& fill = touchedDevices_;  // scratch, cleared below
    fill.assign(devicePartitionStart_.begin(), devicePartitionStart_.end() - 1);
    for (std::size_t j = 0; j < n; ++j) {
      const auto d = static_cast<std::size_t>(costs.partitionDevice[j]);
      devicePartitions_[static_cast<std::size_t>(fill[d]++)] = static_cast<std::int32_t>(j);
    }
    fill.clear();
  }

  for (std::size_t op = 0; op < count; ++op) {
    const CompiledOp& c = compiled.ops[op];
    remaining_[op] = c.dependencyCount;
    const std::int32_t from = costs.partitionDevice[static_cast<std::size_t>(c.j)];
    if (c.isCompute()) {
      resource_[op] = from;
      busyNs_[static_cast<std::size_t>(c.j)] += costs.durationNs[static_cast<std::size_t>(c.durationSlot)];
    } else {
      const std::int32_t to = costs.partitionDevice[static_cast<std::size_t>(c.toJ)];
      resource_[op] = deviceCount + from * deviceCount + to;
    }
  }
  for (std::size_t op = 0; op < count; ++op) {
    if (remaining_[op] == 0) makeReady(static_cast<std::uint32_t>(op), 0);
  }

  std::size_t finished = 0;
  TimeNs now = 0;
  while (true) {
    for (std::int32_t device : touchedDevices_) {
      deviceTouched_[static_cast<std::size_t>(device)] = 0;
      dispatchDevice(device, now);
    }
    touchedDevices_.clear();
    for (std::int32_t link : touchedLinks_) {
      linkTouched_[static_cast<std::size_t>(link)] = 0;
      dispatchLink(link, now);
    }
    touchedLinks_.clear();
    if (events_.empty()) break;
    now = events_.top().timeNs;
    while (!events_.empty() && events_.top().timeNs == now) {
      const Event event = events_.pop();
      ++eventCount_;
      ++finished;
      finish(event.op, now);
    }
  }
  if (finished != count) {
    throw std::logic_error("simulation stalled: " + std::to_string(count - finished) + " of " +
                           std::to_string(count) + " ops never became ready (cyclic dependencies?)");
  }
  iterationNs_ = now;
}

void Engine::makeReady(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  if (c.isCompute()) {
    const auto j = static_cast<std::size_t>(c.j);
    if (c.orderPosition != nextPosition_[j] || eligibleOp_[j] == static_cast<std::int64_t>(op)) return;
    eligibleOp_[j] = op;
    eligibleSinceNs_[j] = timeNs;
    touchDevice(resource_[op]);
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

void Engine::finish(std::uint32_t op, TimeNs timeNs) {
  const CompiledOp& c = compiled_->ops[op];
  endNs_[op] = timeNs;
  const Bytes* bytes = costs_->bytes.data();
  memory_.release(*compiled_, c.transient, bytes, timeNs);
  memory_.allocate(*compiled_, c.endAlloc, bytes, op, timeNs);
  memory_.release(*compiled_, c.endRelease, bytes, timeNs);
  if (c.isCompute()) {
    const auto j = static_cast<std::size_t>(c.j);
    deviceBusy_[static_cast<std::size_t>(resource_[op])] = 0;
    touchDevice(resource_[op]);
    const std::uint32_t position = ++nextPosition_[j];
    const std::uint32_t orderIndex = compiled_->orderStart[j] + position;
    if (orderIndex < compiled_->orderStart[j + 1]) {
      const std::uint32_t next = compiled_->orderOps[orderIndex];
      if (remaining_[next] == 0) makeReady(next, timeNs);
    }
  } else {
    const std::int32_t link = resource_[op] - deviceCount_;
    linkBusy_[static_cast<std::size_t>(link)] = 0;
    touchLink(link);
  }
  for (std::uint32_t s = c.successors.begin; s < c.successors.end; ++s) {
    const std::uint32_t successor = compiled_->successors[s];
    if (--remaining_[successor] == 0) makeReady(successor, timeNs);
  }
}

void Engine::dispatchDevice(std::int32_t device, TimeNs timeNs) {
  const auto d = static_cast<std::size_t>(device);
  if (deviceBusy_[d]) return;
  std::int64_t best = -1;
  std::size_t bestJ = 0;
  for (std::int32_t k = devicePartitionStart_[d]; k < devicePartitionStart_[d + 1]; ++k) {
    const auto j = static_cast<std::size_t>(devicePartitions_[static_cast<std::size_t>(k)]);
    if (eligibleOp_[j] < 0) continue;
    // Partitions are visited in increasing j, so on equal ready times the lower j wins.
    if (best < 0 || eligibleSinceNs_[j] < eligibleSinceNs_[bestJ]) {
      best = eligibleOp_[j];
      bestJ = j;
    }
  }
  if (best < 0) return;
  eligibleOp_[bestJ] = -1;
  deviceBusy_[d] = 1;
  start(static_cast<std::uint32_t>(best), timeNs);
}

void Engine::dispatchLink(std::int32_t link, TimeNs timeNs) {
  const auto l = static_cast<std::size_t>(link);
  LinkQueue& queue = links_[l];
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
  memory_.allocate(*compiled_, c.startAlloc, bytes, op, timeNs);
  memory_.allocate(*compiled_, c.transient, bytes, op, timeNs);
  events_.push(timeNs + costs_->durationNs[static_cast<std::size_t>(c.durationSlot)], op);
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
