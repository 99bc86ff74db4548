// Deferred batch norm: running statistics updated once per mini-batch, not once per micro-batch.
#include <pipeprof/runtime/deferred_batch_norm.h>

#include <pipeprof/runtime/layer_hooks.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace pipeprof {
namespace {

template <typename BatchNorm>
bool copyFrom(const torch::nn::Module& module, DeferredBatchNormImpl& target) {
  const auto* batchNorm = dynamic_cast<const BatchNorm*>(&module);
  if (batchNorm == nullptr) {
    return false;
  }
  target.options = batchNorm->options;
  target.weight = batchNorm->weight;
  target.bias = batchNorm->bias;
  target.running_mean = batchNorm->running_mean;
  target.running_var = batchNorm->running_var;
  target.num_batches_tracked = batchNorm->num_batches_tracked;
  return true;
}

}  // namespace

bool isBatchNorm(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::BatchNorm1dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&module) != nullptr ||
         dynamic_cast<const torch::nn::BatchNorm3dImpl*>(&module) != nullptr;
}

DeferredBatchNormImpl::DeferredBatchNormImpl(const torch::nn::Module& batchNorm) : options(1) {
  if (!copyFrom<torch::nn::BatchNorm1dImpl>(batchNorm, *this) &&
      !copyFrom<torch::nn::BatchNorm2dImpl>(batchNorm, *this) &&
      !copyFrom<torch::nn::BatchNorm3dImpl>(batchNorm, *this)) {
    throw std::invalid_argument("DeferredBatchNorm can only replace a BatchNorm1d, BatchNorm2d or BatchNorm3d (got " +
                                batchNorm.name() + ")");
  }
  const bool affine = options.affine();
  weight = register_parameter("weight", weight, /*requires_grad=*/affine && weight.requires_grad());
  bias = register_parameter("bias", bias, /*requires_grad=*/affine && bias.requires_grad());
  running_mean = register_buffer("running_mean", running_mean);
  running_var = register_buffer("running_var", running_var);
  num_batches_tracked = register_buffer("num_batches_tracked", num_batches_tracked);
}

DeferredBatchNormImpl::DeferredBatchNormImpl(const torch::nn::BatchNormOptions& options, torch::Tensor weight,
                                             torch::Tensor bias, torch::Tensor runningMean, torch::Tensor runningVar,
                                             torch::Tensor numBatchesTracked)
    : options(options),
      weight(std::move(weight)),
      bias(std::move(bias)),
      running_mean(std::move(runningMean)),
      running_var(std::move(runningVar)),
      num_batches_tracked(std::move(numBatchesTracked)) {}

torch::Tensor DeferredBatchNormImpl::forward(const torch::Tensor& input) {
  if (input.dim() < 2) {
    throw std::invalid_argument("DeferredBatchNorm expects an input of at least 2 dimensions (got " +
                                std::to_string(input.dim()) + ")");
  }
  const bool tracking = options.track_running_stats();
  if (!is_training() && tracking) {
    return torch::batch_norm(input, weight, bias, running_mean, running_var, /*training=*/false, 0.0, options.eps(),
                             torch::globalContext().userEnabledCuDNN());
  }
  torch::Tensor output = torch::batch_norm(input, weight, bias, torch::Tensor(), torch::Tensor(), /*training=*/true,
                                           0.0, options.eps(), torch::globalContext().userEnabledCuDNN());
  if (tracking) accumulate(input);
  return output;
}

void DeferredBatchNormImpl::accumulate(const torch::Tensor& input) {
  if (isRecomputing()) return;
  torch::NoGradGuard noGrad;
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d = 2; d < input.dim(); ++d) {
    dims.push_back(d);
  }
  const torch::Tensor x = input.detach();
  torch::Tensor sum = x.sum(dims);
  torch::Tensor sumOfSquares = (x * x).sum(dims);
  if (count_ == 0) {
    sum_ = sum;
    sumOfSquares_ = sumOfSquares;
  } else {
    sum_.add_(sum);
    sumOfSquares_.add_(sumOfSquares);
  }
  count_ += input.numel() / input.size(1);
}

void DeferredBatchNormImpl::commit() {
  if (count_ == 0) {
    return;
  }
  torch::NoGradGuard noGrad;
  const auto count = static_cast<double>(count_);
  torch::Tensor mean = sum_ / count;
  torch::Tensor variance = sumOfSquares_ / count - mean * mean;
  if (count_ > 1) {
    variance = variance * (count / (count - 1.0));
  }
  num_batches_tracked.add_(1);
  const double factor = options.momentum().has_value()
                            ? options.momentum().value()
                            : 1.0 / static_cast<double>(num_batches_tracked.item<std::int64_t>());
  running_mean.mul_(1.0 - factor).add_(mean.to(running_mean.dtype()) * factor);
  running_var.mul_(1.0 - factor).add_(variance.to(running_var.dtype()) * factor);
  resetStatistics();
}

void DeferredBatchNormImpl::resetStatistics() {
  sum_ = torch::Tensor();
  sumOfSquares_ = torch::Tensor();
  count_ = 0;
}

torch::nn::Sequential withDeferredBatchNorm(const torch::nn::Sequential& module,
                                            std::vector<std::shared_ptr<DeferredBatchNormImpl>>& converted) {
  torch::nn::Sequential result;
  auto named = module->named_children();
  for (std::size_t index = 0; index < module->size(); ++index) {
    const auto& child = named[index].value();
    if (isBatchNorm(*child)) {
      auto deferred = std::make_shared<DeferredBatchNormImpl>(*child);
      deferred->train(child->is_training());
      converted.push_back(deferred);
      result->push_back(named[index].key(), torch::nn::AnyModule(deferred));
      continue;
    }
    const auto* inner = dynamic_cast<const InnerBatchNorms*>(child.get());
    if (inner != nullptr && !inner->innerBatchNorms().empty()) {
      result->push_back(named[index].key(), inner->withDeferredBatchNorms(converted));
      continue;
    }
    for (const auto& descendant : child->modules(/*include_self=*/false)) {
      if (isBatchNorm(*descendant)) {
        throw std::invalid_argument(
            "deferredBatchNorm converts only BatchNorm layers of the Sequential itself, but layer " +
            std::to_string(index) + " ('" + named[index].key() +
            "') contains a nested BatchNorm; make it a layer of its own or turn "
            "deferredBatchNorm off");
      }
    }
    result->push_back(named[index].key(), *std::next(module->begin(), static_cast<std::ptrdiff_t>(index)));
  }
  result->train(module->is_training());
  return result;
}

}  // namespace pipeprof
