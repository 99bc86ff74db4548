// Deterministic random numbers: run a block with the default generators seeded, then restore them.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace pipeprof {

/// Seeds the default CPU generator, and the default generator of `device` when it is not the
/// CPU (e.g. cuda:1's, which CUDA dropout draws from), with `seed` for the scope and restores
/// their previous states afterwards. Scopes are serialised by one process-wide mutex, so
/// concurrent pipeline workers each see exactly their own sequence.
class SeededRngScope {
 public:
  explicit SeededRngScope(std::uint64_t seed, const c10::Device& device = c10::Device(c10::kCPU));
  ~SeededRngScope();
  SeededRngScope(const SeededRngScope&) = delete;
  SeededRngScope& operator=(const SeededRngScope&) = delete;

 private:
  struct Saved {
    at::Generator generator;
    at::Tensor state;
  };

  std::unique_lock<std::recursive_mutex> lock_;
  std::vector<Saved> saved_;  ///< the CPU generator first
};

/// A well-mixed 64-bit seed for micro-batch i on stage j of the step whose base seed is base.
std::uint64_t cellSeed(std::uint64_t base, std::int64_t i, std::int64_t j);

/// Draws a 64-bit seed from the default CPU generator (advances it).
std::uint64_t drawSeed();

/// A fresh CPU generator seeded with `seed` (for deterministic batches).
at::Generator makeCpuGenerator(std::uint64_t seed);

}  // namespace pipeprof
