// Autocast for one thread: the scopes the stage threads open around a step and a backward.
#include "stage/autocast.h"

#include "stage/autocast_state.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <string>

namespace pipeprof {

void validatePrecision(Precision precision, const torch::Device& device) {
  if (precision == Precision::Fp16 && !device.is_cuda()) {
    throw std::invalid_argument("precision fp16 needs a CUDA device, got " + device.str() +
                                ": LibTorch autocasts CPU ops to bf16 only (use bf16)");
  }
}

c10::ScalarType computeType(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return c10::ScalarType::Float;
    case Precision::Bf16: return c10::ScalarType::BFloat16;
    case Precision::Fp16: return c10::ScalarType::Half;
  }
  return c10::ScalarType::Float;
}

void clearAutocastCache() { at::autocast::clear_cache(); }

std::vector<torch::Tensor> uncachedInputs(const std::vector<torch::Tensor>& leaves, Precision precision) {
  if (precision == Precision::Fp32) return leaves;
  std::vector<torch::Tensor> views;
  views.reserve(leaves.size());
  for (const torch::Tensor& leaf : leaves)
    views.push_back(leaf.defined() && leaf.requires_grad() ? leaf.view_as(leaf) : leaf);
  return views;
}

AutocastCacheOff::AutocastCacheOff() : previous_(at::autocast::is_autocast_cache_enabled()) {
  at::autocast::set_autocast_cache_enabled(false);
}

AutocastCacheOff::~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(previous_); }

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : active_(precision != Precision::Fp32), type_(device.is_cuda() ? c10::DeviceType::CUDA : c10::DeviceType::CPU) {
  if (!active_) return;
  previousEnabled_ = autocast_state::enabled(type_);
  previousDtype_ = autocast_state::dtype(type_);
  autocast_state::setDtype(type_, computeType(precision));
  autocast_state::setEnabled(type_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  autocast_state::setEnabled(type_, previousEnabled_);
  autocast_state::setDtype(type_, previousDtype_);
}

AutocastPause::AutocastPause()
    : cpuEnabled_(autocast_state::enabled(c10::DeviceType::CPU)),
      cudaEnabled_(autocast_state::enabled(c10::DeviceType::CUDA)) {
  if (cpuEnabled_) autocast_state::setEnabled(c10::DeviceType::CPU, false);
  if (cudaEnabled_) autocast_state::setEnabled(c10::DeviceType::CUDA, false);
}

AutocastPause::~AutocastPause() {
  if (cpuEnabled_) autocast_state::setEnabled(c10::DeviceType::CPU, true);
  if (cudaEnabled_) autocast_state::setEnabled(c10::DeviceType::CUDA, true);
}

}  // namespace pipeprof
