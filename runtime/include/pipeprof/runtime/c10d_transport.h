// The c10d transport: a TCPStore rendezvous and a Gloo (CPU) or NCCL (CUDA) process group.
#pragma once

#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/transport.h>

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>

namespace pipeprof {

/// Joins the world `environment` describes: rank 0 hosts the TCPStore at (masterAddr,
/// masterPort) unless environment.externalStore says a launcher hosts it; every rank then
/// creates a ProcessGroupGloo (a CPU device) or ProcessGroupNCCL (a CUDA device) over it.
/// `timeout` bounds the rendezvous and every later receive, wait and barrier. Throws
/// std::runtime_error naming the address when the rendezvous fails or times out, and
/// std::invalid_argument for a CUDA device when this LibTorch has no NCCL.
std::unique_ptr<Transport> connectC10d(const RankEnvironment& environment, const torch::Device& device,
                                       std::chrono::milliseconds timeout);

/// The c10d backend connectC10d uses on a device of `deviceType` ("cpu", "cuda"): "gloo" on a
/// CPU, "nccl" on CUDA.
std::string c10dBackendName(const std::string& deviceType);

/// The rendezvous store of a world a launcher starts (`pipeprof run --procs N`). Hosted by the
/// launcher, it outlives every rank, so the failure a rank publishes survives that rank.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  /// The TCP port it listens on (the one the ranks get as MASTER_PORT).
  virtual int port() const = 0;
  /// The first failure a rank published, or empty.
  virtual std::string publishedFailure() = 0;
};

/// Starts a TCPStore server on `address` and a free port. Throws std::runtime_error when it
/// cannot listen.
std::unique_ptr<RendezvousStore> hostRendezvousStore(const std::string& address, std::chrono::milliseconds timeout);

}  // namespace pipeprof
