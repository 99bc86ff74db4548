// Zoo model "mlp": Linear layers of one width with ReLUs between them, a regression (MSE) task.
#include "models/zoo.h"

#include "stage/rng.h"

#include <string>

namespace pipeprof {

Model buildMlp(const ModelOptions& options) {
  const std::int64_t width = orDefault(options.width, 512);
  const std::int64_t depth = orDefault(options.depth, 8);  // Linear layers
  Model model;
  model.name = "mlp";
  {
    SeededRngScope rng(static_cast<std::uint64_t>(options.seed));
    for (std::int64_t d = 0; d < depth; ++d) {
      model.sequential->push_back("fc" + std::to_string(d), torch::nn::Linear(width, width));
      if (d + 1 < depth) {
        model.sequential->push_back("relu" + std::to_string(d), torch::nn::ReLU());
      }
    }
  }
  model.defaultBatch = 64;
  model.makeBatch = [width](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    Batch b;
    b.input = torch::randn({batch, width}, generator, torch::kFloat32);
    b.target = torch::randn({batch, width}, generator, torch::kFloat32);
    return b;
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) { return torch::mse_loss(output, target); };
  return model;
}

}  // namespace pipeprof
