// Tests for core/optimizer: names, defaults, validation and the JSON form.
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/optimizer.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;

/// The std::invalid_argument message of validateOptimizer, "" when it accepts the spec.
std::string validationError(const OptimizerSpec& spec) {
  try {
    validateOptimizer(spec);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

/// The FormatError message of reading `json`, "" when it reads.
std::string readError(const nlohmann::json& json) {
  try {
    optimizerFromJson(JsonCursor(json, "job.json", "$.optimizer"));
  } catch (const FormatError& error) {
    return error.what();
  }
  return "";
}

TEST(Optimizer, NamesParseBack) {
  for (OptimizerKind kind : kOptimizerKinds) {
    EXPECT_EQ(parseOptimizerKind(optimizerName(kind)), kind);
  }
  try {
    parseOptimizerKind("lion");
    FAIL() << "lion parsed";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "invalid optimizer 'lion': expected one of sgd, momentum, adam, adamw");
  }
}

TEST(Optimizer, WeightDecayDefaultsAsPyTorchsDo) {
  OptimizerSpec spec;
  EXPECT_EQ(spec.effectiveWeightDecay(), 0.0);
  spec.kind = OptimizerKind::AdamW;
  EXPECT_EQ(spec.effectiveWeightDecay(), 0.01);
  spec.weightDecay = 0.0;
  EXPECT_EQ(spec.effectiveWeightDecay(), 0.0);
  OptimizerSpec implicitDefault;
  implicitDefault.kind = OptimizerKind::AdamW;
  OptimizerSpec explicitDefault = implicitDefault;
  explicitDefault.weightDecay = 0.01;
  EXPECT_EQ(implicitDefault, explicitDefault) << "the same update, whether the default was written or not";
}

TEST(Optimizer, EachHyperparameterOutOfRangeIsNamed) {
  OptimizerSpec spec;
  EXPECT_EQ(validationError(spec), "");
  spec.learningRate = 0.0;
  EXPECT_EQ(validationError(spec), "the learning rate must be positive, got 0");
  spec = OptimizerSpec{};
  spec.weightDecay = -0.5;
  EXPECT_EQ(validationError(spec), "weight decay must not be negative, got -0.5");
  spec = OptimizerSpec{};
  spec.beta2 = 1.0;
  EXPECT_EQ(validationError(spec), "beta2 must be in [0, 1), got 1");
  spec = OptimizerSpec{};
  spec.momentum = -0.1;
  EXPECT_EQ(validationError(spec), "momentum must be in [0, 1), got -0.1");
  spec = OptimizerSpec{};
  spec.eps = -1e-8;
  EXPECT_EQ(validationError(spec), "eps must not be negative, got -1e-08");
}

TEST(Optimizer, TheErrorSaysWhichHyperparameter) {
  const auto fieldOf = [](const OptimizerSpec& spec) {
    try {
      validateOptimizer(spec);
    } catch (const OptimizerError& error) {
      return std::optional<OptimizerField>(error.field());
    }
    return std::optional<OptimizerField>();
  };
  OptimizerSpec spec;
  EXPECT_EQ(fieldOf(spec), std::nullopt);
  spec.learningRate = -1.0;
  EXPECT_EQ(fieldOf(spec), OptimizerField::LearningRate);
  spec = OptimizerSpec{};
  spec.weightDecay = -1.0;
  EXPECT_EQ(fieldOf(spec), OptimizerField::WeightDecay);
  spec = OptimizerSpec{};
  spec.beta1 = 2.0;
  EXPECT_EQ(fieldOf(spec), OptimizerField::Betas);
}

TEST(Optimizer, TheDescriptionNamesWhatTheKindUses) {
  OptimizerSpec spec;
  EXPECT_EQ(describeOptimizer(spec), "sgd (lr 0.001, weight decay 0)");
  spec.kind = OptimizerKind::Momentum;
  EXPECT_EQ(describeOptimizer(spec), "momentum (lr 0.001, weight decay 0, momentum 0.9)");
  spec.kind = OptimizerKind::AdamW;
  EXPECT_EQ(describeOptimizer(spec), "adamw (lr 0.001, weight decay 0.01, betas 0.9,0.999)");
}

TEST(Optimizer, TheJsonFormReadsBackAndHoldsWhatTheKindUses) {
  for (OptimizerKind kind : kOptimizerKinds) {
    OptimizerSpec spec;
    spec.kind = kind;
    spec.learningRate = 0.25;
    spec.beta1 = 0.8;
    const nlohmann::json json = toJson(spec);
    EXPECT_EQ(json.at("kind"), optimizerName(kind));
    EXPECT_EQ(json.contains("momentum"), kind == OptimizerKind::Momentum);
    EXPECT_EQ(json.contains("betas"), spec.usesBetas());
    EXPECT_EQ(optimizerFromJson(JsonCursor(json, "job.json")), spec) << json.dump();
  }
}

TEST(Optimizer, TheReaderNamesThePathAndTheProblem) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::Adam;
  const nlohmann::json good = toJson(spec);
  EXPECT_EQ(readError(good), "");
  nlohmann::json bad = good;
  bad["kind"] = "lion";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.optimizer.kind: invalid optimizer 'lion'"));
  bad = good;
  bad["betas"] = {0.9};
  EXPECT_THAT(readError(bad), HasSubstr("$.optimizer.betas: expected two numbers [beta1, beta2]"));
  bad = good;
  bad["learning_rate"] = -1;
  EXPECT_THAT(readError(bad), HasSubstr("$.optimizer: the learning rate must be positive, got -1"));
  bad = good;
  bad.erase("eps");
  EXPECT_THAT(readError(bad), HasSubstr("missing required field 'eps'"));
}

}  // namespace
}  // namespace pipeprof
