// The point-to-point transport between the ranks of a multi-process pipeline: send, receive, barrier.
//
// The stage runtime talks to other ranks only through this interface; c10d (Gloo on CPU,
// NCCL on CUDA) sits behind it in c10d_transport.cpp, and tests use InProcessTransport
// (threads of one process standing in for ranks). Messages are matched by (peer, tag) and
// carry one tensor whose shape and dtype both sides agreed beforehand.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace pipeprof {

/// A send in flight. wait() returns once the tensor may be reused (the data left this rank or
/// the receiver has it); it throws TransportError like a receive.
class PendingSend {
 public:
  virtual ~PendingSend() = default;
  virtual void wait() = 0;
};

/// A peer that is gone (its connection closed) or silent past the timeout.
class TransportError : public std::runtime_error {
 public:
  TransportError(const std::string& message, int peer, bool timedOut)
      : std::runtime_error(message), peer_(peer), timedOut_(timedOut) {}
  /// The rank this rank was waiting on, or -1 when it is not known.
  int peer() const { return peer_; }
  bool timedOut() const { return timedOut_; }

 private:
  int peer_;
  bool timedOut_;
};

/// One rank's end of the process group.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// The device tensors travel from and to (CPU for Gloo, the rank's CUDA device for NCCL).
  virtual torch::Device device() const = 0;

  /// Starts sending `tensor` (contiguous, on device()) to `toRank` under `tag`; the tensor must
  /// stay alive and unchanged until the returned send's wait() returned.
  virtual std::unique_ptr<PendingSend> send(const torch::Tensor& tensor, int toRank, std::uint32_t tag) = 0;
  /// Receives the message `fromRank` sent under `tag` into `tensor` (contiguous, on device(),
  /// the agreed shape and dtype). Blocks up to the transport's timeout; throws TransportError
  /// when the peer is gone or the timeout passed.
  virtual void receive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) = 0;
  /// A receive in flight: the message lands in `tensor` (which must stay alive) by wait().
  class PendingReceive {
   public:
    virtual ~PendingReceive() = default;
    /// Blocks like receive() until the message is in the tensor; throws TransportError like it.
    virtual void wait() = 0;
  };
  /// Starts receiving into `tensor` (as receive() would) and returns at once: a receive posted
  /// before the peer sends lets the data move as soon as it is sent.
  virtual std::unique_ptr<PendingReceive> postReceive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) = 0;
  /// Returns when every rank called it; throws TransportError like receive.
  virtual void barrier() = 0;

  /// Publishes this rank's failure so the other ranks can name it in their own error
  /// (best effort: never throws).
  virtual void publishFailure(const std::string& message) noexcept = 0;
  /// The first failure a rank published, or empty when none did or it cannot be read.
  virtual std::string publishedFailure() noexcept = 0;
};

}  // namespace pipeprof
