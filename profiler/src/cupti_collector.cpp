// The device timeline collector (CUPTI-free): drives an ActivitySource around a capture.
#include <pipeprof/profiler/cupti_collector.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <utility>

namespace pipeprof {

std::unique_ptr<CuptiCollector> CuptiCollector::create(HostTracer& tracer) {
  return std::make_unique<CuptiCollector>(tracer, makeCuptiActivitySource());
}

CuptiCollector::CuptiCollector(HostTracer& tracer, std::unique_ptr<ActivitySource> source)
    : tracer_(tracer), source_(std::move(source)) {}

CuptiCollector::~CuptiCollector() { stop(); }

bool CuptiCollector::available() const { return source_ && source_->available(); }

std::string CuptiCollector::unavailableReason() const {
  return source_ ? source_->unavailableReason() : std::string("no activity source");
}

bool CuptiCollector::start() {
  if (started_) return true;
  if (!available() || !source_->start()) return false;
  buffers_.clear();
  clockSamples_.clear();
  clockSamples_.push_back(source_->clockSample([this] { return tracer_.nowNs(); }));
  tracer_.setOpHooks(this);
  started_ = true;
  return true;
}

void CuptiCollector::stop() {
  if (!started_) return;
  started_ = false;
  if (tracer_.opHooks() == this) tracer_.setOpHooks(nullptr);
  source_->stop();
  clockSamples_.push_back(source_->clockSample([this] { return tracer_.nowNs(); }));
  std::vector<ActivityBuffer> more = source_->takeBuffers();
  std::move(more.begin(), more.end(), std::back_inserter(buffers_));
}

Trace CuptiCollector::trace(const Trace& hostTrace) {
  if (started_) stop();
  ActivityConverter converter(ClockMap::fit(clockSamples_));
  converter.addHostSpans(hostTrace);
  for (const ActivityBuffer& buffer : buffers_) converter.addBuffer(buffer);
  converter.setDroppedRecords(droppedRecords());
  Trace out = converter.convert();
  stats_ = converter.stats();
  return out;
}

std::int64_t CuptiCollector::droppedRecords() const { return source_ ? source_->droppedRecords() : 0; }

std::string CuptiCollector::summary() const {
  std::ostringstream out;
  out << "cupti: " << stats_.kernels << " kernels, " << stats_.memcpys << " copies, " << stats_.memsets
      << " memsets; " << stats_.attributedByStream << " attributed by stream, " << stats_.unattributed
      << " unattributed; " << stats_.droppedRecords << " dropped";
  return out.str();
}

void CuptiCollector::onOpBegin(std::int64_t correlationId) {
  source_->pushExternalCorrelation(static_cast<std::uint64_t>(correlationId));
}

void CuptiCollector::onOpEnd(std::int64_t /*correlationId*/) { source_->popExternalCorrelation(); }

Trace mergeTraces(Trace host, const Trace& device) {
  host.events.insert(host.events.end(), device.events.begin(), device.events.end());
  for (const auto& [key, value] : device.metadata) host.metadata[key] = value;
  sortEvents(host);
  if (!host.events.empty()) {
    host.baseNs = host.events.front().startNs;
    for (const TraceEvent& event : host.events) host.baseNs = std::min(host.baseNs, event.startNs);
  }
  return host;
}

}  // namespace pipeprof
