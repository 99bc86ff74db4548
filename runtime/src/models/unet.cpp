// Zoo model "unet": an encoder-decoder whose skip connections use stash/pop (image to image, MSE).
#include "models/layers.h"
#include "models/zoo.h"

#include "stage/rng.h"

#include <string>

namespace pipeprof {
namespace {

constexpr std::int64_t kUnetImageSize = 32;

torch::nn::Conv2d conv3x3(std::int64_t in, std::int64_t out) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1));
}

}  // namespace

Model buildUnet(const ModelOptions& options) {
  const std::int64_t width = orDefault(options.width, 16);
  const std::int64_t levels = orDefault(options.depth, 2);
  if ((kUnetImageSize >> levels) < 1) {
    throw std::invalid_argument("unet depth " + std::to_string(levels) + " halves a " + std::to_string(kUnetImageSize) +
                                "-pixel image below one pixel; use a depth of at most 5");
  }
  Model model;
  model.name = "unet";
  {
    SeededRngScope rng(static_cast<std::uint64_t>(options.seed));
    auto& s = model.sequential;
    std::int64_t channels = 3;
    for (std::int64_t k = 0; k < levels; ++k) {
      const std::string p = "enc" + std::to_string(k) + "_";
      const std::int64_t out = width << k;
      s->push_back(p + "conv", conv3x3(channels, out));
      s->push_back(p + "relu", torch::nn::ReLU());
      s->push_back(p + "stash", StashLayer("skip" + std::to_string(k)));
      s->push_back(p + "pool", torch::nn::MaxPool2d(2));
      channels = out;
    }
    const std::int64_t middle = width << levels;
    s->push_back("mid_conv", conv3x3(channels, middle));
    s->push_back("mid_relu", torch::nn::ReLU());
    channels = middle;
    for (std::int64_t k = levels - 1; k >= 0; --k) {
      const std::string p = "dec" + std::to_string(k) + "_";
      const std::int64_t out = width << k;
      s->push_back(p + "up",
                   torch::nn::Upsample(
                       torch::nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kNearest)));
      s->push_back(p + "concat", PopConcat("skip" + std::to_string(k)));
      s->push_back(p + "conv", conv3x3(channels + out, out));
      s->push_back(p + "relu", torch::nn::ReLU());
      channels = out;
    }
    s->push_back("head", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 3, 1)));
  }
  model.skips = skipRoutes(model.sequential);
  model.defaultBatch = 16;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    Batch b;
    b.input = torch::randn({batch, 3, kUnetImageSize, kUnetImageSize}, generator, torch::kFloat32);
    b.target = torch::randn({batch, 3, kUnetImageSize, kUnetImageSize}, generator, torch::kFloat32);
    return b;
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  return model;
}

}  // namespace pipeprof
