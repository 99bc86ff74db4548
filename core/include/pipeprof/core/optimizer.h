// The training step's optimizer: which update rule, and its hyperparameters.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pipeprof {

class JsonCursor;

/// sgd: plain SGD, no state. momentum: SGD with momentum (one buffer per parameter). adam,
/// adamw: two moments per parameter; adamw decays the weights apart from the gradient.
enum class OptimizerKind { Sgd, Momentum, Adam, AdamW };

/// Every kind, in the order the command line lists them.
inline constexpr OptimizerKind kOptimizerKinds[] = {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Adam,
                                                    OptimizerKind::AdamW};

/// "sgd", "momentum", "adam", "adamw".
std::string_view optimizerName(OptimizerKind kind);

/// Parses one of optimizerName's names. Throws std::invalid_argument naming the text and the
/// accepted names.
OptimizerKind parseOptimizerKind(std::string_view text);

/// What the optimizer step of every training step does, with PyTorch's defaults.
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::Sgd;
  double learningRate = 1e-3;
  /// Unset: PyTorch's default for the kind (0.01 for adamw, 0 otherwise).
  std::optional<double> weightDecay;
  double momentum = 0.9;  ///< momentum only
  double beta1 = 0.9;     ///< adam, adamw
  double beta2 = 0.999;   ///< adam, adamw
  double eps = 1e-8;      ///< adam, adamw

  /// The weight decay applied: the one given, else the kind's default.
  double effectiveWeightDecay() const;
  /// Whether the kind uses the betas and eps (adam, adamw).
  bool usesBetas() const { return kind == OptimizerKind::Adam || kind == OptimizerKind::AdamW; }
  /// Another kind with these hyperparameters where it uses them (an unset weight decay stays
  /// unset: the other kind's default). What a profile measures every kind's step with.
  OptimizerSpec asKind(OptimizerKind other) const {
    OptimizerSpec spec = *this;
    spec.kind = other;
    return spec;
  }

  /// The same update: the same kind and the hyperparameters it uses (weight decay as applied).
  bool operator==(const OptimizerSpec& other) const;
  bool operator!=(const OptimizerSpec& other) const { return !(*this == other); }
};

/// The state the optimizer keeps per trainable parameter once it has stepped, in tensors the
/// size of the parameter (fp32, like the weights): sgd 0, momentum 1 (the momentum buffer),
/// adam and adamw 2 (the two moments; LibTorch counts the step in a plain integer).
int optimizerStateCopies(OptimizerKind kind);

/// The hyperparameters a validation can find out of range.
enum class OptimizerField { LearningRate, WeightDecay, Momentum, Betas, Eps };

/// validateOptimizer's error: the message names the value, field() the hyperparameter (so that
/// a command line can name its flag).
class OptimizerError : public std::invalid_argument {
 public:
  OptimizerError(OptimizerField field, const std::string& message) : std::invalid_argument(message), field_(field) {}
  OptimizerField field() const { return field_; }

 private:
  OptimizerField field_;
};

/// Throws OptimizerError naming the value when a hyperparameter is out of range: the learning
/// rate must be positive, weight decay and eps not negative, momentum and the betas in [0, 1).
void validateOptimizer(const OptimizerSpec& spec);

/// "adamw (lr 0.001, weight decay 0.01, betas 0.9,0.999)": the kind and what it uses.
std::string describeOptimizer(const OptimizerSpec& spec);

/// {"kind": "adamw", "learning_rate": ..., "weight_decay": ...} and, where the kind uses them,
/// "momentum" or "betas" and "eps" (docs/formats.md).
nlohmann::json toJson(const OptimizerSpec& spec);
/// Reads toJson's object; throws FormatError at the member that is missing or out of range.
OptimizerSpec optimizerFromJson(const JsonCursor& json);

}  // namespace pipeprof
