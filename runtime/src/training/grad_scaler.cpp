// fp16's dynamic loss scaling.
#include <pipeprof/runtime/grad_scaler.h>

#include <stdexcept>
#include <string>

namespace pipeprof {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.initScale) {
  if (!(options_.initScale > 0)) {
    throw std::invalid_argument("the loss scale must be positive, got " + std::to_string(options_.initScale));
  }
  if (!(options_.growthFactor > 1) || !(options_.backoffFactor > 0 && options_.backoffFactor < 1)) {
    throw std::invalid_argument("the loss scale's growth factor must exceed 1 and its backoff lie in (0, 1)");
  }
  if (options_.growthInterval < 1) {
    throw std::invalid_argument("the loss scale's growth interval must be positive, got " +
                                std::to_string(options_.growthInterval));
  }
}

bool GradScaler::unscale(const std::vector<torch::Tensor>& parameters, double scale) {
  torch::NoGradGuard noGrad;
  bool foundInf = false;
  for (const torch::Tensor& parameter : parameters) {
    torch::Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    grad.mul_(1.0 / scale);
    if (!foundInf && !torch::isfinite(grad).all().item<bool>()) foundInf = true;
  }
  return foundInf;
}

void GradScaler::update(bool foundInf) {
  if (foundInf) {
    scale_ *= options_.backoffFactor;
    goodSteps_ = 0;
    return;
  }
  if (++goodSteps_ == options_.growthInterval) {
    scale_ *= options_.growthFactor;
    goodSteps_ = 0;
  }
}

}  // namespace pipeprof
