// Host tracer: per-thread event buffers (lock-free on the record path), drained into one trace.
#include <pipeprof/profiler/host_tracer.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <thread>
#include <utility>

namespace pipeprof {

namespace {

// Distinct ids for tracers so a thread's cached buffer is never reused by a different tracer
// that happens to live at the same address as a destroyed one.
std::atomic<std::uint64_t> gNextTracerId{1};

// Per-thread cache: the last tracer id this thread recorded into and its buffer there. A thread
// that alternates between tracers falls back to the (rare) registration path, which looks the
// buffer up under the mutex; the common case is one tracer per thread.
struct ThreadCache {
  std::uint64_t tracerId = 0;
  void* buffer = nullptr;
};
thread_local ThreadCache tCache;

}  // namespace

TimeNs SteadyClock::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One thread's events. Only its owning thread appends; drain() reads it when no thread records.
struct HostTracer::Buffer {
  std::thread::id owner;
  std::vector<TraceEvent> events;
};

HostTracer::HostTracer(std::shared_ptr<const Clock> clock)
    : clock_(std::move(clock)), id_(gNextTracerId.fetch_add(1, std::memory_order_relaxed)) {
  if (!clock_) clock_ = std::make_shared<SteadyClock>();
}

HostTracer::~HostTracer() = default;

void HostTracer::enable() { enabled_.store(true, std::memory_order_relaxed); }
void HostTracer::disable() { enabled_.store(false, std::memory_order_relaxed); }

HostTracer::Buffer& HostTracer::localBuffer() {
  if (tCache.tracerId == id_) return *static_cast<Buffer*>(tCache.buffer);
  // Slow path, once per (thread, tracer) switch: find or register this thread's buffer.
  const std::thread::id self = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(buffersMutex_);
  Buffer* found = nullptr;
  for (const auto& buffer : buffers_) {
    if (buffer->owner == self) {
      found = buffer.get();
      break;
    }
  }
  if (found == nullptr) {
    buffers_.push_back(std::make_unique<Buffer>());
    found = buffers_.back().get();
    found->owner = self;
    found->events.reserve(1024);
  }
  tCache.tracerId = id_;
  tCache.buffer = found;
  return *found;
}

void HostTracer::record(TraceEvent event) {
  if (!enabled()) return;
  localBuffer().events.push_back(std::move(event));
}

void HostTracer::recordCounter(const std::string& device, const std::string& name, TimeNs atNs,
                               double value) {
  if (!enabled()) return;
  TraceEvent event;
  event.kind = EventKind::Counter;
  event.name = name;
  event.device = device;
  event.lane = name;
  event.startNs = atNs;
  event.value = value;
  localBuffer().events.push_back(std::move(event));
}

Trace HostTracer::drain() {
  Trace trace;
  {
    std::lock_guard<std::mutex> lock(buffersMutex_);
    std::size_t total = 0;
    for (const auto& buffer : buffers_) total += buffer->events.size();
    trace.events.reserve(total);
    for (const auto& buffer : buffers_) {
      std::move(buffer->events.begin(), buffer->events.end(), std::back_inserter(trace.events));
      buffer->events.clear();
    }
  }
  sortEvents(trace);
  trace.baseNs = trace.events.empty() ? 0 : trace.events.front().startNs;
  for (const TraceEvent& event : trace.events) trace.baseNs = std::min(trace.baseNs, event.startNs);
  trace.metadata["source"] = "measured";
  trace.metadata["clock"] = "host monotonic ns";
  return trace;
}

OpSpan::OpSpan(HostTracer* tracer, OpKind kind, std::int64_t i, std::int64_t j, std::int64_t toJ,
               const std::string& device, const std::string& lane, const std::string& name)
    : tracer_(tracer != nullptr && tracer->enabled() ? tracer : nullptr) {
  if (tracer_ == nullptr) return;
  TraceEvent& event = event_.emplace();
  event.kind = EventKind::Span;
  event.name = name;
  event.device = device;
  event.lane = lane;
  event.microBatch = i;
  event.partition = j;
  event.phase = phaseOf(kind);
  event.correlationId = tracer_->nextCorrelationId();
  if (kind == OpKind::Copy || kind == OpKind::SkipCopy) event.args["to"] = std::to_string(toJ);
  if (OpHooks* hooks = tracer_->opHooks()) hooks->onOpBegin(event.correlationId);
  event.startNs = tracer_->nowNs();
}

OpSpan::~OpSpan() {
  if (tracer_ == nullptr) return;
  const TimeNs endNs = tracer_->nowNs();
  TraceEvent& event = *event_;
  if (OpHooks* hooks = tracer_->opHooks()) hooks->onOpEnd(event.correlationId);
  event.durationNs = endNs - event.startNs;
  event.bytes = bytes_;
  tracer_->record(std::move(event));
}

}  // namespace pipeprof
