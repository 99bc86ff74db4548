// Shared by the CUDA tests (label gpu): they skip themselves without a CUDA device.
#pragma once

#include <pipeprof/runtime/models.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>

#define PIPEPROF_REQUIRE_CUDA()                            \
  if (!torch::cuda::is_available()) {                      \
    GTEST_SKIP() << "no CUDA device: the CUDA tests skip"; \
  }

namespace pipeprof::test {

inline const torch::Device kCuda0(torch::kCUDA, 0);

/// Two 1024-wide Linear + ReLU pairs (4 MiB of weights each), seeded alike every time, an MSE
/// loss in fp32: large enough that the library workspaces and the optimizer's state show.
inline Model twoWideLinears() {
  torch::manual_seed(3);
  torch::nn::Sequential sequential;
  sequential->push_back("fc0", torch::nn::Linear(1024, 1024));
  sequential->push_back("relu1", torch::nn::ReLU());
  sequential->push_back("fc2", torch::nn::Linear(1024, 1024));
  sequential->push_back("relu3", torch::nn::ReLU());
  Model model;
  model.name = "test";
  model.sequential = sequential;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = at::detail::createCPUGenerator(static_cast<std::uint64_t>(seed));
    return Batch{torch::randn({batch, 1024}, generator), torch::randn({batch, 1024}, generator)};
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::mse_loss(output.to(torch::kFloat), target);
  };
  return model;
}

}  // namespace pipeprof::test
