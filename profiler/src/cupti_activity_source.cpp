// The CUPTI activity source: the only code that includes CUPTI headers (chosen by CMake).
//
// Record structs: CUPTI writes each record in the newest layout of its version; pipeprof reads
// only the leading fields, which are identical in every layout since CUDA 11, through the struct
// names present in both CUDA 12.x and 13.0: CUpti_ActivityKernel9 (CONCURRENT_KERNEL),
// CUpti_ActivityMemcpy5 (MEMCPY), CUpti_ActivityMemset4 (MEMSET), CUpti_ActivityAPI (RUNTIME,
// DRIVER) and CUpti_ActivityExternalCorrelation. (In 13.0 the first two live in
// cupti_activity_deprecated.h, which cupti_activity.h includes.) The serialising KERNEL kind is
// never enabled.
//
// CUPTI's activity callbacks are process-wide, so one source records at a time; start() on a
// second one fails with a reason. Buffers are 4 MiB, 8-byte aligned, handed out and taken back
// by CUPTI's threads under a mutex.
#include <pipeprof/profiler/activity_source.h>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

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
  CuptiActivitySource() {
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
    if (!check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(&bufferRequested, &bufferCompleted))) {
      gRecording.store(nullptr);
      return false;
    }
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
    for (CUpti_ActivityKind kind : kinds) {
      if (!check("cuptiActivityEnable", cuptiActivityEnable(kind))) {
        disableAll();
        gRecording.store(nullptr);
        return false;
      }
      enabled_.push_back(kind);
    }
    dropped_.store(0);
    recording_ = true;
    return true;
  }

  void stop() override {
    if (!recording_) return;
    recording_ = false;
    // Every launched kernel must have finished before its record can be flushed.
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess) {
      for (int d = 0; d < deviceCount_; ++d) {
        if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
      }
      (void)cudaSetDevice(previous);
    }
    (void)check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    disableAll();
    gRecording.store(nullptr);
  }

  std::vector<ActivityBuffer> takeBuffers() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(completed_, {});
  }

  std::int64_t droppedRecords() const override { return dropped_.load(); }

  void pushExternalCorrelation(std::uint64_t externalId) override {
    if (recording_) (void)cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, externalId);
  }
  void popExternalCorrelation() override {
    std::uint64_t last = 0;
    if (recording_) (void)cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
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

 private:
  bool check(const char* call, CUptiResult result) {
    if (result == CUPTI_SUCCESS) return true;
    if (reason_.empty()) reason_ = "CUPTI collector unavailable: " + cuptiError(call, result);
    return false;
  }

  void disableAll() {
    for (CUpti_ActivityKind kind : enabled_) (void)cuptiActivityDisable(kind);
    enabled_.clear();
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
        r.gridX = k.gridX, r.gridY = k.gridY, r.gridZ = k.gridZ;
        r.blockX = k.blockX, r.blockY = k.blockY, r.blockZ = k.blockZ;
        out.kernels.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy5&>(record);
        out.memcpys.push_back(MemcpyRecord{toMemcpyKind(m.copyKind), m.bytes, m.start, m.end, m.deviceId,
                                           m.contextId, m.streamId, m.correlationId});
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
        out.apiCalls.push_back(RuntimeApiRecord{driver, a.cbid, apiName(driver, a.cbid), a.start, a.end,
                                                a.processId, a.threadId, a.correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
        out.externalCorrelations.push_back(ExternalCorrelationRecord{e.externalId, e.correlationId});
        break;
      }
      default:
        break;
    }
  }

  std::string reason_;
  int deviceCount_ = 0;
  bool recording_ = false;
  std::vector<CUpti_ActivityKind> enabled_;
  std::atomic<std::int64_t> dropped_{0};
  std::mutex mutex_;
  std::vector<ActivityBuffer> completed_;
};

}  // namespace

std::unique_ptr<ActivitySource> makeCuptiActivitySource() { return std::make_unique<CuptiActivitySource>(); }

}  // namespace pipeprof
