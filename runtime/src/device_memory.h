// Accelerator memory accounting for the Pipe (CUDA builds): the caching allocator's blocks,
// counted against the partition whose stream they were allocated on, and its device-wide peak.
#pragma once

#include <pipeprof/core/units.h>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace pipeprof {

/// A CUDA stream and the memory-tracker tag its blocks count against.
using StreamTag = std::pair<c10::Stream, std::int64_t>;

/// Makes `owned` the streams whose CUDA caching-allocator blocks count against a tag in the
/// memory tracker (liveBytes/peakBytes), replacing the previous set: blocks live on them now
/// (a cuBLAS workspace kept for the stream, say) move to their new tag, and blocks on streams
/// no longer owned stop counting. Partitions that share a device have their own streams, so
/// each is counted apart. CPU streams are ignored; nothing happens in builds without CUDA.
void attributeDeviceStreams(const std::vector<StreamTag>& owned);

/// Starts a new peak window of the caching allocator on `device` (nothing for CPU devices or
/// builds without CUDA).
void resetDevicePeakBytes(const c10::Device& device);

/// The caching allocator's highest allocated bytes on `device` since the last reset: the
/// whole device (every partition, stream and Pipe on it, the caller's tensors). nullopt for
/// CPU devices and builds without CUDA.
std::optional<Bytes> devicePeakBytes(const c10::Device& device);

}  // namespace pipeprof
