// CUPTI activity records as plain structs, independent of the CUPTI headers (same field meanings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL. Times are device timestamps in ns (CUPTI's clock);
/// 0 is unknown (CUPTI_TIMESTAMP_UNKNOWN).
struct KernelRecord {
  std::string name;
  std::uint64_t startNs = 0;
  std::uint64_t endNs = 0;
  /// When the launch was written into the command buffer (during the launching call on the host)
  /// and when that buffer was submitted to the GPU: only with latency timestamps on (cheap mode).
  std::uint64_t queuedNs = 0;
  std::uint64_t submittedNs = 0;
  std::uint32_t deviceId = 0;
  std::uint32_t contextId = 0;
  std::uint32_t streamId = 0;
  std::uint32_t correlationId = 0;  ///< the launching runtime/driver call's correlation id
  std::int32_t gridX = 0, gridY = 0, gridZ = 0;
  std::int32_t blockX = 0, blockY = 0, blockZ = 0;
};

/// Direction of a copy, as CUpti_ActivityMemcpyKind (only the kinds pipeprof names).
enum class MemcpyKind { Unknown, HostToDevice, DeviceToHost, DeviceToDevice, PeerToPeer, Other };

/// "HtoD", "DtoH", "DtoD", "PtoP", "other", "unknown".
std::string memcpyKindName(MemcpyKind kind);

/// CUPTI_ACTIVITY_KIND_MEMCPY.
struct MemcpyRecord {
  MemcpyKind copyKind = MemcpyKind::Unknown;
  std::uint64_t bytes = 0;
  std::uint64_t startNs = 0;
  std::uint64_t endNs = 0;
  std::uint32_t deviceId = 0;
  std::uint32_t contextId = 0;
  std::uint32_t streamId = 0;
  std::uint32_t correlationId = 0;
};

/// CUPTI_ACTIVITY_KIND_MEMSET.
struct MemsetRecord {
  std::uint64_t bytes = 0;
  std::uint64_t startNs = 0;
  std::uint64_t endNs = 0;
  std::uint32_t deviceId = 0;
  std::uint32_t contextId = 0;
  std::uint32_t streamId = 0;
  std::uint32_t correlationId = 0;
};

/// CUPTI_ACTIVITY_KIND_RUNTIME or _DRIVER: one API call on a host thread (device clock).
struct RuntimeApiRecord {
  bool driver = false;      ///< DRIVER rather than RUNTIME
  std::uint32_t cbid = 0;   ///< CUPTI callback id of the function
  std::string name;         ///< function name when known (e.g. "cudaLaunchKernel"), else empty
  std::uint64_t startNs = 0;
  std::uint64_t endNs = 0;
  std::uint32_t processId = 0;
  std::uint32_t threadId = 0;
  std::uint32_t correlationId = 0;
};

/// CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: ties a CUPTI correlation id to the external id
/// that was pushed when the API call was made (pipeprof pushes the op span's correlation id).
struct ExternalCorrelationRecord {
  std::uint64_t externalId = 0;
  std::uint32_t correlationId = 0;
};

/// The records of one completed activity buffer, copied out of CUPTI's memory. Within a
/// buffer and across buffers records may be in any order.
struct ActivityBuffer {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<RuntimeApiRecord> apiCalls;
  std::vector<ExternalCorrelationRecord> externalCorrelations;

  std::size_t size() const {
    return kernels.size() + memcpys.size() + memsets.size() + apiCalls.size() + externalCorrelations.size();
  }
};

/// One paired reading of the device (CUPTI) clock and the host tracer's clock, in ns.
struct ClockSample {
  std::int64_t deviceNs = 0;
  std::int64_t hostNs = 0;
};

}  // namespace pipeprof
