// Streams of a Pipe's CUDA stages and the synchronisation of tensors handed between them.
//
// Every CUDA stage j computes on its own stream compute[j] (its worker makes it current
// for its ops) and owns two copy streams of its device, copy[j][Forward] (activations and
// skip tensors) and copy[j][Backward] (gradients), all drawn from the device's stream pool.
// A tensor x that stage a produced and stage b consumes goes like this:
//
//   compute[a]   op writes x ── record R
//                                  │
//   copy[a][d]                     └► wait R ─► read x  ─┐ x.to(b's device): ATen copies on the
//                                     record_stream(x)   │ source's current stream and makes the
//   copy[b][d]                          write y ◄────────┘ destination's current stream wait
//                                               ── record C
//                                                     │
//   compute[b]                                        └► wait C, record_stream(y), op reads y
//
//   - a and b on one CUDA device: no copy; compute[b] waits R and records x on itself.
//   - CPU -> CUDA: the copy runs on copy[b][d] alone; CUDA -> CPU: on copy[a][d] alone, and
//     it is synchronous (y is ready when .to() returns), so nothing waits for it.
//   - CPU -> CPU: nothing at all (no copy, no stream call).
//   record_stream tells the caching allocator that a block is in use on a stream other than
//   the one it was allocated on, so it is not handed out again before that stream's use ends.
//
// The caller's streams (the current streams of the thread calling forward or backward) are
// joined to the workers' like a fork and a join around each phase:
//
//   caller's current stream ── record F ─► every compute[j] waits F     (fork, forward start:
//                                                                        inputs, updated params)
//   every compute[j] ── record J ─► caller's current stream waits J     (join, end of forward and
//                                                                        of backward)
//
// Gradients coming from the caller's autograd graph are handed to the last stage with an
// event recorded on the stream autograd runs the hand-off node on.
#pragma once

#include "stage/microbatch.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace pipeprof {

/// The direction of a boundary copy: activations and skip tensors, or gradients.
enum class CopyDirection { Forward, Backward };

/// A recorded point on a stream after which some tensors may be read; null when no stream has
/// to wait (CPU tensors, a synchronous copy, or the caller's streams after a join).
using ReadyEvent = std::shared_ptr<const c10::Event>;

/// Tensors handed from one stage (or from the caller) to another.
struct Handover {
  Tensors tensors;
  ReadyEvent ready;
};

/// The streams of a Pipe's stages. CPU stages have none, and every call about them
/// returns at once. Thread-safe: workers call it concurrently.
class PipeStreams {
 public:
  /// One entry per stage. Draws the streams of the CUDA stages from the pools.
  /// memoryTags[j]: the memory-tracker tag stage j's streams count against (its pipeline
  /// device, so that the stages of one device add up); empty: tag j.
  explicit PipeStreams(std::vector<torch::Device> devices, std::vector<std::int64_t> memoryTags = {});

  /// An event on the calling thread's current stream of stage j's device, after the work
  /// enqueued so far (null on CPU).
  ReadyEvent markReady(std::int64_t j) const;
  /// Moves tensors of stage `from` to stage `to`'s device on the copy streams of
  /// `direction`; the result is ready after its event. Nothing happens when both stages are
  /// on one device (the consumer waits for `handover.ready` itself).
  Handover transfer(Handover handover, std::int64_t from, std::int64_t to, CopyDirection direction) const;
  /// Makes the calling thread's current stream of stage j's device wait for the handover
  /// and marks its tensors as used on that stream; returns the tensors.
  Tensors accept(Handover handover, std::int64_t j) const;

  /// Every compute stream waits for the calling thread's current stream of its device.
  void fork() const;
  /// The calling thread's current stream of every stage's device waits for its compute
  /// stream (call when the workers are idle).
  void join() const;

  /// Makes the CUDA caching allocator's blocks on stage j's streams count against its
  /// memory tag (memoryTags[j]), for every CUDA stage j, and no other streams'
  /// (device_memory.h).
  void attributeMemory() const;
  /// Makes stage j's compute stream current on the calling thread for the scope (nothing
  /// on CPU).
  class ComputeScope {
   public:
    ComputeScope(const PipeStreams& streams, std::int64_t j);

   private:
    c10::OptionalStreamGuard guard_;
  };
  /// Like ComputeScope, for work between steps that would otherwise run on the thread's current
  /// stream (the optimizer's): stage j's compute stream first waits for that stream, and
  /// that stream waits for it when the scope ends, so the work keeps its place in the thread's
  /// order while what it allocates (optimizer state, temporaries) counts against j's memory tag.
  class InOrderComputeScope {
   public:
    InOrderComputeScope(const PipeStreams& streams, std::int64_t j);
    ~InOrderComputeScope();
    InOrderComputeScope(const InOrderComputeScope&) = delete;
    InOrderComputeScope& operator=(const InOrderComputeScope&) = delete;

   private:
    std::optional<c10::Stream> caller_;  ///< the thread's current stream before the scope
    std::optional<c10::Stream> compute_;
    c10::OptionalStreamGuard guard_;
  };

 private:
  struct StageStreams {
    c10::Stream compute;
    std::array<c10::Stream, 2> copy;  ///< by CopyDirection
  };

  const std::optional<StageStreams>& of(std::int64_t j) const;
  const c10::Stream* copyStream(std::int64_t j, CopyDirection direction) const;

  std::vector<torch::Device> devices_;
  std::vector<std::int64_t> memoryTags_;
  std::vector<std::optional<StageStreams>> streams_;  ///< nullopt for CPU stages
  bool any_ = false;                                  ///< some stage has streams
};

}  // namespace pipeprof
