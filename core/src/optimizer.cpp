// The training step's optimizer: which update rule, and its hyperparameters.
#include <pipeprof/core/optimizer.h>

#include <pipeprof/core/json_file.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

/// A hyperparameter as a user wrote it: 0.001, 1e-08, 0.9.
std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

void requireInUnitInterval(OptimizerField field, const std::string& name, double value) {
  if (!(value >= 0.0 && value < 1.0)) throw OptimizerError(field, name + " must be in [0, 1), got " + number(value));
}

}  // namespace

std::string_view optimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Momentum: return "momentum";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "unknown";
}

OptimizerKind parseOptimizerKind(std::string_view text) {
  for (OptimizerKind kind : kOptimizerKinds) {
    if (text == optimizerName(kind)) return kind;
  }
  throw std::invalid_argument("invalid optimizer '" + std::string(text) +
                              "': expected one of sgd, momentum, adam, adamw");
}

int optimizerStateCopies(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return 0;
    case OptimizerKind::Momentum: return 1;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return 2;
  }
  return 0;
}

double OptimizerSpec::effectiveWeightDecay() const {
  if (weightDecay) return *weightDecay;
  return kind == OptimizerKind::AdamW ? 0.01 : 0.0;
}

bool OptimizerSpec::operator==(const OptimizerSpec& other) const {
  if (kind != other.kind || learningRate != other.learningRate ||
      effectiveWeightDecay() != other.effectiveWeightDecay()) {
    return false;
  }
  if (kind == OptimizerKind::Momentum && momentum != other.momentum) return false;
  return !usesBetas() || (beta1 == other.beta1 && beta2 == other.beta2 && eps == other.eps);
}

void validateOptimizer(const OptimizerSpec& spec) {
  if (!(spec.learningRate > 0.0)) {
    throw OptimizerError(OptimizerField::LearningRate,
                         "the learning rate must be positive, got " + number(spec.learningRate));
  }
  if (!(spec.effectiveWeightDecay() >= 0.0)) {
    throw OptimizerError(OptimizerField::WeightDecay,
                         "weight decay must not be negative, got " + number(spec.effectiveWeightDecay()));
  }
  requireInUnitInterval(OptimizerField::Momentum, "momentum", spec.momentum);
  requireInUnitInterval(OptimizerField::Betas, "beta1", spec.beta1);
  requireInUnitInterval(OptimizerField::Betas, "beta2", spec.beta2);
  if (!(spec.eps >= 0.0))
    throw OptimizerError(OptimizerField::Eps, "eps must not be negative, got " + number(spec.eps));
}

std::string describeOptimizer(const OptimizerSpec& spec) {
  std::string text = std::string(optimizerName(spec.kind)) + " (lr " + number(spec.learningRate) + ", weight decay " +
                     number(spec.effectiveWeightDecay());
  if (spec.kind == OptimizerKind::Momentum) text += ", momentum " + number(spec.momentum);
  if (spec.usesBetas()) text += ", betas " + number(spec.beta1) + "," + number(spec.beta2);
  return text + ")";
}

nlohmann::json toJson(const OptimizerSpec& spec) {
  nlohmann::json json = {{"kind", optimizerName(spec.kind)},
                         {"learning_rate", spec.learningRate},
                         {"weight_decay", spec.effectiveWeightDecay()}};
  if (spec.kind == OptimizerKind::Momentum) json["momentum"] = spec.momentum;
  if (spec.usesBetas()) {
    json["betas"] = {spec.beta1, spec.beta2};
    json["eps"] = spec.eps;
  }
  return json;
}

OptimizerSpec optimizerFromJson(const JsonCursor& json) {
  OptimizerSpec spec;
  const JsonCursor kind = json.at("kind");
  try {
    spec.kind = parseOptimizerKind(kind.asString());
  } catch (const std::invalid_argument& error) {
    kind.fail(error.what());
  }
  spec.learningRate = json.at("learning_rate").asNumber();
  spec.weightDecay = json.at("weight_decay").asNumber();
  if (spec.kind == OptimizerKind::Momentum) spec.momentum = json.at("momentum").asNumber();
  if (spec.usesBetas()) {
    const JsonCursor betas = json.at("betas");
    if (betas.size() != 2) betas.fail("expected two numbers [beta1, beta2]");
    spec.beta1 = betas.at(std::size_t{0}).asNumber();
    spec.beta2 = betas.at(std::size_t{1}).asNumber();
    spec.eps = json.at("eps").asNumber();
  }
  try {
    validateOptimizer(spec);
  } catch (const std::invalid_argument& error) {
    json.fail(error.what());
  }
  return spec;
}

}  // namespace pipeprof
