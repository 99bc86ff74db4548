// Zoo model "resnet": a flattened bottleneck CNN whose residuals are skip connections (stash/pop).
#include "models/layers.h"
#include "models/zoo.h"

#include "stage/rng.h"

#include <string>

namespace pipeprof {
namespace {

constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kResnetImageSize = 32;

torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(false));
}

}  // namespace

Model buildResnet(const ModelOptions& options) {
  const std::int64_t width = orDefault(options.width, 64);
  const std::int64_t blocks = orDefault(options.depth, 4);
  const std::int64_t mid = std::max<std::int64_t>(1, width / 4);
  Model model;
  model.name = "resnet";
  {
    SeededRngScope rng(static_cast<std::uint64_t>(options.seed));
    auto& s = model.sequential;
    s->push_back("stem_conv", conv(3, width, 3));
    s->push_back("stem_bn", torch::nn::BatchNorm2d(width));
    s->push_back("stem_relu", torch::nn::ReLU());
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::string p = "block" + std::to_string(b) + "_";
      const std::string skip = "residual" + std::to_string(b);
      s->push_back(p + "stash", StashLayer(skip));
      s->push_back(p + "conv1", conv(width, mid, 1));
      s->push_back(p + "bn1", torch::nn::BatchNorm2d(mid));
      s->push_back(p + "relu1", torch::nn::ReLU());
      s->push_back(p + "conv2", conv(mid, mid, 3));
      s->push_back(p + "bn2", torch::nn::BatchNorm2d(mid));
      s->push_back(p + "relu2", torch::nn::ReLU());
      s->push_back(p + "conv3", conv(mid, width, 1));
      s->push_back(p + "bn3", torch::nn::BatchNorm2d(width));
      s->push_back(p + "add", PopAddRelu(skip));
    }
    s->push_back("pool", torch::nn::AdaptiveAvgPool2d(1));
    s->push_back("flatten", torch::nn::Flatten());
    s->push_back("fc", torch::nn::Linear(width, kClasses));
  }
  model.skips = skipRoutes(model.sequential);
  model.defaultBatch = 32;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    Batch b;
    b.input = torch::randn({batch, 3, kResnetImageSize, kResnetImageSize}, generator, torch::kFloat32);
    b.target = torch::randint(0, kClasses, {batch}, generator, torch::kLong);
    return b;
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::nn::functional::cross_entropy(output, target);
  };
  return model;
}

}  // namespace pipeprof
