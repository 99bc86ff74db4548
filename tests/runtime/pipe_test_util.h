// Shared helpers of the runtime tests: small models built twice alike, and tensor comparisons.
#pragma once

#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipeprof::test {

/// A zoo model's size knobs and seed (ModelOptions; the other fields at their defaults).
inline ModelOptions sized(std::int64_t width, std::int64_t depth, std::int64_t seed) {
  ModelOptions options;
  options.width = width;
  options.depth = depth;
  options.seed = seed;
  return options;
}

/// The PipeOptions most tests use: devices, chunks, checkpoint mode and deferred batch norm
/// (the schedule gpipe, one stage per device; the balance given to the Pipe).
inline PipeOptions pipeOptions(std::vector<torch::Device> devices, std::int64_t chunks, Checkpoint checkpoint,
                               bool deferredBatchNorm) {
  PipeOptions options;
  options.devices = std::move(devices);
  options.chunks = chunks;
  options.checkpoint = checkpoint;
  options.deferredBatchNorm = deferredBatchNorm;
  return options;
}

/// Builds a Sequential of `layers` layers (Linear and Tanh alternating, width 8) with a fixed seed.
inline torch::nn::Sequential linearTanh(std::int64_t layers, std::int64_t seed = 0, std::int64_t width = 8) {
  torch::manual_seed(seed);
  torch::nn::Sequential sequential;
  for (std::int64_t k = 0; k < layers; ++k) {
    if (k % 2 == 0) {
      sequential->push_back("fc" + std::to_string(k), torch::nn::Linear(width, width));
    } else {
      sequential->push_back("tanh" + std::to_string(k), torch::nn::Tanh());
    }
  }
  return sequential;
}

/// fc0, drop1 (p 0.5), fc2, drop3 (p 0.3), width 16, with a fixed seed.
inline torch::nn::Sequential dropoutModel() {
  torch::manual_seed(11);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(16, 16));
  model->push_back("drop1", torch::nn::Dropout(0.5));
  model->push_back("fc2", torch::nn::Linear(16, 16));
  model->push_back("drop3", torch::nn::Dropout(0.3));
  return model;
}

/// fc0 (4 -> 6), relu1, bn2 (BatchNorm1d), relu3, flatten4, with a fixed seed.
inline torch::nn::Sequential bnModel() {
  torch::manual_seed(2);
  torch::nn::Sequential model;
  model->push_back("fc0", torch::nn::Linear(4, 6));
  model->push_back("relu1", torch::nn::ReLU());
  model->push_back("bn2", torch::nn::BatchNorm1d(6));
  model->push_back("relu3", torch::nn::ReLU());
  model->push_back("flatten4", torch::nn::Flatten());
  return model;
}

/// Every buffer of `expected` equals the one of the same name in `actual` (floating ones to 1e-4).
inline void expectSameBuffers(const torch::nn::Sequential& expected, const torch::nn::Sequential& actual) {
  auto buffers = actual->named_buffers();
  for (const auto& item : expected->named_buffers()) {
    if (item.value().is_floating_point()) {
      EXPECT_TRUE(torch::allclose(buffers[item.key()], item.value(), 1e-4, 1e-4)) << item.key();
    } else {
      EXPECT_TRUE(torch::equal(buffers[item.key()], item.value())) << item.key();
    }
  }
}

/// Every composition of `layers` into positive parts (all balances).
inline std::vector<std::vector<std::int64_t>> allBalances(std::int64_t layers) {
  std::vector<std::vector<std::int64_t>> result;
  for (std::int64_t mask = 0; mask < (std::int64_t{1} << (layers - 1)); ++mask) {
    std::vector<std::int64_t> balance{1};
    for (std::int64_t k = 0; k < layers - 1; ++k) {
      if ((mask >> k) & 1) {
        balance.push_back(1);
      } else {
        ++balance.back();
      }
    }
    result.push_back(balance);
  }
  return result;
}

inline std::string text(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    out += (k ? "," : "") + std::to_string(values[k]);
  }
  return out + "]";
}

inline bool close(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.defined() != b.defined()) {
    return false;
  }
  return !a.defined() || (a.sizes() == b.sizes() && torch::allclose(a, b, /*rtol=*/1e-5, /*atol=*/1e-6));
}

}  // namespace pipeprof::test
