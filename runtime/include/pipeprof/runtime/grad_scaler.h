// fp16's dynamic loss scaling: the loss scaled up before the backward, the gradients unscaled and
// checked before the optimizer, the scale adapted to what the gradients can hold.
//
// Half precision holds magnitudes down to 6e-8 only: small gradients of an fp16 forward would
// flush to zero. As PyTorch's torch.amp.GradScaler does, the backward starts from scale x the
// loss; before the optimizer each device divides its gradients by the scale and looks for inf or
// NaN; if any device found one, no device steps and the scale halves; after growthInterval steps
// without one it doubles.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// PyTorch's defaults.
struct GradScalerOptions {
  double initScale = 65536.0;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  std::int64_t growthInterval = 2000;
};

class GradScaler {
 public:
  /// Throws std::invalid_argument for a scale that is not positive, a growth factor not above 1,
  /// a backoff factor outside (0, 1) or a growth interval below 1.
  explicit GradScaler(GradScalerOptions options = {});

  /// What the next step's backward multiplies the loss by.
  double scale() const { return scale_; }

  /// Divides every defined gradient of `parameters` by `scale` in place; returns whether any
  /// of them holds an inf or a NaN (after dividing: a finite gradient stays finite).
  static bool unscale(const std::vector<torch::Tensor>& parameters, double scale);

  /// After a step whose gradients were (foundInf: were not) all finite on every device: backs
  /// off and restarts the count, or counts it and grows after growthInterval in a row.
  void update(bool foundInf);

 private:
  GradScalerOptions options_;
  double scale_;
  std::int64_t goodSteps_ = 0;
};

}  // namespace pipeprof
