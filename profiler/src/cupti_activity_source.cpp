// The CUPTI activity source: the only code that includes CUPTI headers (chosen by CMake).
//
// Modes (docs/profiler.md, "CUPTI collector"):
//   cheap  CONCURRENT_KERNEL, MEMCPY, MEMSET and cuptiActivityEnableLatencyTimestamps(1), so each
//          kernel record carries when it was queued (during its launch call) and submitted.
//          No API records, and no EXTERNAL_CORRELATION either: cupti_activity.h documents
//          (cuptiActivityPushExternalCorrelationId) that an external correlation record is
//          written when an *API* activity record is created inside a pushed region, preceding
//          that record; kernels, copies and memsets carry only the correlation id of their API
//          call. With no RUNTIME/DRIVER records there is nothing for one to precede, so the
//          kind is left off and the pushes are skipped; the converter attributes by stream and
//          queue time instead. (The header also asks for the latency call before CUDA is
//          initialised; pipeprof starts a capture later, so the converter counts kernels that
//          come without a queue time and the summary line says so.)
//   exact  the same kinds without latency timestamps, EXTERNAL_CORRELATION, and the whole
//          RUNTIME and DRIVER kinds: an API record of every call, of which the converter keeps
//          the calls that launched work. Enabling only the launch calls' ids with
//          cuptiActivityEnableRuntimeApi / cuptiActivityEnableDriverApi, as cupti_activity.h
//          allows, returned success and recorded nothing on an H200 (CUDA 13.0, driver 580,
//          2026-12-04, scripts/cupti_launch_probe.cu), so exact mode attributed no kernel there.
//
// Record structs: CUPTI writes each record in the newest layout of its version; pipeprof reads
// only the leading fields, which are identical in every layout since CUDA 11, through the struct
// names present in both CUDA 12.x and 13.0: CUpti_ActivityKernel9 (CONCURRENT_KERNEL; queued and
// submitted are leading fields since Kernel4), CUpti_ActivityMemcpy5 (MEMCPY),
// CUpti_ActivityMemset4 (MEMSET), CUpti_ActivityAPI (RUNTIME, DRIVER) and
// CUpti_ActivityExternalCorrelation. (In 13.0 the first two live in cupti_activity_deprecated.h,
// which cupti_activity.h includes.) The serialising KERNEL kind is never enabled.
//
// CUPTI's activity callbacks are process-wide, so one source records at a time; start() on a
// second one fails with a reason. Buffers are 4 MiB, 8-byte aligned, handed out and taken back
// by CUPTI's threads under a mutex.
#include <pipeprof/profiler/activity_source.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof {

namespace {

constexpr std::size_t kBufferBytes = 4u << 20;
constexpr std::size_t kBufferAlign = 8;

std::string cuptiError(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  std::string line = std::string(call) + " failed: " + text;
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    line += " (profiling needs permission: run as root or set NVreg_RestrictProfilingToAdminUsers=0)";
  }
  return line;
}

std::string cudaError(const char* call, cudaError_t result) {
  return std::string(call) + " failed: " + cudaGetErrorString(result);
}

MemcpyKind toMemcpyKind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return MemcpyKind::HostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return MemcpyKind::DeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return MemcpyKind::DeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::PeerToPeer;
    case CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN: return MemcpyKind::Unknown;
    default: return MemcpyKind::Other;
  }
}

std::string apiName(bool driver, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return {};
  std::string text(name);
  // Runtime names carry a version suffix, e.g. "cudaLaunchKernel_v7000".
  const auto suffix = text.find("_v");
  if (suffix != std::string::npos) text.resize(suffix);
  return text;
}

class CuptiActivitySource;
// CUPTI's buffer callbacks are plain functions with no user pointer: they reach the recording
// source through this pointer (set while a source records).
std::atomic<CuptiActivitySource*> gRecording{nullptr};

class CuptiActivitySource final : public ActivitySource {
 public:
  explicit CuptiActivitySource(CuptiMode mode) : mode_(mode) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess) {
      reason_ = "CUPTI collector unavailable: " + cudaError("cudaGetDeviceCount", status);
    } else if (devices == 0) {
      reason_ = "CUPTI collector unavailable: no CUDA device";
    }
    deviceCount_ = devices;
  }
  ~CuptiActivitySource() override { stop(); }

  bool available() const override { return reason_.empty(); }
  std::string unavailableReason() const override { return reason_; }

  bool start() override {
    if (!available()) return false;
    CuptiActivitySource* expected = nullptr;
    if (!gRecording.compare_exchange_strong(expected, this)) {
      reason_ = "CUPTI collector unavailable: another capture is already recording in this process";
      return false;
    }
    note_.clear();
    if (!check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(&bufferRequested, &bufferCompleted))) {
      gRecording.store(nullptr);
      return false;
    }
    if (mode_ == CuptiMode::Cheap) {
      // Not fatal: without queue times the converter still attributes what it can and counts
      // the rest.
      const CUptiResult latency = cuptiActivityEnableLatencyTimestamps(1);
      latencyTimestamps_ = latency == CUPTI_SUCCESS;
      if (!latencyTimestamps_) {
        note_ = "no queue times: " + cuptiError("cuptiActivityEnableLatencyTimestamps", latency);
      }
    }
    std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                             CUPTI_ACTIVITY_KIND_MEMSET};
    if (mode_ == CuptiMode::Exact) {
      kinds.insert(kinds.end(),
                   {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER});
    }
    if (!enableKinds(kinds)) {
      disableAll();
      gRecording.store(nullptr);
      return false;
    }
    dropped_.store(0);
    recording_ = true;
    return true;
  }

  void stop() override {
    if (!recording_) return;
    flush();
    recording_ = false;
    disableAll();
    gRecording.store(nullptr);
  }

  void flush() override {
    if (!recording_) return;
    // Every launched kernel must have finished before its record can be flushed.
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess) {
      for (int d = 0; d < deviceCount_; ++d) {
        if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
      }
      (void)cudaSetDevice(previous);
    }
    (void)check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  }

  std::vector<ActivityBuffer> takeBuffers() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(completed_, {});
  }

  std::int64_t droppedRecords() const override { return dropped_.load(); }

  // Only while external correlation records are on (exact mode): in cheap mode no record
  // would carry the id.
  void pushExternalCorrelation(std::uint64_t externalId) override {
    if (recording_ && correlating()) {
      (void)cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, externalId);
    }
  }
  void popExternalCorrelation() override {
    std::uint64_t last = 0;
    if (recording_ && correlating()) {
      (void)cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    }
  }

  ClockSample clockSample(const std::function<std::int64_t()>& hostNowNs) override {
    // Host, device, host: the device reading is paired with the midpoint of the two host ones.
    const std::int64_t before = hostNowNs();
    std::uint64_t device = 0;
    const bool ok = cuptiGetTimestamp(&device) == CUPTI_SUCCESS;
    const std::int64_t after = hostNowNs();
    const std::int64_t host = before + (after - before) / 2;
    return ClockSample{ok ? static_cast<std::int64_t>(device) : host, host};
  }

  CuptiMode mode() const override { return mode_; }
  std::string modeNote() const override { return note_; }

 private:
  bool check(const char* call, CUptiResult result) {
    if (result == CUPTI_SUCCESS) return true;
    if (reason_.empty()) reason_ = "CUPTI collector unavailable: " + cuptiError(call, result);
    return false;
  }

  bool correlating() const {
    const CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    return std::find(enabled_.begin(), enabled_.end(), kind) != enabled_.end();
  }

  bool enableKinds(const std::vector<CUpti_ActivityKind>& kinds) {
    for (CUpti_ActivityKind kind : kinds) {
      if (!check("cuptiActivityEnable", cuptiActivityEnable(kind))) return false;
      enabled_.push_back(kind);
    }
    return true;
  }

  void disableAll() {
    for (CUpti_ActivityKind kind : enabled_) (void)cuptiActivityDisable(kind);
    enabled_.clear();
    if (latencyTimestamps_) (void)cuptiActivityEnableLatencyTimestamps(0);
    latencyTimestamps_ = false;
  }

  static void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *maxNumRecords = 0;  // as many as fit
  }

  static void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t /*size*/,
                                       size_t validSize) {
    CuptiActivitySource* self = gRecording.load();
    if (self != nullptr && buffer != nullptr) self->consume(context, streamId, buffer, validSize);
    std::free(buffer);
  }

  void consume(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t validSize) {
    ActivityBuffer out;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
      copyOut(*record, out);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, streamId, &dropped) == CUPTI_SUCCESS) {
      dropped_.fetch_add(static_cast<std::int64_t>(dropped));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    completed_.push_back(std::move(out));
  }

  static void copyOut(const CUpti_Activity& record, ActivityBuffer& out) {
    switch (record.kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto& k = reinterpret_cast<const CUpti_ActivityKernel9&>(record);
        KernelRecord r;
        r.name = k.name != nullptr ? k.name : "";
        r.startNs = k.start;
        r.endNs = k.end;
        r.deviceId = k.deviceId;
        r.contextId = k.contextId;
        r.streamId = k.streamId;
        r.correlationId = k.correlationId;
        r.queuedNs = k.queued;  // CUPTI_TIMESTAMP_UNKNOWN (0) without latency timestamps
        r.submittedNs = k.submitted;
        r.gridX = k.gridX, r.gridY = k.gridY, r.gridZ = k.gridZ;
        r.blockX = k.blockX, r.blockY = k.blockY, r.blockZ = k.blockZ;
        out.kernels.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy5&>(record);
        out.memcpys.push_back(MemcpyRecord{toMemcpyKind(m.copyKind), m.bytes, m.start, m.end, m.deviceId, m.contextId,
                                           m.streamId, m.correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
        out.memsets.push_back(
            MemsetRecord{m.bytes, m.start, m.end, m.deviceId, m.contextId, m.streamId, m.correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(record);
        const bool driver = record.kind == CUPTI_ACTIVITY_KIND_DRIVER;
        out.apiCalls.push_back(RuntimeApiRecord{driver, a.cbid, apiName(driver, a.cbid), a.start, a.end, a.processId,
                                                a.threadId, a.correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
        out.externalCorrelations.push_back(ExternalCorrelationRecord{e.externalId, e.correlationId});
        break;
      }
      default: break;
    }
  }

  CuptiMode mode_;
  std::string reason_;
  std::string note_;  ///< how the last start() set the mode up, when not as planned
  int deviceCount_ = 0;
  bool recording_ = false;
  bool latencyTimestamps_ = false;
  std::vector<CUpti_ActivityKind> enabled_;
  std::atomic<std::int64_t> dropped_{0};
  std::mutex mutex_;
  std::vector<ActivityBuffer> completed_;
};

}  // namespace

std::unique_ptr<ActivitySource> makeCuptiActivitySource(CuptiMode mode) {
  return std::make_unique<CuptiActivitySource>(mode);
}

}  // namespace pipeprof
