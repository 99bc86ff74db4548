// Shared helpers of the stage runtime tests: ranks as threads of one InProcessWorld, and their options.
#pragma once

#include <pipeprof/runtime/in_process_transport.h>
#include <pipeprof/runtime/stage_runtime.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof::test {

/// Runs body(rank, transport) for every rank of a world of p ranks, each on its own thread; a
/// rank that throws is killed (its peers see it gone). Returns every rank's error text, empty
/// where it succeeded.
inline std::vector<std::string> runRanks(int p, const std::function<void(int, Transport&)>& body,
                                         std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  InProcessWorld world(p, timeout);
  std::vector<std::string> errors(static_cast<std::size_t>(p));
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r) {
    ranks.emplace_back([&, r] {
      try {
        auto transport = world.transport(r);
        body(r, *transport);
      } catch (const std::exception& error) {
        errors[static_cast<std::size_t>(r)] = error.what();
        world.kill(r);
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  return errors;
}

/// The concatenated errors of runRanks ("" when every rank succeeded).
inline std::string joined(const std::vector<std::string>& errors) {
  std::string text;
  for (const std::string& error : errors) text += error;
  return text;
}

/// What one step on every rank gave: the loss (from the last stage's rank), every rank's
/// gradients by parameter name, and the ranks' errors joined ("" when all succeeded).
struct RanksStep {
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> grads;
  std::string errors;
};

/// One step of `options` on p ranks, rank r running models[r] (built by the caller: building
/// on the ranks' threads would race for the global seed).
inline RanksStep stepOnRanks(std::vector<torch::nn::Sequential> models, const StageOptions& options,
                             const torch::Tensor& input, const torch::Tensor& target, const LossFn& lossFn) {
  std::mutex mutex;
  RanksStep result;
  const auto errors = runRanks(static_cast<int>(models.size()), [&](int rank, Transport& transport) {
    StageRuntime runtime(models[static_cast<std::size_t>(rank)], options, transport);
    const torch::Tensor loss = runtime.step(input, target, lossFn, 0);
    const auto names = runtime.parameterNames();
    const auto parameters = runtime.parameters();
    std::lock_guard<std::mutex> lock(mutex);
    if (loss.defined()) result.loss = loss;
    for (std::size_t k = 0; k < names.size(); ++k) result.grads[names[k]] = parameters[k].grad();
  });
  result.errors = joined(errors);
  return result;
}

inline StageOptions stageOptions(ScheduleKind kind, std::int64_t v, std::vector<std::int64_t> balance,
                                 std::int64_t chunks, Checkpoint mode) {
  StageOptions options;
  options.balance = std::move(balance);
  options.schedule = kind;
  options.stagesPerDevice = v;
  options.chunks = chunks;
  options.checkpoint = mode;
  return options;
}

}  // namespace pipeprof::test
