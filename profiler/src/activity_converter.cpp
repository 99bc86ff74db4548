// Activity records -> trace events: clock mapping, attribution (by external correlation, else by
// stream and launch or queue time, else by stream order) and flows.
#include <pipeprof/profiler/activity_converter.h>

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <set>
#include <string>

namespace pipeprof {

std::string memcpyKindName(MemcpyKind kind) {
  switch (kind) {
    case MemcpyKind::HostToDevice: return "HtoD";
    case MemcpyKind::DeviceToHost: return "DtoH";
    case MemcpyKind::DeviceToDevice: return "DtoD";
    case MemcpyKind::PeerToPeer: return "PtoP";
    case MemcpyKind::Other: return "other";
    case MemcpyKind::Unknown: break;
  }
  return "unknown";
}

std::string demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return symbol;
  return std::string(out.get());
}

std::int64_t ClockMap::toHostNs(std::uint64_t deviceNs) const {
  const long double delta = static_cast<long double>(static_cast<std::int64_t>(deviceNs) - deviceRefNs);
  return hostRefNs + static_cast<std::int64_t>(std::llround(static_cast<long double>(slope) * delta));
}

ClockMap ClockMap::fit(const std::vector<ClockSample>& samples) {
  ClockMap map;
  if (samples.empty()) return map;
  // Work relative to the first sample so the sums stay small (timestamps are ~1e18 ns).
  const std::int64_t d0 = samples.front().deviceNs;
  const std::int64_t h0 = samples.front().hostNs;
  long double meanX = 0, meanY = 0;
  for (const ClockSample& s : samples) {
    meanX += static_cast<long double>(s.deviceNs - d0);
    meanY += static_cast<long double>(s.hostNs - h0);
  }
  const auto n = static_cast<long double>(samples.size());
  meanX /= n;
  meanY /= n;
  long double sxx = 0, sxy = 0;
  for (const ClockSample& s : samples) {
    const long double dx = static_cast<long double>(s.deviceNs - d0) - meanX;
    const long double dy = static_cast<long double>(s.hostNs - h0) - meanY;
    sxx += dx * dx;
    sxy += dx * dy;
  }
  map.slope = sxx > 0 ? static_cast<double>(sxy / sxx) : 1.0;
  map.deviceRefNs = d0 + static_cast<std::int64_t>(std::llround(meanX));
  // The line passes through the mean point; re-express it at the rounded device reference.
  const long double hostAtRef =
      meanY + static_cast<long double>(map.slope) * (static_cast<long double>(map.deviceRefNs - d0) - meanX);
  map.hostRefNs = h0 + static_cast<std::int64_t>(std::llround(hostAtRef));
  return map;
}

ActivityConverter::ActivityConverter(ClockMap clock) : clock_(clock) {}

namespace {

bool isCompute(Phase phase) { return phase == Phase::Forward || phase == Phase::Recompute || phase == Phase::Backward; }

/// NCCL's kernels move a rank's messages on NCCL's own streams: they belong to the send or the
/// posted receive that launched them (its id), never to a compute op by stream and time.
bool isNcclKernel(const KernelRecord& kernel) { return kernel.name.find("nccl") != std::string::npos; }

/// A share in [0, 1] with 3 decimals, e.g. "0.902".
std::string formatShare(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", share);
  return text;
}

/// N of "cuda:N", else -1.
std::int64_t cudaIndex(const std::string& device) {
  const std::string prefix = "cuda:";
  if (device.compare(0, prefix.size(), prefix) != 0 || device.size() == prefix.size()) return -1;
  std::int64_t index = 0;
  for (std::size_t c = prefix.size(); c < device.size(); ++c) {
    if (device[c] < '0' || device[c] > '9' || index > 1'000'000) return -1;
    index = index * 10 + (device[c] - '0');
  }
  return index;
}

}  // namespace

void ActivityConverter::addHostSpans(const Trace& hostTrace) {
  for (const TraceEvent& event : hostTrace.events) {
    if (event.kind != EventKind::Span || event.correlationId < 0) continue;
    ops_[event.correlationId] = OpRef{event.name,
                                      event.device,
                                      event.correlationId,
                                      event.microBatch,
                                      event.partition,
                                      event.phase,
                                      event.startNs,
                                      event.startNs + event.durationNs,
                                      cudaIndex(event.device)};
  }
}

void ActivityConverter::addBuffer(const ActivityBuffer& buffer) {
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(records_.kernels, buffer.kernels);
  append(records_.memcpys, buffer.memcpys);
  append(records_.memsets, buffer.memsets);
  append(records_.apiCalls, buffer.apiCalls);
  for (const ExternalCorrelationRecord& record : buffer.externalCorrelations) {
    external_[record.correlationId] = record.externalId;
  }
}

const ActivityConverter::OpRef* ActivityConverter::opOf(std::uint32_t cuptiCorrelationId) const {
  const auto ext = external_.find(cuptiCorrelationId);
  if (ext == external_.end()) return nullptr;
  const auto op = ops_.find(static_cast<std::int64_t>(ext->second));
  return op == ops_.end() ? nullptr : &op->second;
}

std::optional<std::int64_t> ActivityConverter::queuedHostNs(const KernelRecord& kernel) const {
  if (kernel.queuedNs == 0) return std::nullopt;
  return clock_.toHostNs(kernel.queuedNs);
}

void ActivityConverter::prepareStreamAttribution() {
  streams_ = StreamAttribution();
  launchNs_.clear();
  for (const auto& [id, op] : ops_) {
    if (isCompute(op.phase)) streams_.addSpan(op.j, id, op.startNs, op.endNs, op.deviceIndex);
  }
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    const std::int64_t startNs = clock_.toHostNs(record.startNs);
    const auto [it, inserted] = launchNs_.emplace(record.correlationId, startNs);
    if (!inserted) it->second = std::min(it->second, startNs);  // a driver call inside a runtime call
  }
  // Work with an op teaches its stream's partition; work without one votes with its launch time
  // for the partitions whose compute spans on its device were open then.
  auto learn = [this](const auto& records, auto queuedOf) {
    for (const auto& record : records) {
      if (const OpRef* op = opOf(record.correlationId)) {
        if (isCompute(op->phase)) streams_.learnStream(record.deviceId, record.streamId, op->j);
      } else if (const auto launchNs = launchTimeOf(record.correlationId, queuedOf(record))) {
        streams_.voteStream(record.deviceId, record.streamId, *launchNs);
      }
    }
  };
  auto noQueueTime = [](const auto&) { return std::optional<std::int64_t>(); };
  learn(records_.kernels, [this](const KernelRecord& kernel) { return queuedHostNs(kernel); });
  learn(records_.memcpys, noQueueTime);
  learn(records_.memsets, noQueueTime);
  streams_.settleVotes();
}

std::optional<std::int64_t> ActivityConverter::launchTimeOf(std::uint32_t cuptiCorrelationId,
                                                            std::optional<std::int64_t> queuedNs) const {
  const auto launch = launchNs_.find(cuptiCorrelationId);
  if (launch != launchNs_.end()) return launch->second;
  return queuedNs;
}

ActivityConverter::Resolved ActivityConverter::resolve(std::uint32_t cuptiCorrelationId, std::uint32_t deviceId,
                                                       std::uint32_t streamId,
                                                       std::optional<std::int64_t> queuedNs) const {
  if (const OpRef* op = opOf(cuptiCorrelationId)) return {op, Link::ById, true};
  const std::optional<std::int64_t> launchNs = launchTimeOf(cuptiCorrelationId, queuedNs);
  if (!launchNs) return {};
  const Link link = launchNs_.count(cuptiCorrelationId) != 0 ? Link::ByLaunchTime : Link::ByQueueTime;
  const auto op = ops_.find(streams_.find(deviceId, streamId, *launchNs));
  return op == ops_.end() ? Resolved{nullptr, Link::None, true} : Resolved{&op->second, link, true};
}

void ActivityConverter::attribute(TraceEvent& event, std::uint32_t cuptiCorrelationId, const Resolved& resolved) {
  event.args["cupti_correlation"] = std::to_string(cuptiCorrelationId);
  const OpRef* op = resolved.op;
  if (op == nullptr) {
    ++stats_.unattributed;
    return;
  }
  ++stats_.attributed;
  if (event.phase == Phase::Kernel) ++stats_.attributedKernels;
  switch (resolved.link) {
    case Link::ByLaunchTime: event.args["attributed_by"] = "stream"; break;
    case Link::ByQueueTime:
      event.args["attributed_by"] = "queue time";
      ++stats_.attributedByQueueTime;
      break;
    case Link::ByStreamOrder:
      event.args["attributed_by"] = "stream order";
      ++stats_.attributedByStreamOrder;
      break;
    case Link::ById:
    case Link::None: break;
  }
  if (resolved.link != Link::ById) ++stats_.attributedByStream;
  event.correlationId = op->correlationId;
  event.microBatch = op->i;
  event.partition = op->j;
  event.args["op"] = op->name;
  event.args["op_phase"] = phaseName(op->phase);
}

struct ActivityConverter::Conversion {
  std::vector<Resolved> kernelOps;                                                     ///< per kernel record
  using Placed = std::pair<std::uint64_t, const OpRef*>;                               ///< (device start, op or null)
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Placed>> streamOrder;  ///< (device, stream)
  /// CUPTI correlation ids that launched device work, with the device and stream it ran on.
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> launched;
  std::set<std::uint32_t> launchedKernels;
};

namespace {

TraceEvent deviceSpan(const ClockMap& clock, Phase phase, std::string name, std::uint32_t deviceId,
                      std::uint32_t streamId, std::uint64_t startNs, std::uint64_t endNs) {
  TraceEvent event;
  event.kind = EventKind::Span;
  event.phase = phase;
  event.name = std::move(name);
  event.device = "cuda:" + std::to_string(deviceId);
  event.lane = "stream " + std::to_string(streamId);
  event.startNs = clock.toHostNs(startNs);
  event.durationNs = std::max<std::int64_t>(0, clock.toHostNs(endNs) - event.startNs);
  return event;
}

/// A flow end without its start (the launch record was lost) is dropped, so viewers never see
/// a dangling arrow.
void dropFlowsWithoutStart(Trace& trace) {
  std::set<std::int64_t> started;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::FlowStart) started.insert(event.correlationId);
  }
  trace.events.erase(std::remove_if(trace.events.begin(), trace.events.end(),
                                    [&](const TraceEvent& event) {
                                      return event.kind == EventKind::FlowEnd &&
                                             started.count(event.correlationId) == 0;
                                    }),
                     trace.events.end());
}

/// The "cupti_*" counts of the trace's metadata.
void recordStats(const ConversionStats& stats, Trace& trace) {
  trace.metadata["cupti_kernels"] = std::to_string(stats.kernels);
  trace.metadata["cupti_memcpys"] = std::to_string(stats.memcpys);
  trace.metadata["cupti_memsets"] = std::to_string(stats.memsets);
  trace.metadata["cupti_unattributed"] = std::to_string(stats.unattributed);
  trace.metadata["cupti_attributed_kernels"] = std::to_string(stats.attributedKernels);
  trace.metadata["cupti_attributed_kernel_share"] = formatShare(stats.attributedKernelShare());
  trace.metadata["cupti_attributed_by_stream"] = std::to_string(stats.attributedByStream);
  trace.metadata["cupti_attributed_by_queue_time"] = std::to_string(stats.attributedByQueueTime);
  trace.metadata["cupti_attributed_by_stream_order"] = std::to_string(stats.attributedByStreamOrder);
  trace.metadata["cupti_kernels_without_launch_time"] = std::to_string(stats.kernelsWithoutLaunchTime);
  trace.metadata["cupti_dropped_records"] = std::to_string(stats.droppedRecords);
}

}  // namespace

void ActivityConverter::resolveKernels(Conversion& conversion) const {
  conversion.kernelOps.reserve(records_.kernels.size());
  for (const KernelRecord& record : records_.kernels) {
    conversion.kernelOps.push_back(
        isNcclKernel(record) ? Resolved{opOf(record.correlationId), Link::ById, true}
                             : resolve(record.correlationId, record.deviceId, record.streamId, queuedHostNs(record)));
    if (conversion.kernelOps.back().timed) {
      conversion.streamOrder[{record.deviceId, record.streamId}].emplace_back(record.startNs,
                                                                              conversion.kernelOps.back().op);
    }
  }
  using Placed = Conversion::Placed;
  for (auto& [stream, order] : conversion.streamOrder) {
    std::sort(order.begin(), order.end(), [](const Placed& a, const Placed& b) { return a.first < b.first; });
  }
}

ActivityConverter::Resolved ActivityConverter::byStreamOrder(const Conversion& conversion, Resolved resolved,
                                                             std::uint32_t deviceId, std::uint32_t streamId,
                                                             std::uint64_t startNs) const {
  if (resolved.timed) return resolved;
  const auto order = conversion.streamOrder.find({deviceId, streamId});
  if (order == conversion.streamOrder.end()) return resolved;
  const auto later = [](std::uint64_t t, const Conversion::Placed& placed) { return t < placed.first; };
  const auto next = std::upper_bound(order->second.begin(), order->second.end(), startNs, later);
  if (next == order->second.begin() || next == order->second.end()) return resolved;
  const OpRef* before = std::prev(next)->second;
  if (before == nullptr || before != next->second) return resolved;
  return Resolved{before, Link::ByStreamOrder, false};
}

void ActivityConverter::addKernels(Conversion& conversion, Trace& trace) {
  for (std::size_t k = 0; k < records_.kernels.size(); ++k) {
    const KernelRecord& record = records_.kernels[k];
    TraceEvent event = deviceSpan(clock_, Phase::Kernel, demangle(record.name), record.deviceId, record.streamId,
                                  record.startNs, record.endNs);
    event.args["grid"] =
        std::to_string(record.gridX) + "," + std::to_string(record.gridY) + "," + std::to_string(record.gridZ);
    event.args["block"] =
        std::to_string(record.blockX) + "," + std::to_string(record.blockY) + "," + std::to_string(record.blockZ);
    if (record.queuedNs != 0 && record.startNs >= record.queuedNs) {
      event.args["queued_to_start_ns"] = std::to_string(record.startNs - record.queuedNs);
    }
    if (!conversion.kernelOps[k].timed) ++stats_.kernelsWithoutLaunchTime;
    attribute(event, record.correlationId,
              byStreamOrder(conversion, conversion.kernelOps[k], record.deviceId, record.streamId, record.startNs));
    conversion.launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    // Flow end: at the kernel's start, on its stream.
    TraceEvent flowEnd;
    flowEnd.kind = EventKind::FlowEnd;
    flowEnd.name = "launch";
    flowEnd.device = event.device;
    flowEnd.lane = event.lane;
    flowEnd.startNs = event.startNs;
    flowEnd.correlationId = record.correlationId;
    flowEnd.phase = Phase::Launch;
    conversion.launchedKernels.insert(record.correlationId);
    trace.events.push_back(std::move(event));
    trace.events.push_back(std::move(flowEnd));
    ++stats_.kernels;
  }
}

void ActivityConverter::addCopiesAndMemsets(Conversion& conversion, Trace& trace) {
  for (const MemcpyRecord& record : records_.memcpys) {
    TraceEvent event = deviceSpan(clock_, Phase::Memcpy, "Memcpy " + memcpyKindName(record.copyKind), record.deviceId,
                                  record.streamId, record.startNs, record.endNs);
    event.bytes = static_cast<Bytes>(record.bytes);
    event.args["copy_kind"] = memcpyKindName(record.copyKind);
    attribute(event, record.correlationId,
              byStreamOrder(conversion, resolve(record.correlationId, record.deviceId, record.streamId, std::nullopt),
                            record.deviceId, record.streamId, record.startNs));
    conversion.launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    trace.events.push_back(std::move(event));
    ++stats_.memcpys;
  }
  for (const MemsetRecord& record : records_.memsets) {
    TraceEvent event =
        deviceSpan(clock_, Phase::Memset, "Memset", record.deviceId, record.streamId, record.startNs, record.endNs);
    event.bytes = static_cast<Bytes>(record.bytes);
    attribute(event, record.correlationId,
              byStreamOrder(conversion, resolve(record.correlationId, record.deviceId, record.streamId, std::nullopt),
                            record.deviceId, record.streamId, record.startNs));
    conversion.launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    trace.events.push_back(std::move(event));
    ++stats_.memsets;
  }
}

void ActivityConverter::addLaunches(const Conversion& conversion, Trace& trace) {
  // Only the API calls that launched device work are kept (the rest is noise such as
  // cudaGetDevice); a kernel launch also starts a flow to its kernel.
  std::set<std::uint32_t> runtimeCalls;  // a driver call under a runtime call shares its id
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    if (!record.driver) runtimeCalls.insert(record.correlationId);
  }
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    const auto work = conversion.launched.find(record.correlationId);
    if (work == conversion.launched.end()) continue;
    if (record.driver && runtimeCalls.count(record.correlationId) != 0) continue;
    const OpRef* op = resolve(record.correlationId, work->second.first, work->second.second, std::nullopt).op;
    TraceEvent event;
    event.kind = EventKind::Span;
    event.phase = Phase::Launch;
    event.name = record.name.empty() ? (record.driver ? "driver api " : "runtime api ") + std::to_string(record.cbid)
                                     : record.name;
    event.device = op != nullptr ? op->device : std::string("host");
    event.lane = "cuda api " + std::to_string(record.threadId);
    event.startNs = clock_.toHostNs(record.startNs);
    event.durationNs = std::max<std::int64_t>(0, clock_.toHostNs(record.endNs) - event.startNs);
    event.args["cupti_correlation"] = std::to_string(record.correlationId);
    if (op != nullptr) {
      event.microBatch = op->i;
      event.partition = op->j;
      event.correlationId = op->correlationId;
      event.args["op"] = op->name;
    }
    ++stats_.launches;
    if (conversion.launchedKernels.count(record.correlationId) != 0) {
      TraceEvent flowStart;
      flowStart.kind = EventKind::FlowStart;
      flowStart.name = "launch";
      flowStart.device = event.device;
      flowStart.lane = event.lane;
      flowStart.startNs = event.startNs;
      flowStart.correlationId = record.correlationId;
      flowStart.phase = Phase::Launch;
      trace.events.push_back(std::move(flowStart));
      ++stats_.flows;
    }
    trace.events.push_back(std::move(event));
  }
}

Trace ActivityConverter::convert() {
  const std::int64_t dropped = stats_.droppedRecords;
  stats_ = ConversionStats{};
  stats_.droppedRecords = dropped;
  prepareStreamAttribution();
  Trace trace;
  // Kernels are resolved first: work that nothing dates (a copy or memset without an API
  // record, a kernel without a queue time) takes the op of the dated kernels just before and
  // after it on its stream when both have the same one (a stream runs its work in launch order).
  Conversion conversion;
  resolveKernels(conversion);
  addKernels(conversion, trace);
  addCopiesAndMemsets(conversion, trace);
  addLaunches(conversion, trace);
  dropFlowsWithoutStart(trace);
  sortEvents(trace);
  trace.baseNs = 0;
  recordStats(stats_, trace);
  return trace;
}

}  // namespace pipeprof
