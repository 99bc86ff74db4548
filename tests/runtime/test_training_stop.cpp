// Tests for TrainingOptions::stop: the threaded and the rank training loops stop after the step in which stop was
// asked.
#include <pipeprof/core/stop_token.h>
#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/rank_training.h>
#include <pipeprof/runtime/training_loop.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <thread>

namespace pipeprof {
namespace {

/// An identity layer that counts its training forwards and requests stop in the first one
/// (a rank's shape agreement runs it once in eval mode first).
struct StopRequesterImpl : torch::nn::Module {
  StopRequesterImpl(StopSource* source, std::atomic<int>* forwards) : source_(source), forwards_(forwards) {}
  torch::Tensor forward(const torch::Tensor& input) {
    if (!is_training()) return input;
    ++*forwards_;
    source_->requestStop();
    return input;
  }
  StopSource* source_;
  std::atomic<int>* forwards_;
};
TORCH_MODULE(StopRequester);

/// Linear, the stop requester, linear: 3 layers of width 4.
Model stoppingModel(StopSource& source, std::atomic<int>& forwards) {
  torch::manual_seed(0);
  Model model;
  model.name = "stopping";
  model.sequential =
      torch::nn::Sequential(torch::nn::Linear(4, 4), StopRequester(&source, &forwards), torch::nn::Linear(4, 4));
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    torch::manual_seed(seed);
    return Batch{torch::randn({batch, 4}), torch::randn({batch, 4})};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  return model;
}

TrainingOptions options(const StopSource& source, std::vector<torch::Device> devices) {
  TrainingOptions options;
  options.balance = {2, 1};
  options.devices = std::move(devices);
  options.chunks = 2;
  options.checkpoint = Checkpoint::Never;  // no recomputed forwards
  options.batch = 4;
  options.warmupSteps = 3;
  options.steps = 3;
  options.stop = source.token();
  return options;
}

TEST(TrainingStop, TheThreadedLoopStopsAfterTheFirstWarmUpStep) {
  StopSource source;
  std::atomic<int> forwards{0};
  Model model = stoppingModel(source, forwards);
  EXPECT_THROW(trainAndMeasure(model, options(source, {torch::kCPU, torch::kCPU})), TrainingStopped);
  EXPECT_EQ(forwards.load(), 2) << "one step of two micro-batches, not the other warm-up steps";
}

TEST(TrainingStop, EveryRankStopsAfterTheFirstWarmUpStep) {
  StopSource source;
  std::atomic<int> forwards{0};
  InProcessWorld world(2, std::chrono::seconds(30));
  std::vector<Model> models{stoppingModel(source, forwards), stoppingModel(source, forwards)};
  std::atomic<int> stopped{0};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      auto transport = world.transport(rank);
      try {
        trainRank(models[static_cast<std::size_t>(rank)], options(source, {torch::kCPU, torch::kCPU}), *transport);
      } catch (const TrainingStopped&) {
        ++stopped;
      } catch (...) {
        world.kill(rank);
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(stopped.load(), 2);
  EXPECT_EQ(forwards.load(), 2) << "rank 0 ran one step of two micro-batches";
}

}  // namespace
}  // namespace pipeprof
