// One training step of one rank: its device's ops in schedule order, tensors to other ranks as messages.
//
// The same cells and ops as the threaded pipeline (pipeline.h), run by one thread: where a
// worker there waits for a cell another worker fills, a rank here receives a message. Every
// partition still owns its autograd graph (its inputs and popped skips are leaves), so
// backward(i, j) is one torch::autograd::backward on this rank, and the gradients of its
// leaves are what it sends back.
#pragma once

#include "microbatch.h"
#include "partition.h"
#include "stage_messages.h"

#include <pipeprof/core/schedule.h>
#include <pipeprof/runtime/pipe.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof {

class HostTracer;

/// The shapes every message of a step has, by micro-batch rows (agreed at set-up).
struct AgreedShapes {
  std::map<std::pair<std::int64_t, std::int64_t>, TensorSpecs> activations;  ///< (stage j of edge j -> j+1, rows)
  std::map<std::pair<std::int64_t, std::int64_t>, TensorSpec> skips;         ///< (skip index, rows)
};

/// What a rank's steps run with; fixed between steps.
struct StageContext {
  const Schedule* schedule = nullptr;
  std::map<std::int64_t, const Partition*> partitions;  ///< this rank's stages, by j
  std::vector<PartitionSkipRoute> routes;
  torch::Device device = torch::kCPU;
  std::string deviceName;  ///< trace device
  const MessageTags* tags = nullptr;
  const AgreedShapes* shapes = nullptr;
  Mailbox* mailbox = nullptr;
  HostTracer* tracer = nullptr;
  std::int64_t memoryTag = 0;  ///< allocation tag of this rank's thread
  Bytes parameterBytes = 0;    ///< this rank's stages' parameters (memory counters)
  std::int64_t stepIndex = 0;  ///< flows of the traces: unique ids across steps

  int rankOf(std::int64_t j) const { return static_cast<int>(schedule->deviceOf(j)); }
  const Partition& partition(std::int64_t j) const { return *partitions.at(j); }
};

/// One step of one rank.
class RankStep {
 public:
  /// microBatches: the input's micro-batches (used on the rank of stage 0), targets: the
  /// target's (used on the last stage's rank), rows: every micro-batch's rows.
  RankStep(const StageContext& context, std::vector<Tensors> microBatches, std::vector<torch::Tensor> targets,
           std::vector<std::int64_t> rows, const LossFn& lossFn, std::int64_t batchRows, std::uint64_t baseSeed);

  /// Runs this rank's ops in Schedule::deviceOrder(rank), then waits for its sends. Throws
  /// PipeError naming the op, with the original exception (a TransportError, say) nested.
  void run();
  /// The sum of the micro-batches' weighted losses (the last stage's rank), else undefined.
  torch::Tensor lossSum() const;

 private:
  struct Cell {
    Tensors inputs;      ///< leaves (kept for backward and recompute)
    Tensors outputs;     ///< with graph unless checkpointed
    Tensors recomputed;  ///< recompute(i, j)'s outputs, with graph
    std::map<SkipKey, torch::Tensor> stashedOut;    ///< stashed for another stage (graph)
    std::map<SkipKey, torch::Tensor> poppedLeaves;  ///< popped from another stage
    torch::Tensor target;
    torch::Tensor loss;  ///< with graph, for backward
  };
  class Tracker;
  enum class Pass { Forward, Recompute };

  /// Posts the receives `op` will wait for (a rank posts the next op's while it runs one).
  void postReceivesOf(const Op& op);
  void forwardOp(const Op& op);
  void recomputeOp(const Op& op);
  void lossOp(const Op& op);
  void backwardOp(const Op& op);
  Tensors runPartition(std::int64_t i, std::int64_t j, Tensors inputs, Pass pass);
  torch::Tensor weightedLoss(const Tensors& outputs, const torch::Tensor& target) const;

  /// Receives / sends one message, tracing it as a span with a flow from sender to receiver.
  torch::Tensor receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const std::string& label);
  void send(const torch::Tensor& tensor, int toRank, std::uint32_t tag, const std::string& label);
  /// The span of a message on this rank's "send" or "receive" lane, and its end of the flow
  /// arrow (id: step and tag, the same on both ranks).
  void traceMessage(bool sending, const torch::Tensor& tensor, int peer, std::uint32_t tag, const std::string& label,
                    TimeNs startNs) const;
  /// The gradient messages of `specs`' floating tensors (a missing gradient goes as zeros).
  void sendGradients(const Tensors& grads, const TensorSpecs& specs, int toRank, MessageKind kind, std::int64_t edge,
                     std::int64_t i, std::int64_t skip, const std::string& label);
  Tensors receiveGradients(const TensorSpecs& specs, int fromRank, MessageKind kind, std::int64_t edge, std::int64_t i,
                           std::int64_t skip, const std::string& label);

  const TensorSpecs& activationSpecs(std::int64_t j, std::int64_t i) const;
  const TensorSpec& skipSpec(std::int64_t skip, std::int64_t i) const;
  std::string copyLabel(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient,
                        std::int64_t skip) const;
  Cell& cell(std::int64_t i, std::int64_t j);
  void recordMemory() const;

  const StageContext& context_;
  std::vector<Tensors> microBatches_;
  std::vector<std::int64_t> rows_;
  const LossFn& lossFn_;
  std::int64_t batchRows_;
  std::uint64_t baseSeed_;
  std::int64_t n_;
  std::map<std::pair<std::int64_t, std::int64_t>, Cell> cells_;  ///< (i, j)
  Tensors lossValues_;  ///< the weighted losses, detached (last stage)
};

}  // namespace pipeprof
