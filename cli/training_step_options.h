// Shared CLI flags for the training step: its optimizer (--optimizer, --lr, --weight-decay,
// --betas) and its arithmetic (--precision).
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// What the training step's flags hold after parsing (text until validated).
struct TrainingStepFlags {
  std::string optimizer = "sgd";
  double learningRate = 1e-3;
  std::optional<double> weightDecay;  ///< unset: the optimizer's default (adamw 0.01, else 0)
  std::string betas;                  ///< "B1,B2"; empty: 0.9,0.999
  std::string precision = "fp32";
};

/// Adds --optimizer, --lr, --weight-decay, --betas and --precision to a subcommand.
void addTrainingStepFlags(CLI::App& command, TrainingStepFlags& flags);

/// The optimizer the flags describe. Throws UsageError naming the flag: an unknown optimizer,
/// a hyperparameter out of range (validateOptimizer's message), or --betas given to an
/// optimizer without betas.
OptimizerSpec optimizerFromFlags(const TrainingStepFlags& flags);

/// The precision --precision names. Throws UsageError naming the flag and the accepted names.
Precision precisionFromFlags(const TrainingStepFlags& flags);

/// Throws UsageError naming --precision when a device cannot run the precision (fp16 on a CPU).
void requirePrecisionDevices(Precision precision, const std::vector<DeviceDesc>& devices);

}  // namespace pipeprof::cli
