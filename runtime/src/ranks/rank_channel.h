// A rank's stage channel: the tensors that cross stages are messages over the transport.
//
// Every message's shape and dtype was agreed at set-up (AgreedShapes), so a receive posts a
// buffer of the right size before the peer sends. Activations go forward and their gradients
// back between the ranks of stages j and j + 1; skip tensors go straight from the stashing rank
// to the popping one and their gradients back. A message to the rank itself (two of its virtual
// stages) stays in memory. Sends are asynchronous and completed at the end of the step (the
// executor calls Mailbox::finishSends()). When tracing, every message is a span on the rank's
// "send" or "receive" lane with a flow arrow from sender to receiver, and the device work its
// send or its receive's post launched (NCCL's kernels) is attributed to that span.
#pragma once

#include "ranks/stage_messages.h"
#include "stage/stage_core.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace pipeprof {

class HostTracer;

/// The shapes every message of a step has, by micro-batch rows, and which gradients travel
/// back: those the set-up pass's backward gave (shape_channel.h). A tensor that gets no
/// gradient gets no message, so its producer's backward leaves it out, as the threaded Pipe's does.
struct AgreedShapes {
  std::map<std::pair<std::int64_t, std::int64_t>, TensorSpecs> activations;  ///< (stage j of edge j -> j+1, rows)
  std::map<std::pair<std::int64_t, std::int64_t>, TensorSpec> skips;         ///< (skip index, rows)
  /// Same keys: per activation, whether its gradient travels back from stage j + 1.
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<bool>> activationGradients;
  std::map<std::pair<std::int64_t, std::int64_t>, bool> skipGradients;  ///< same keys as skips
};

/// What a rank's channel works with; fixed between steps except the step's schedule and tags.
struct RankChannelContext {
  const Schedule* schedule = nullptr;
  const std::vector<StageSkipRoute>* routes = nullptr;
  const MessageTags* tags = nullptr;
  const AgreedShapes* shapes = nullptr;
  Mailbox* mailbox = nullptr;
  torch::Device device = torch::kCPU;  ///< where received tensors go
  HostTracer* tracer = nullptr;
  std::string traceDevice;
  std::int64_t stepIndex = 0;  ///< flows of the traces: unique ids across steps

  int rankOf(std::int64_t j) const { return static_cast<int>(schedule->deviceOf(j)); }
};

class RankChannel final : public ForwardChannel, public BackwardChannel {
 public:
  /// rows: every micro-batch's rows (which agreed shapes its messages have).
  RankChannel(const RankChannelContext& context, std::vector<std::int64_t> rows);

  /// Posts the receives `op` will wait for, so their data can arrive while earlier ops compute.
  void postReceivesOf(const Op& op);

  /// sendActivations throws std::runtime_error when the outputs' shapes differ from the agreed ones.
  Tensors receiveActivations(std::int64_t i, std::int64_t j) override;
  void sendActivations(std::int64_t i, std::int64_t j, const Tensors& outputs) override;
  void sendSkip(const StageSkipRoute& route, std::int64_t i, const torch::Tensor& tensor) override;
  torch::Tensor receiveSkip(const StageSkipRoute& route, std::int64_t i) override;
  /// Gradients travel where the set-up found one (AgreedShapes); elsewhere they are undefined.
  /// A send throws std::runtime_error for a gradient the set-up found none for, and sends zeros
  /// for a missing one the set-up found (the receiver posted its receive).
  Tensors receiveOutputGrads(std::int64_t i, std::int64_t j) override;
  void sendInputGrads(std::int64_t i, std::int64_t j, Tensors grads) override;
  void sendSkipGrad(const StageSkipRoute& route, std::int64_t i, torch::Tensor grad) override;
  torch::Tensor receiveSkipGrad(const StageSkipRoute& route, std::int64_t i) override;

 private:
  const TensorSpecs& activationSpecs(std::int64_t j, std::int64_t i) const;
  const TensorSpec& skipSpec(std::int64_t skip, std::int64_t i) const;
  const std::vector<bool>& activationGradients(std::int64_t j, std::int64_t i) const;
  bool skipGradient(std::int64_t skip, std::int64_t i) const;
  std::string copyLabel(OpKind kind, std::int64_t i, std::int64_t fromJ, std::int64_t toJ, bool gradient,
                        std::int64_t skip) const;
  /// Receives / sends one message, tracing it as a span with a flow from sender to receiver.
  torch::Tensor receive(const TensorSpec& spec, int fromRank, std::uint32_t tag, const std::string& label);
  void send(const torch::Tensor& tensor, int toRank, std::uint32_t tag, const std::string& label);
  /// Posts one receive; when tracing, keeps the id its device work was launched under for its span.
  void post(const TensorSpec& spec, int fromRank, std::uint32_t tag);
  /// The message's span; `correlationId` is the device work's (a NCCL kernel's) op id.
  void traceMessage(bool sending, const torch::Tensor& tensor, int peer, std::uint32_t tag, const std::string& label,
                    TimeNs startNs, std::int64_t correlationId) const;
  /// The gradient messages of the tensors of `specs` whose gradient travels (`travels`).
  /// `what` names the tensors in an error ("stage 2's inputs").
  void sendGradients(const Tensors& grads, const TensorSpecs& specs, const std::vector<bool>& travels, int toRank,
                     MessageKind kind, std::int64_t edge, std::int64_t i, std::int64_t skip, const std::string& label,
                     const std::string& what);
  Tensors receiveGradients(const TensorSpecs& specs, const std::vector<bool>& travels, int fromRank, MessageKind kind,
                           std::int64_t edge, std::int64_t i, std::int64_t skip, const std::string& label);

  const RankChannelContext& context_;
  std::vector<std::int64_t> rows_;
  /// Traced posted receives not yet received: (from rank, tag) -> the correlation id they were posted under.
  std::map<std::pair<int, std::uint32_t>, std::int64_t> postedCorrelations_;
};

}  // namespace pipeprof
