// An imported model's inputs (float samples or token ids) and loss (MSE, cross-entropy, next token).
#include "models/imported_task.h"

#include "stage/rng.h"

#include <stdexcept>

namespace pipeprof {

std::string shapeText(at::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t k = 0; k < sizes.size(); ++k) text += (k == 0 ? "" : ", ") + std::to_string(sizes[k]);
  return text + "]";
}

namespace {

/// One setting of the task: the option when given, else the attribute, else empty.
class Settings {
 public:
  Settings(const torch::jit::Module& scripted, std::string path) : scripted_(scripted), path_(std::move(path)) {}

  std::string text(const std::string& given, const std::string& attribute) const {
    if (!given.empty() || !scripted_.hasattr(attribute)) return given;
    const c10::IValue value = scripted_.attr(attribute);
    if (!value.isString()) fail(attribute + " must be a string");
    return value.toStringRef();
  }

  std::int64_t count(std::int64_t given, const std::string& attribute) const {
    if (given > 0 || !scripted_.hasattr(attribute)) return given;
    const c10::IValue value = scripted_.attr(attribute);
    if (!value.isInt() || value.toInt() < 1) fail(attribute + " must be a positive integer");
    return value.toInt();
  }

  std::vector<std::int64_t> shape(const std::vector<std::int64_t>& given, const std::string& attribute) const {
    if (!given.empty() || !scripted_.hasattr(attribute)) return given;
    const c10::IValue value = scripted_.attr(attribute);
    if (!value.isIntList()) fail(attribute + " must be a list of integers");
    return value.toIntVector();
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw std::invalid_argument("TorchScript model '" + path_ + "': " + problem);
  }

 private:
  const torch::jit::Module& scripted_;
  std::string path_;
};

}  // namespace

ImportedTask importedTask(const torch::jit::Module& scripted, const ModelOptions& options, const std::string& path) {
  const Settings settings(scripted, path);
  ImportedTask task;
  task.inputShape = settings.shape(options.inputShape, "pipeprof_input_shape");
  if (task.inputShape.empty()) {
    settings.fail("no input shape: give --input-shape (the shape of one sample, ModelOptions::inputShape) or the "
                  "scripted Sequential a `pipeprof_input_shape` list attribute");
  }
  for (std::int64_t size : task.inputShape) {
    if (size < 1) settings.fail("the input shape " + shapeText(task.inputShape) + " has a size below 1");
  }

  const std::string dtype = settings.text(options.inputDtype, "pipeprof_input_dtype");
  if (dtype == "long") {
    task.input = ImportedTask::Input::TokenIds;
    task.vocabSize = settings.count(options.vocabSize, "pipeprof_vocab_size");
    if (task.vocabSize < 1) {
      settings.fail("token ids (input dtype long) need a vocabulary size: --vocab-size or `pipeprof_vocab_size`");
    }
  } else if (!dtype.empty() && dtype != "float") {
    settings.fail("input dtype '" + dtype + "' is not one of float, long (--input-dtype, `pipeprof_input_dtype`)");
  }

  const std::string loss = settings.text(options.loss, "pipeprof_loss");
  if (loss == "cross_entropy") {
    task.loss = ImportedTask::Loss::CrossEntropy;
    task.numClasses = settings.count(options.numClasses, "pipeprof_num_classes");
    if (task.numClasses < 1) {
      settings.fail("cross_entropy needs the number of classes: --num-classes or `pipeprof_num_classes`");
    }
  } else if (loss == "next_token") {
    task.loss = ImportedTask::Loss::NextToken;
    if (task.input != ImportedTask::Input::TokenIds || task.inputShape.size() != 1 || task.inputShape[0] < 2) {
      settings.fail("next_token needs token ids of at least 2 per sample (input dtype long, input shape [T], T >= 2), "
                    "got " +
                    std::string(task.input == ImportedTask::Input::TokenIds ? "long" : "float") + " of " +
                    shapeText(task.inputShape));
    }
  } else if (!loss.empty() && loss != "mse") {
    settings.fail("loss '" + loss + "' is not one of mse, cross_entropy, next_token (--loss, `pipeprof_loss`)");
  }
  return task;
}

void applyTask(const ImportedTask& task, Model& model) {
  model.makeBatch = [task](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), task.inputShape.begin(), task.inputShape.end());
    Batch b;
    b.input = task.input == ImportedTask::Input::TokenIds
                  ? torch::randint(0, task.vocabSize, shape, generator, torch::kLong)
                  : torch::randn(shape, generator, torch::kFloat32);
    switch (task.loss) {
      case ImportedTask::Loss::Mse: b.target = torch::zeros({batch}, torch::kFloat32); break;  // unused
      case ImportedTask::Loss::CrossEntropy:
        b.target = torch::randint(0, task.numClasses, {batch}, generator, torch::kLong);
        break;
      case ImportedTask::Loss::NextToken: b.target = b.input.narrow(1, 1, b.input.size(1) - 1).clone(); break;
    }
    return b;
  };
  switch (task.loss) {
    case ImportedTask::Loss::Mse:
      model.loss = [](const torch::Tensor& output, const torch::Tensor& /*target*/) {
        return torch::mse_loss(output, torch::zeros_like(output));  // the output's mean square
      };
      break;
    case ImportedTask::Loss::CrossEntropy:
      model.loss = [classes = task.numClasses](const torch::Tensor& output, const torch::Tensor& target) {
        if (output.dim() != 2 || output.size(1) != classes) {
          throw std::invalid_argument("cross_entropy with " + std::to_string(classes) +
                                      " classes needs the model's output as [batch, " + std::to_string(classes) +
                                      "], got " + shapeText(output.sizes()));
        }
        return torch::nn::functional::cross_entropy(output, target);
      };
      break;
    case ImportedTask::Loss::NextToken:
      model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
        const std::int64_t predicted = target.size(1);  // every token but the last predicts the next
        if (output.dim() != 3 || output.size(1) != predicted + 1) {
          throw std::invalid_argument("next_token needs the model's output as [batch, " +
                                      std::to_string(predicted + 1) + ", vocabulary] logits, got " +
                                      shapeText(output.sizes()));
        }
        const torch::Tensor logits = output.narrow(1, 0, predicted);
        return torch::nn::functional::cross_entropy(logits.reshape({-1, output.size(2)}), target.reshape({-1}));
      };
      break;
  }
}

}  // namespace pipeprof
