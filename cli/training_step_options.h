// Shared CLI flags for the training step's optimizer: --optimizer, --lr, --weight-decay, --betas.
#pragma once

#include <pipeprof/core/optimizer.h>

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace pipeprof::cli {

/// What the optimizer flags hold after parsing (text until validated).
struct OptimizerFlags {
  std::string optimizer = "sgd";
  double learningRate = 1e-3;
  std::optional<double> weightDecay;  ///< unset: the optimizer's default (adamw 0.01, else 0)
  std::string betas;                  ///< "B1,B2"; empty: 0.9,0.999
};

/// Adds --optimizer, --lr, --weight-decay and --betas to a subcommand.
void addOptimizerFlags(CLI::App& command, OptimizerFlags& flags);

/// The optimizer the flags describe. Throws UsageError naming the flag: an unknown optimizer,
/// a hyperparameter out of range (validateOptimizer's message), or --betas given to an
/// optimizer without betas.
OptimizerSpec optimizerFromFlags(const OptimizerFlags& flags);

}  // namespace pipeprof::cli
