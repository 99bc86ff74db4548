// The device timeline collector (CUPTI-free): drives an ActivitySource around a capture.
#include <pipeprof/profiler/cupti_collector.h>

#include <algorithm>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pipeprof {

std::string cuptiModeName(CuptiMode mode) {
  switch (mode) {
    case CuptiMode::Cheap: return "cheap";
    case CuptiMode::Exact: return "exact";
  }
  return "cheap";
}

CuptiMode parseCuptiMode(const std::string& name) {
  if (name == "cheap") return CuptiMode::Cheap;
  if (name == "exact") return CuptiMode::Exact;
  throw std::invalid_argument("unknown CUPTI mode '" + name + "': expected cheap or exact");
}

std::unique_ptr<CuptiCollector> CuptiCollector::create(HostTracer& tracer, CuptiMode mode) {
  return std::make_unique<CuptiCollector>(tracer, makeCuptiActivitySource(mode));
}

CuptiCollector::CuptiCollector(HostTracer& tracer, std::unique_ptr<ActivitySource> source)
    : tracer_(&tracer), source_(std::move(source)) {}

CuptiCollector::~CuptiCollector() { stop(); }

bool CuptiCollector::available() const { return source_ && source_->available(); }

std::string CuptiCollector::unavailableReason() const {
  return source_ ? source_->unavailableReason() : std::string("no activity source");
}

CuptiMode CuptiCollector::mode() const { return source_ ? source_->mode() : CuptiMode::Cheap; }

bool CuptiCollector::start() {
  if (started_) return true;
  if (recording_) {
    // Paused: the source records already; what the device did since is no capture's.
    source_->flush();
    (void)source_->takeBuffers();
  } else {
    if (!available() || !source_->start()) return false;
    recording_ = true;
  }
  buffers_.clear();
  clockSamples_.clear();
  droppedBefore_ = source_->droppedRecords();
  droppedInCapture_ = 0;
  clockSamples_.push_back(source_->clockSample([this] { return tracer_->nowNs(); }));
  tracer_->setOpHooks(this);
  started_ = true;
  return true;
}

void CuptiCollector::endCapture(bool keepRecording) {
  started_ = false;
  if (tracer_->opHooks() == this) tracer_->setOpHooks(nullptr);
  if (keepRecording) {
    source_->flush();
  } else {
    source_->stop();  // flushes too
    recording_ = false;
  }
  clockSamples_.push_back(source_->clockSample([this] { return tracer_->nowNs(); }));
  std::vector<ActivityBuffer> more = source_->takeBuffers();
  std::move(more.begin(), more.end(), std::back_inserter(buffers_));
  droppedInCapture_ = source_->droppedRecords() - droppedBefore_;
}

void CuptiCollector::pause() {
  if (started_) endCapture(/*keepRecording=*/true);
}

void CuptiCollector::stop() {
  if (started_) {
    endCapture(/*keepRecording=*/false);
    return;
  }
  if (!recording_) return;
  recording_ = false;
  source_->stop();
  // Records of work run after the last capture are no capture's.
  (void)source_->takeBuffers();
}

void CuptiCollector::setTracer(HostTracer& tracer) {
  if (started_) throw std::logic_error("CuptiCollector::setTracer during a capture");
  tracer_ = &tracer;
}

Trace CuptiCollector::trace(const Trace& hostTrace) {
  if (started_) stop();
  ActivityConverter converter(ClockMap::fit(clockSamples_));
  converter.addHostSpans(hostTrace);
  for (const ActivityBuffer& buffer : buffers_) converter.addBuffer(buffer);
  converter.setDroppedRecords(droppedRecords());
  Trace out = converter.convert();
  out.metadata["cupti_mode"] = cuptiModeName(mode());
  stats_ = converter.stats();
  return out;
}

std::int64_t CuptiCollector::droppedRecords() const {
  return started_ ? source_->droppedRecords() - droppedBefore_ : droppedInCapture_;
}

std::string CuptiCollector::summary() const {
  std::ostringstream out;
  out << "cupti (" << cuptiModeName(mode()) << "): " << stats_.kernels << " kernels, " << stats_.memcpys << " copies, "
      << stats_.memsets << " memsets; " << stats_.attributedKernels << " of " << stats_.kernels
      << " kernels attributed (" << std::fixed << std::setprecision(1) << 100.0 * stats_.attributedKernelShare()
      << "%), " << stats_.attributedByStream << " by stream; " << stats_.unattributed << " unattributed; "
      << stats_.droppedRecords << " dropped";
  if (stats_.kernelsWithoutLaunchTime > 0) {
    out << "; " << stats_.kernelsWithoutLaunchTime << " kernels without a launch or queue time";
  }
  const std::string note = source_ ? source_->modeNote() : std::string();
  if (!note.empty()) out << "; " << note;
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
