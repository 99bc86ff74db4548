// The c10d transport: a TCPStore rendezvous and a Gloo (CPU) or NCCL (CUDA) process group.
#include <pipeprof/runtime/c10d_transport.h>

#include "transport/c10d_group.h"
#include "transport/transport_threads.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace pipeprof {
namespace {

using c10d_detail::PointToPointGroup;

constexpr const char* kFailureKey = "failure";
constexpr const char* kFailureCountKey = "failure_count";

bool isLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

/// The network device Gloo binds to: the interface GLOO_SOCKET_IFNAME names (as in PyTorch),
/// loopback when the master is on this host's loopback, else the host name's address.
std::shared_ptr<::gloo::transport::Device> glooDevice(const RankEnvironment& environment) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (isLoopback(environment.masterAddr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

std::unique_ptr<PointToPointGroup> makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                 const RankEnvironment& environment,
                                                 std::chrono::milliseconds timeout) {
  // Gloo's event loop must not preempt the computing thread to spin on a lock that thread holds
  // (transport_threads.h).
  return withStartedThreadsAsBatch([&] {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(glooDevice(environment));
    return std::make_unique<c10d_detail::GroupAdapter<c10d::ProcessGroupGloo>>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, environment.rank, environment.worldSize, options));
  });
}

std::string messageOf(const std::exception& error) {
  if (const auto* torchError = dynamic_cast<const c10::Error*>(&error)) return torchError->what_without_backtrace();
  return error.what();
}

/// Gloo and NCCL report a timeout in words; everything else is a lost peer.
TransportError transportError(const std::exception& error, int peer, const std::string& what) {
  const std::string text = messageOf(error);
  const bool timedOut = text.find("imed out") != std::string::npos || text.find("imeout") != std::string::npos;
  return TransportError(what + ": " + text, peer, timedOut);
}

/// A c10d send (Pending = PendingSend) or receive (Transport::PendingReceive) in flight: its
/// tensors stay alive until wait() returned.
template <typename Pending>
class C10dPending final : public Pending {
 public:
  C10dPending(std::vector<at::Tensor> tensors, c10::intrusive_ptr<c10d::Work> work, int peer)
      : tensors_(std::move(tensors)), work_(std::move(work)), peer_(peer) {}

  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& error) {
      throw transportError(error, peer_, failedWith(peer_));
    }
  }

  static std::string failedWith(int peer) {
    constexpr bool sending = std::is_same_v<Pending, PendingSend>;
    return (sending ? "sending to rank " : "receiving from rank ") + std::to_string(peer) + " failed";
  }

 private:
  std::vector<at::Tensor> tensors_;
  c10::intrusive_ptr<c10d::Work> work_;
  int peer_;
};
using C10dSend = C10dPending<PendingSend>;
using C10dReceive = C10dPending<Transport::PendingReceive>;

class C10dTransport final : public Transport {
 public:
  C10dTransport(const RankEnvironment& environment, const torch::Device& device, c10::intrusive_ptr<c10d::Store> store,
                std::unique_ptr<PointToPointGroup> group)
      : environment_(environment), device_(device), store_(std::move(store)), group_(std::move(group)) {}

  int rank() const override { return environment_.rank; }
  int worldSize() const override { return environment_.worldSize; }
  torch::Device device() const override { return device_; }

  std::unique_ptr<PendingSend> send(const torch::Tensor& tensor, int toRank, std::uint32_t tag) override {
    std::vector<at::Tensor> tensors{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = group_->send(tensors, toRank, static_cast<int>(tag));
    } catch (const std::exception& error) {
      throw transportError(error, toRank, C10dSend::failedWith(toRank));
    }
    // Gloo's (CPU) loop thread, which does not preempt this one, may hold the receiver's notice
    // that lets this message go (the send left it to that thread): let it run now, not when this
    // thread next waits, a whole op later (transport_threads.h).
    if (!device_.is_cuda()) std::this_thread::yield();
    return std::make_unique<C10dSend>(std::move(tensors), std::move(work), toRank);
  }

  void receive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) override {
    postReceive(tensor, fromRank, tag)->wait();
  }

  std::unique_ptr<PendingReceive> postReceive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) override {
    std::vector<at::Tensor> tensors{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = group_->recv(tensors, fromRank, static_cast<int>(tag));
    } catch (const std::exception& error) {
      throw transportError(error, fromRank, C10dReceive::failedWith(fromRank));
    }
    return std::make_unique<C10dReceive>(std::move(tensors), std::move(work), fromRank);
  }

  void barrier() override {
    try {
      group_->barrier()->wait();
    } catch (const std::exception& error) {
      // In a world of two the barrier waits on the other rank alone; past that Gloo does not say which.
      const int peer = environment_.worldSize == 2 ? 1 - environment_.rank : -1;
      throw transportError(error, peer, "the barrier failed");
    }
  }

  void publishFailure(const std::string& message) noexcept override {
    try {
      if (store_->add(kFailureCountKey, 1) == 1)
        store_->set(kFailureKey, std::vector<std::uint8_t>(message.begin(), message.end()));
    } catch (...) {
      // The store's host is gone too: the other ranks report what they saw themselves.
    }
  }

  std::string publishedFailure() noexcept override {
    try {
      if (!store_->check({kFailureKey})) return {};
      const std::vector<std::uint8_t> value = store_->get(kFailureKey);
      return std::string(value.begin(), value.end());
    } catch (...) {
      return {};
    }
  }

 private:
  RankEnvironment environment_;
  torch::Device device_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<PointToPointGroup> group_;
};

class TcpRendezvousStore final : public RendezvousStore {
 public:
  explicit TcpRendezvousStore(c10::intrusive_ptr<c10d::TCPStore> store)
      : store_(std::move(store)), prefixed_(c10::make_intrusive<c10d::PrefixStore>("pipeprof", store_)) {}

  int port() const override { return store_->getPort(); }

  std::string publishedFailure() override {
    try {
      if (!prefixed_->check({kFailureKey})) return {};
      const std::vector<std::uint8_t> value = prefixed_->get(kFailureKey);
      return std::string(value.begin(), value.end());
    } catch (const std::exception&) {
      return {};
    }
  }

 private:
  c10::intrusive_ptr<c10d::TCPStore> store_;
  c10::intrusive_ptr<c10d::PrefixStore> prefixed_;
};

}  // namespace

std::unique_ptr<RendezvousStore> hostRendezvousStore(const std::string& address, std::chrono::milliseconds timeout) {
  try {
    c10d::TCPStoreOptions options;
    options.port = 0;
    options.isServer = true;
    options.waitWorkers = false;
    options.timeout = timeout;
    return std::make_unique<TcpRendezvousStore>(c10::make_intrusive<c10d::TCPStore>(address, options));
  } catch (const std::exception& error) {
    throw std::runtime_error("could not start the rendezvous store on " + address + ": " + messageOf(error));
  }
}

std::string c10dBackendName(const std::string& deviceType) { return deviceType == "cuda" ? "nccl" : "gloo"; }

std::unique_ptr<Transport> connectC10d(const RankEnvironment& environment, const torch::Device& device,
                                       std::chrono::milliseconds timeout) {
  const std::string where = environment.masterAddr + ":" + std::to_string(environment.masterPort);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(environment.masterPort);
    options.isServer = environment.rank == 0 && !environment.externalStore;
    options.waitWorkers = false;
    options.timeout = timeout;
    auto tcpStore = c10::make_intrusive<c10d::TCPStore>(environment.masterAddr, options);
    store = c10::make_intrusive<c10d::PrefixStore>("pipeprof", tcpStore);
  } catch (const std::exception& error) {
    throw std::runtime_error("rank " + std::to_string(environment.rank) + " could not reach the rendezvous store at " +
                             where + " within " + std::to_string(timeout.count()) + " ms: " + messageOf(error));
  }
  std::unique_ptr<PointToPointGroup> group;
  try {
    group = device.is_cuda()
                ? c10d_detail::makeNcclGroup(store, environment.rank, environment.worldSize, device, timeout)
                : makeGlooGroup(store, environment, timeout);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& error) {
    throw std::runtime_error("rank " + std::to_string(environment.rank) + " of " +
                             std::to_string(environment.worldSize) + " could not form the process group over " + where +
                             ": " + messageOf(error));
  }
  return std::make_unique<C10dTransport>(environment, device, std::move(store), std::move(group));
}

}  // namespace pipeprof
