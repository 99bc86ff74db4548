// An in-process transport: threads of one process stand in for ranks (tests, the fake of c10d).
#include <pipeprof/runtime/in_process_transport.h>

#include <stdexcept>

namespace pipeprof {

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(InProcessWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int worldSize() const override { return world_.worldSize_; }
  torch::Device device() const override { return torch::kCPU; }

  std::unique_ptr<PendingSend> send(const torch::Tensor& tensor, int toRank, std::uint32_t tag) override {
    checkPeer(toRank);
    std::lock_guard<std::mutex> lock(world_.mutex_);
    world_.inFlight_[{rank_, toRank, tag}].push_back(tensor.clone());
    world_.log_.push_back({rank_, toRank, tag, tensor.sizes().vec()});
    world_.changed_.notify_all();
    return std::make_unique<Done>();
  }

  void receive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) override {
    checkPeer(fromRank);
    std::unique_lock<std::mutex> lock(world_.mutex_);
    const InProcessWorld::Key key{fromRank, rank_, tag};
    const auto ready = [&] {
      auto it = world_.inFlight_.find(key);
      return (it != world_.inFlight_.end() && !it->second.empty()) || world_.dead_[static_cast<std::size_t>(fromRank)];
    };
    if (!world_.changed_.wait_for(lock, world_.timeout_, ready)) {
      throw TransportError("rank " + std::to_string(fromRank) + " sent nothing under tag " + std::to_string(tag) +
                               " within " + std::to_string(world_.timeout_.count()) + " ms",
                           fromRank, true);
    }
    auto it = world_.inFlight_.find(key);
    if (it == world_.inFlight_.end() || it->second.empty()) {
      throw TransportError("rank " + std::to_string(fromRank) + " is gone (connection closed)", fromRank, false);
    }
    torch::Tensor message = std::move(it->second.front());
    it->second.erase(it->second.begin());
    lock.unlock();
    if (message.sizes() != tensor.sizes() || message.scalar_type() != tensor.scalar_type()) {
      throw std::logic_error("message from rank " + std::to_string(fromRank) + " under tag " + std::to_string(tag) +
                             " does not have the agreed shape and dtype");
    }
    tensor.copy_(message);
  }

  std::unique_ptr<PendingReceive> postReceive(torch::Tensor& tensor, int fromRank, std::uint32_t tag) override {
    checkPeer(fromRank);
    return std::make_unique<LazyReceive>(*this, tensor, fromRank, tag);
  }

  void barrier() override {
    std::unique_lock<std::mutex> lock(world_.mutex_);
    const std::int64_t generation = world_.barrierGeneration_;
    if (++world_.barrierArrived_ == world_.worldSize_) {
      world_.barrierArrived_ = 0;
      ++world_.barrierGeneration_;
      world_.changed_.notify_all();
      return;
    }
    const auto passed = [&] {
      if (world_.barrierGeneration_ != generation) return true;
      for (bool dead : world_.dead_) {
        if (dead) return true;
      }
      return false;
    };
    if (!world_.changed_.wait_for(lock, world_.timeout_, passed)) {
      throw TransportError("the barrier timed out after " + std::to_string(world_.timeout_.count()) + " ms", -1, true);
    }
    if (world_.barrierGeneration_ == generation)
      throw TransportError("a rank is gone: the barrier cannot pass", -1, false);
  }

  void publishFailure(const std::string& message) noexcept override {
    std::lock_guard<std::mutex> lock(world_.mutex_);
    if (world_.failure_.empty()) world_.failure_ = message;
  }

  std::string publishedFailure() noexcept override {
    std::lock_guard<std::mutex> lock(world_.mutex_);
    return world_.failure_;
  }

 private:
  struct Done final : PendingSend {
    void wait() override {}
  };
  /// Messages wait in the world until taken, so a posted receive simply receives when waited on.
  struct LazyReceive final : PendingReceive {
    LazyReceive(InProcessTransport& transport, torch::Tensor& tensor, int fromRank, std::uint32_t tag)
        : transport(transport), tensor(tensor), fromRank(fromRank), tag(tag) {}
    void wait() override { transport.receive(tensor, fromRank, tag); }
    InProcessTransport& transport;
    torch::Tensor tensor;
    int fromRank;
    std::uint32_t tag;
  };

  void checkPeer(int peer) const {
    if (peer < 0 || peer >= world_.worldSize_ || peer == rank_) {
      throw std::invalid_argument("rank " + std::to_string(rank_) + " cannot talk to rank " + std::to_string(peer) +
                                  " in a world of " + std::to_string(world_.worldSize_));
    }
  }

  InProcessWorld& world_;
  int rank_;
};

InProcessWorld::InProcessWorld(int worldSize, std::chrono::milliseconds timeout)
    : worldSize_(worldSize), timeout_(timeout), dead_(static_cast<std::size_t>(worldSize), false) {
  if (worldSize < 1) throw std::invalid_argument("a world needs at least one rank, got " + std::to_string(worldSize));
}

std::unique_ptr<Transport> InProcessWorld::transport(int rank) {
  if (rank < 0 || rank >= worldSize_) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside a world of " +
                                std::to_string(worldSize_));
  }
  return std::make_unique<InProcessTransport>(*this, rank);
}

std::vector<SentMessage> InProcessWorld::messages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_;
}

void InProcessWorld::kill(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  dead_.at(static_cast<std::size_t>(rank)) = true;
  changed_.notify_all();
}

}  // namespace pipeprof
