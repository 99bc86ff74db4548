// Shared CLI flags for the training step: its optimizer and its precision.
#include "training_step_options.h"

#include "commands.h"

#include <fmt/format.h>

#include <stdexcept>

namespace pipeprof::cli {
namespace {

/// "0.9,0.999" -> {0.9, 0.999}; throws std::invalid_argument otherwise.
std::pair<double, double> parseBetas(const std::string& text) {
  const std::size_t comma = text.find(',');
  const auto number = [&](const std::string& part) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(part, &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (part.empty() || used != part.size()) {
      throw std::invalid_argument("expected two numbers B1,B2 such as 0.9,0.999, got '" + text + "'");
    }
    return value;
  };
  if (comma == std::string::npos) number("");
  return {number(text.substr(0, comma)), number(text.substr(comma + 1))};
}

/// The flag that sets `field` (momentum and eps have none: the optimizer's).
std::string flagOf(OptimizerField field) {
  switch (field) {
    case OptimizerField::LearningRate: return "--lr";
    case OptimizerField::WeightDecay: return "--weight-decay";
    case OptimizerField::Betas: return "--betas";
    case OptimizerField::Momentum:
    case OptimizerField::Eps: break;
  }
  return "--optimizer";
}

}  // namespace

void addTrainingStepFlags(CLI::App& command, TrainingStepFlags& flags) {
  command
      .add_option("--optimizer", flags.optimizer,
                  "sgd (plain), momentum (SGD, momentum 0.9), adam or adamw: the optimizer step of every training "
                  "step; its state is created at the first step")
      ->capture_default_str()
      ->type_name("KIND");
  command.add_option("--lr", flags.learningRate, "Learning rate")->capture_default_str();
  command.add_option("--weight-decay", flags.weightDecay, "Weight decay (default: adamw 0.01, the others 0)")
      ->type_name("X");
  command.add_option("--betas", flags.betas, "adam and adamw: the moments' decay rates (default 0.9,0.999)")
      ->type_name("B1,B2");
  command
      .add_option("--precision", flags.precision,
                  "fp32, bf16 (autocast, CPU and CUDA) or fp16 (autocast, CUDA): the forward's arithmetic; weights, "
                  "gradients and optimizer state stay fp32")
      ->capture_default_str()
      ->type_name("TYPE");
}

OptimizerSpec optimizerFromFlags(const TrainingStepFlags& flags) {
  OptimizerSpec spec;
  spec.kind = parseFlag("--optimizer", [&] { return parseOptimizerKind(flags.optimizer); });
  spec.learningRate = flags.learningRate;
  spec.weightDecay = flags.weightDecay;
  if (!flags.betas.empty()) {
    if (!spec.usesBetas()) {
      throw UsageError(fmt::format("--betas applies to adam and adamw, not --optimizer {}", flags.optimizer));
    }
    std::tie(spec.beta1, spec.beta2) = parseFlag("--betas", [&] { return parseBetas(flags.betas); });
  }
  try {
    validateOptimizer(spec);
  } catch (const OptimizerError& error) {
    throw UsageError(flagOf(error.field()) + ": " + error.what());
  }
  return spec;
}

Precision precisionFromFlags(const TrainingStepFlags& flags) {
  return parseFlag("--precision", [&] { return parsePrecision(flags.precision); });
}

void requirePrecisionDevices(Precision precision, const std::vector<DeviceDesc>& devices) {
  if (precision != Precision::Fp16) return;
  for (const DeviceDesc& device : devices) {
    if (device.type == DeviceType::Cpu) {
      throw UsageError("--precision fp16 needs CUDA devices, got " + device.str() +
                       ": LibTorch autocasts CPU ops to bf16 only (use --precision bf16)");
    }
  }
}

}  // namespace pipeprof::cli
