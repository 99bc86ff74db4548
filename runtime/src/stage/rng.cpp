// Deterministic random numbers: run a block with the default generators seeded, then restore them.
#include "stage/rng.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

namespace pipeprof {
namespace {

std::recursive_mutex& rngScopeMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

}  // namespace

SeededRngScope::SeededRngScope(std::uint64_t seed, const c10::Device& device) : lock_(rngScopeMutex()) {
  std::vector<at::Generator> generators{at::detail::getDefaultCPUGenerator()};
  if (!device.is_cpu()) {
    // Device-generic: dispatches to the CUDA generator at run time (CPU builds never get here).
    generators.push_back(at::globalContext().defaultGenerator(device));
  }
  for (auto& generator : generators) {
    std::lock_guard<std::mutex> guard(generator.mutex());
    saved_.push_back({generator, generator.get_state()});
    generator.set_current_seed(seed);
  }
}

SeededRngScope::~SeededRngScope() {
  for (auto& [generator, state] : saved_) {
    std::lock_guard<std::mutex> guard(generator.mutex());
    generator.set_state(state);
  }
}

std::uint64_t cellSeed(std::uint64_t base, std::int64_t i, std::int64_t j) {
  return mix(mix(base ^ mix(static_cast<std::uint64_t>(i))) ^ static_cast<std::uint64_t>(j));
}

std::uint64_t drawSeed() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> guard(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

at::Generator makeCpuGenerator(std::uint64_t seed) { return at::detail::createCPUGenerator(seed); }

}  // namespace pipeprof
