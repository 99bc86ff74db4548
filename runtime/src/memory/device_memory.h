// Accelerator memory accounting for the Pipe (CUDA builds): the caching allocator's blocks,
// counted against the stage whose stream they were allocated on, and its device-wide peak.
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
/// no longer owned stop counting. Stages that share a device have their own streams, so
/// each is counted apart. CPU streams are ignored; nothing happens in builds without CUDA.
void attributeDeviceStreams(const std::vector<StreamTag>& owned);

/// Starts a new peak window of the caching allocator on `device` (nothing for CPU devices or
/// builds without CUDA).
void resetDevicePeakBytes(const c10::Device& device);

/// The caching allocator's highest allocated bytes on `device` since the last reset: the
/// whole device (every stage, stream and Pipe on it, the caller's tensors). nullopt for
/// CPU devices and builds without CUDA.
std::optional<Bytes> devicePeakBytes(const c10::Device& device);

/// CUDA streams of their own for the layer profiler: the blocks the caching allocator hands out
/// on stream t count against memory-tracker tag t (as a Pipe's stage streams do), so the
/// layer that runs on stream t is measured under tag t wherever its tensors are freed -- its
/// backward too, which the autograd engine runs on the stream of the forward.
///
///   layer:   0         1         2   ...      each run with its stream current, the device
///   stream:  s0 -> t0  s1 -> t1  s2 -> t2     synchronised between layers
///
/// On destruction the device is synchronised, the library workspaces that running on these
/// streams created are freed (clearLibraryWorkspaces), the streams stop counting and are
/// destroyed. On a CPU device, or in a build without CUDA, there are no streams (stream()
/// returns nullopt) and nothing is counted.
class TaggedStreams {
 public:
  /// `count` streams, tags 0 .. count-1, on `device`.
  TaggedStreams(const c10::Device& device, std::int64_t count);
  ~TaggedStreams();
  TaggedStreams(const TaggedStreams&) = delete;
  TaggedStreams& operator=(const TaggedStreams&) = delete;

  /// The stream counting against `tag`; nullopt when there are none.
  std::optional<c10::Stream> stream(std::int64_t tag) const;

 private:
  c10::Device device_;
  std::vector<c10::Stream> streams_;
  std::vector<void*> handles_;  ///< the cudaStream_t of each stream, owned
};

}  // namespace pipeprof
