// The sweep's three documented calibrations of the simulator's inputs, measured once per sweep.
//
// 1. Step overhead. A measured training step is: zero the gradients in place, the pipeline's forward, the loss,
// the pipeline's backward, and an SGD step over every parameter, all driven by the caller's
// thread. The simulator predicts the pipeline's forward and backward only. The rest does not
// depend on the candidate (it touches every parameter and the loss once per step whatever the
// balance, chunks or mode), so the sweep measures it once per sweep (inside a real training
// step, see 2) and adds it to every prediction: a constant, which leaves the ranking unchanged.
//
// 2. Chained-compute speed. The layer profiler times each layer alone, repeatedly, on hot
// caches; inside a training step the same layers run back to back (each one's weights and
// activations evicted by the next), through one autograd graph. The sweep runs the whole,
// unpartitioned model once as a one-partition, one-chunk pipeline on one device, traced, and
// compares the time of its forward and backward ops with the simulator's prediction of that
// same run: relativeSpeed = predicted / measured; the rest of each step is calibration 1. The
// speed is applied to every
// device of the sweep's cluster (stored in the report's cluster). It is one number for the
// model, independent of balance, chunks and mode.
//
// 3. Contention (CPU devices only: their partitions share the host's cores, caches and memory
// bandwidth). The sweep runs the unpartitioned model's forward + backward alone on one thread,
// then on n threads at once (one copy each), and takes c = concurrent / alone. The simulator
// runs every partition at profile speed whatever the others do; to first order, while k >= 2
// partitions compute at the same time each runs c times slower, which stretches the step by
// (c - 1) x the time the predicted timeline has two or more partitions computing at once. The
// sweep adds that to each candidate's prediction (so, unlike 1 and 2, it can reorder them).
#pragma once

#include "model_options.h"

#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <torch/torch.h>

#include <cstdint>

namespace pipeprof::cli {

struct ChainedCalibration {
  double relativeSpeed = 1.0;  ///< predicted / measured compute of the unpartitioned model
  TimeNs stepOverheadNs = 0;   ///< median step time outside the pipeline's compute ops
};

/// Calibrations 1 and 2 (see the file comment) from one traced training run of the
/// unpartitioned model (one partition on `device`, chunks 1, never; 2 warm-up + `steps`
/// steps): per timed step, the pipeline's compute is the sum of its forward and backward
/// spans and the overhead is the rest of the step; relativeSpeed = the simulator's prediction
/// of that run / the median compute (clamped to [0.25, 4]), stepOverheadNs = the median rest.
/// Throws what the training loop throws.
ChainedCalibration measureChainedCalibration(const ModelFlags& flags, const Profile& profile, std::int64_t batch,
                                             const torch::Device& device, std::int64_t steps = 30);

/// The contention factor c (see the file comment) for `partitions` partitions on CPU; 1.0 for
/// one partition. Clamped to [1, partitions].
double measureContentionFactor(const ModelFlags& flags, std::int64_t batch, std::int64_t partitions,
                               std::int64_t repeats = 5);

/// Time during which two or more partitions run compute ops (forward, recompute, backward) at
/// once in a (predicted) trace.
TimeNs concurrentComputeNs(const Trace& trace);

/// Adds the calibrated overhead to a prediction: iterationNs += overheadNs, samplesPerS
/// recomputed for `batch`.
void addStepOverhead(Prediction& prediction, TimeNs overheadNs, std::int64_t batch);

/// Appends the calibrated time (step overhead and contention) as a host span ("calibration
/// (step overhead, contention)", phase optimizer) after the last event of a predicted trace, so
/// the twin's length matches the predicted step time.
void appendStepOverheadSpan(Trace& trace, TimeNs overheadNs);

}  // namespace pipeprof::cli
