// Accelerator memory accounting for the Pipe: the CUDA caching allocator's blocks, counted
// against the partition whose stream they were allocated on (CUDA builds).
#pragma once

#include <c10/core/Stream.h>

#include <cstdint>
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

}  // namespace pipeprof
