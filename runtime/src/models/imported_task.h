// What an imported (TorchScript) model trains on: the samples it takes and the loss of its output.
#pragma once

#include <pipeprof/runtime/models.h>

#include <torch/script.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// An imported model's inputs and loss, from ModelOptions, else the scripted module's
/// `pipeprof_*` attributes, else the defaults (float samples, MSE).
struct ImportedTask {
  enum class Input { Float, TokenIds };
  enum class Loss { Mse, CrossEntropy, NextToken };

  std::vector<std::int64_t> inputShape;  ///< one sample, without the batch dimension
  Input input = Input::Float;
  std::int64_t vocabSize = 0;  ///< TokenIds: ids are drawn from [0, vocabSize)
  Loss loss = Loss::Mse;
  std::int64_t numClasses = 0;  ///< CrossEntropy: labels are drawn from [0, numClasses)
};

/// Reads and checks the task of the module loaded from `path`. Throws std::invalid_argument
/// naming the file, the setting (flag and attribute) and what it needs.
ImportedTask importedTask(const torch::jit::Module& scripted, const ModelOptions& options, const std::string& path);

/// A shape as the messages write it: "[2, 5, 7]".
std::string shapeText(at::IntArrayRef sizes);

/// Sets the model's makeBatch (deterministic per seed) and loss for the task.
void applyTask(const ImportedTask& task, Model& model);

}  // namespace pipeprof
