// The threaded Pipe's stage channel: tensors handed over between the workers of one process.
//
// A tensor one stage sends waits in a slot until the receiving stage's worker takes it; the
// receiver blocks on its own condition (one per stage, so a hand-over wakes only the worker it
// concerns). Every tensor that crosses stages goes through PipeStreams (streams.h), which
// copies it to the receiver's device and synchronises the CUDA streams; between CPU stages it
// passes as is. Who copies: the receiver copies activations and skips (its "copy" span), the
// sender copies gradients, as the schedule's copy ops are drawn.
#pragma once

#include "stage/stage_core.h"
#include "threaded/streams.h"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace pipeprof {

/// Thrown by a receive of an abandoned channel (another op failed); never the step's error.
struct StepAborted {};

class ThreadChannel final : public ForwardChannel, public BackwardChannel {
 public:
  /// traceDevices: by stage, the trace device of its pipeline device (copy spans).
  ThreadChannel(const Schedule& schedule, const PipeStreams& streams, HostTracer* tracer,
                std::vector<std::string> traceDevices);

  // The receiver copies activations and skips to its device: a "copy" span on its lane.
  Tensors receiveActivations(std::int64_t i, std::int64_t j) override;
  void sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) override;
  void sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) override;
  torch::Tensor receiveSkip(const StageSkipRoute& route, std::int64_t i) override;
  // The sender copies gradients to the receiver's device.
  Tensors receiveOutputGrads(std::int64_t i, std::int64_t j) override;
  void sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) override;
  void sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) override;
  torch::Tensor receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) override;

  /// forward() then backward(): the caller's gradients of the last stage's outputs, one entry per
  /// micro-batch, produced on the calling thread's current streams.
  void setOutputGrads(std::vector<Tensors> grads);
  /// The gradients stage 0 sent back for micro-batch i, for use on the calling thread's current
  /// streams (after the workers joined); undefined where an input got none.
  Tensors inputGrads(std::int64_t i) const;

  /// Wakes every waiting receive, which then throws StepAborted, and every later one.
  void abandon();
  bool abandoned() const;
  /// Frees every tensor still waiting in a slot.
  void release();

 private:
  /// What waits between a sender and a receiver. Activations and gradients are keyed by
  /// (micro-batch, the sending stage of the forward edge j -> j + 1); skips and their gradients
  /// by (micro-batch, skip index).
  enum class Slot { Activations, OutputGrads, Skip, SkipGrad, InputGrads };
  using Key = std::tuple<Slot, std::int64_t, std::int64_t>;

  void put(const Key& key, Handover handover, std::int64_t receiverJ);
  /// Blocks the worker of stage j until the slot is filled; throws StepAborted when abandoned.
  Handover take(const Key& key, std::int64_t j);
  /// Moves a handover to stage `to`'s device under a copy span.
  Handover transfer(Handover handover, std::int64_t from, std::int64_t to, CopyDirection direction,
                    const Op& copy) const;

  const Schedule& schedule_;
  const PipeStreams& streams_;
  HostTracer* tracer_;
  std::vector<std::string> traceDevices_;

  mutable std::mutex mutex_;
  std::vector<std::condition_variable> changed_;  ///< per stage
  std::map<Key, Handover> slots_;
  bool abandoned_ = false;
};

}  // namespace pipeprof
