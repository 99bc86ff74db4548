// Activity records -> trace events: clock mapping, attribution (by external correlation, else by
// stream and launch time) and flows.
#include <pipeprof/profiler/activity_converter.h>

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
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
      meanY + static_cast<long double>(map.slope) *
                  (static_cast<long double>(map.deviceRefNs - d0) - meanX);
  map.hostRefNs = h0 + static_cast<std::int64_t>(std::llround(hostAtRef));
  return map;
}

ActivityConverter::ActivityConverter(ClockMap clock) : clock_(clock) {}

void ActivityConverter::addHostSpans(const Trace& hostTrace) {
  for (const TraceEvent& event : hostTrace.events) {
    if (event.kind != EventKind::Span || event.correlationId < 0) continue;
    ops_[event.correlationId] = OpRef{event.name,      event.device, event.correlationId,
                                      event.microBatch, event.partition, event.phase,
                                      event.startNs,   event.startNs + event.durationNs};
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

namespace {

bool isCompute(Phase phase) {
  return phase == Phase::Forward || phase == Phase::Recompute || phase == Phase::Backward;
}

}  // namespace

void ActivityConverter::prepareStreamAttribution() {
  streams_ = StreamAttribution();
  launchNs_.clear();
  for (const auto& [id, op] : ops_) {
    if (isCompute(op.phase)) streams_.addSpan(op.j, id, op.startNs, op.endNs);
  }
  auto learn = [this](const auto& records) {
    for (const auto& record : records) {
      const OpRef* op = opOf(record.correlationId);
      if (op != nullptr && isCompute(op->phase)) streams_.learnStream(record.deviceId, record.streamId, op->j);
    }
  };
  learn(records_.kernels);
  learn(records_.memcpys);
  learn(records_.memsets);
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    const std::int64_t startNs = clock_.toHostNs(record.startNs);
    const auto [it, inserted] = launchNs_.emplace(record.correlationId, startNs);
    if (!inserted) it->second = std::min(it->second, startNs);  // a driver call inside a runtime call
  }
}

ActivityConverter::Resolved ActivityConverter::resolve(std::uint32_t cuptiCorrelationId, std::uint32_t deviceId,
                                                       std::uint32_t streamId) const {
  if (const OpRef* op = opOf(cuptiCorrelationId)) return {op, false};
  const auto launch = launchNs_.find(cuptiCorrelationId);
  if (launch == launchNs_.end()) return {};
  const auto op = ops_.find(streams_.find(deviceId, streamId, launch->second));
  return op == ops_.end() ? Resolved{} : Resolved{&op->second, true};
}

void ActivityConverter::attribute(TraceEvent& event, std::uint32_t cuptiCorrelationId, std::uint32_t deviceId,
                                  std::uint32_t streamId) {
  event.args["cupti_correlation"] = std::to_string(cuptiCorrelationId);
  const auto [op, byStream] = resolve(cuptiCorrelationId, deviceId, streamId);
  if (op == nullptr) {
    ++stats_.unattributed;
    return;
  }
  ++stats_.attributed;
  if (byStream) {
    ++stats_.attributedByStream;
    event.args["attributed_by"] = "stream";
  }
  event.correlationId = op->correlationId;
  event.microBatch = op->i;
  event.partition = op->j;
  event.args["op"] = op->name;
  event.args["op_phase"] = phaseName(op->phase);
}

Trace ActivityConverter::convert() {
  const std::int64_t dropped = stats_.droppedRecords;
  stats_ = ConversionStats{};
  stats_.droppedRecords = dropped;
  prepareStreamAttribution();
  Trace trace;
  auto deviceName = [](std::uint32_t id) { return "cuda:" + std::to_string(id); };
  auto streamLane = [](std::uint32_t id) { return "stream " + std::to_string(id); };
  auto span = [&](Phase phase, std::string name, std::uint32_t deviceId, std::uint32_t streamId,
                  std::uint64_t startNs, std::uint64_t endNs) {
    TraceEvent event;
    event.kind = EventKind::Span;
    event.phase = phase;
    event.name = std::move(name);
    event.device = deviceName(deviceId);
    event.lane = streamLane(streamId);
    event.startNs = clock_.toHostNs(startNs);
    event.durationNs = std::max<std::int64_t>(0, clock_.toHostNs(endNs) - event.startNs);
    return event;
  };

  // CUPTI correlation ids that launched device work, with the device and stream it ran on.
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> launched;
  std::set<std::uint32_t> launchedKernels;
  for (const KernelRecord& record : records_.kernels) {
    TraceEvent event = span(Phase::Kernel, demangle(record.name), record.deviceId, record.streamId,
                            record.startNs, record.endNs);
    event.args["grid"] = std::to_string(record.gridX) + "," + std::to_string(record.gridY) + "," +
                         std::to_string(record.gridZ);
    event.args["block"] = std::to_string(record.blockX) + "," + std::to_string(record.blockY) + "," +
                          std::to_string(record.blockZ);
    attribute(event, record.correlationId, record.deviceId, record.streamId);
    launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    // Flow end: at the kernel's start, on its stream.
    TraceEvent flowEnd;
    flowEnd.kind = EventKind::FlowEnd;
    flowEnd.name = "launch";
    flowEnd.device = event.device;
    flowEnd.lane = event.lane;
    flowEnd.startNs = event.startNs;
    flowEnd.correlationId = record.correlationId;
    flowEnd.phase = Phase::Launch;
    launchedKernels.insert(record.correlationId);
    trace.events.push_back(std::move(event));
    trace.events.push_back(std::move(flowEnd));
    ++stats_.kernels;
  }
  for (const MemcpyRecord& record : records_.memcpys) {
    TraceEvent event = span(Phase::Memcpy, "Memcpy " + memcpyKindName(record.copyKind), record.deviceId,
                            record.streamId, record.startNs, record.endNs);
    event.bytes = static_cast<Bytes>(record.bytes);
    event.args["copy_kind"] = memcpyKindName(record.copyKind);
    attribute(event, record.correlationId, record.deviceId, record.streamId);
    launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    trace.events.push_back(std::move(event));
    ++stats_.memcpys;
  }
  for (const MemsetRecord& record : records_.memsets) {
    TraceEvent event = span(Phase::Memset, "Memset", record.deviceId, record.streamId, record.startNs,
                            record.endNs);
    event.bytes = static_cast<Bytes>(record.bytes);
    attribute(event, record.correlationId, record.deviceId, record.streamId);
    launched.emplace(record.correlationId, std::make_pair(record.deviceId, record.streamId));
    trace.events.push_back(std::move(event));
    ++stats_.memsets;
  }
  // API calls: only those that launched device work are kept (the rest is noise such as
  // cudaGetDevice); a kernel launch also starts a flow to its kernel.
  std::set<std::uint32_t> runtimeCalls;  // a driver call under a runtime call shares its id
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    if (!record.driver) runtimeCalls.insert(record.correlationId);
  }
  for (const RuntimeApiRecord& record : records_.apiCalls) {
    const auto work = launched.find(record.correlationId);
    if (work == launched.end()) continue;
    if (record.driver && runtimeCalls.count(record.correlationId) != 0) continue;
    const OpRef* op = resolve(record.correlationId, work->second.first, work->second.second).op;
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
    if (launchedKernels.count(record.correlationId) != 0) {
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
  // A flow end without its start (the launch record was lost) is dropped, so viewers never see
  // a dangling arrow.
  std::set<std::int64_t> started;
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::FlowStart) started.insert(event.correlationId);
  }
  trace.events.erase(std::remove_if(trace.events.begin(), trace.events.end(),
                                    [&](const TraceEvent& event) {
                                      return event.kind == EventKind::FlowEnd && started.count(event.correlationId) == 0;
                                    }),
                     trace.events.end());
  sortEvents(trace);
  trace.baseNs = 0;
  trace.metadata["cupti_kernels"] = std::to_string(stats_.kernels);
  trace.metadata["cupti_memcpys"] = std::to_string(stats_.memcpys);
  trace.metadata["cupti_memsets"] = std::to_string(stats_.memsets);
  trace.metadata["cupti_unattributed"] = std::to_string(stats_.unattributed);
  trace.metadata["cupti_attributed_by_stream"] = std::to_string(stats_.attributedByStream);
  trace.metadata["cupti_dropped_records"] = std::to_string(stats_.droppedRecords);
  return trace;
}

}  // namespace pipeprof
