// Tests of cli/optimizer_options: the optimizer flags and their mistakes, each named by its flag.
#include "optimizer_options.h"

#include "commands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pipeprof::cli {
namespace {

/// The optimizer of a command line of optimizer flags ("" parses to the defaults).
OptimizerSpec parsed(std::vector<std::string> args) {
  CLI::App app;
  OptimizerFlags flags;
  addOptimizerFlags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return optimizerFromFlags(flags);
}

/// The UsageError message of parsing `args`, or "" when they parse.
std::string usageError(std::vector<std::string> args) {
  try {
    parsed(std::move(args));
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(OptimizerFlags, DefaultToPlainSgd) {
  const OptimizerSpec spec = parsed({});
  EXPECT_EQ(spec, OptimizerSpec{});
  EXPECT_EQ(spec.kind, OptimizerKind::Sgd);
  EXPECT_EQ(spec.learningRate, 1e-3);
}

TEST(OptimizerFlags, SetEveryHyperparameter) {
  const OptimizerSpec spec =
      parsed({"--optimizer", "adamw", "--lr", "3e-4", "--weight-decay", "0.1", "--betas", "0.8,0.95"});
  EXPECT_EQ(spec.kind, OptimizerKind::AdamW);
  EXPECT_EQ(spec.learningRate, 3e-4);
  EXPECT_EQ(spec.effectiveWeightDecay(), 0.1);
  EXPECT_EQ(spec.beta1, 0.8);
  EXPECT_EQ(spec.beta2, 0.95);
  EXPECT_EQ(parsed({"--optimizer", "adamw"}).effectiveWeightDecay(), 0.01) << "PyTorch's default for adamw";
}

TEST(OptimizerFlags, EachMistakeIsNamedByItsFlag) {
  EXPECT_EQ(usageError({"--optimizer", "lion"}),
            "--optimizer: invalid optimizer 'lion': expected one of sgd, momentum, adam, adamw");
  EXPECT_EQ(usageError({"--lr", "0"}), "--lr: the learning rate must be positive, got 0");
  EXPECT_EQ(usageError({"--weight-decay", "-1"}), "--weight-decay: weight decay must not be negative, got -1");
  EXPECT_EQ(usageError({"--betas", "0.9,0.99"}), "--betas applies to adam and adamw, not --optimizer sgd");
  EXPECT_EQ(usageError({"--optimizer", "adam", "--betas", "0.9"}),
            "--betas: expected two numbers B1,B2 such as 0.9,0.999, got '0.9'");
  EXPECT_EQ(usageError({"--optimizer", "adam", "--betas", "0.9,x"}),
            "--betas: expected two numbers B1,B2 such as 0.9,0.999, got '0.9,x'");
  EXPECT_EQ(usageError({"--optimizer", "adam", "--betas", "0.9,1"}), "--betas: beta2 must be in [0, 1), got 1");
}

}  // namespace
}  // namespace pipeprof::cli
