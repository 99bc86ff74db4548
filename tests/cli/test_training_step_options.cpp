// Tests of cli/training_step_options: the optimizer and precision flags and their mistakes, each named
// by its flag.
#include "training_step_options.h"

#include "commands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pipeprof::cli {
namespace {

/// The flags of a command line of training step flags ("" parses to the defaults).
TrainingStepFlags parsedFlags(std::vector<std::string> args) {
  CLI::App app;
  TrainingStepFlags flags;
  addTrainingStepFlags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return flags;
}

OptimizerSpec parsed(std::vector<std::string> args) { return optimizerFromFlags(parsedFlags(std::move(args))); }

/// The UsageError message of parsing `args` (the optimizer and the precision), or "" when they parse.
std::string trainingFlagsError(std::vector<std::string> args) {
  try {
    const TrainingStepFlags flags = parsedFlags(std::move(args));
    optimizerFromFlags(flags);
    precisionFromFlags(flags);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(TrainingStepFlags, DefaultToPlainSgd) {
  const OptimizerSpec spec = parsed({});
  EXPECT_EQ(spec, OptimizerSpec{});
  EXPECT_EQ(spec.kind, OptimizerKind::Sgd);
  EXPECT_EQ(spec.learningRate, 1e-3);
}

TEST(TrainingStepFlags, SetEveryHyperparameter) {
  const OptimizerSpec spec =
      parsed({"--optimizer", "adamw", "--lr", "3e-4", "--weight-decay", "0.1", "--betas", "0.8,0.95"});
  EXPECT_EQ(spec.kind, OptimizerKind::AdamW);
  EXPECT_EQ(spec.learningRate, 3e-4);
  EXPECT_EQ(spec.effectiveWeightDecay(), 0.1);
  EXPECT_EQ(spec.beta1, 0.8);
  EXPECT_EQ(spec.beta2, 0.95);
  EXPECT_EQ(parsed({"--optimizer", "adamw"}).effectiveWeightDecay(), 0.01) << "PyTorch's default for adamw";
}

TEST(TrainingStepFlags, EachMistakeIsNamedByItsFlag) {
  EXPECT_EQ(trainingFlagsError({"--optimizer", "lion"}),
            "--optimizer: invalid optimizer 'lion': expected one of sgd, momentum, adam, adamw");
  EXPECT_EQ(trainingFlagsError({"--lr", "0"}), "--lr: the learning rate must be positive, got 0");
  EXPECT_EQ(trainingFlagsError({"--weight-decay", "-1"}), "--weight-decay: weight decay must not be negative, got -1");
  EXPECT_EQ(trainingFlagsError({"--betas", "0.9,0.99"}), "--betas applies to adam and adamw, not --optimizer sgd");
  EXPECT_EQ(trainingFlagsError({"--optimizer", "adam", "--betas", "0.9"}),
            "--betas: expected two numbers B1,B2 such as 0.9,0.999, got '0.9'");
  EXPECT_EQ(trainingFlagsError({"--optimizer", "adam", "--betas", "0.9,x"}),
            "--betas: expected two numbers B1,B2 such as 0.9,0.999, got '0.9,x'");
  EXPECT_EQ(trainingFlagsError({"--optimizer", "adam", "--betas", "0.9,1"}), "--betas: beta2 must be in [0, 1), got 1");
}

TEST(TrainingStepFlags, PrecisionDefaultsToFp32) {
  EXPECT_EQ(precisionFromFlags(parsedFlags({})), Precision::Fp32);
  EXPECT_EQ(precisionFromFlags(parsedFlags({"--precision", "bf16"})), Precision::Bf16);
  EXPECT_EQ(trainingFlagsError({"--precision", "half"}),
            "--precision: invalid precision 'half': expected one of fp32, bf16, fp16");
}

TEST(TrainingStepFlags, Fp16NeedsCudaDevices) {
  const std::vector<DeviceDesc> cuda = parseDeviceList("cuda:0,cuda:1");
  EXPECT_NO_THROW(requirePrecisionDevices(Precision::Fp16, cuda));
  EXPECT_NO_THROW(requirePrecisionDevices(Precision::Bf16, parseDeviceList("cpu,cpu")));
  try {
    requirePrecisionDevices(Precision::Fp16, parseDeviceList("cuda:0,cpu"));
    FAIL() << "fp16 accepted on a CPU";
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "--precision fp16 needs CUDA devices, got cpu: LibTorch autocasts CPU ops to bf16 only (use "
                 "--precision bf16)");
  }
}

}  // namespace
}  // namespace pipeprof::cli
