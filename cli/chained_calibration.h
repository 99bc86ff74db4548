// The sweep's chained-compute calibration: per micro-batch size, how long the layers take chained inside the
// pipeline against the layer profiler's isolated timings, and the step overhead per chunk count.
//
// The layer profiler times every layer alone, repeatedly, on hot caches. Inside a training step the
// layers run back to back through one autograd graph, each partition cycling through its own layers'
// weights for every micro-batch, while the other partitions of the same host compute (sharing caches
// and memory bandwidth), and the workers hand tensors to each other. So the sweep runs one reference
// pipeline per chunk count m of the sweep -- every device of the sweep, layers split evenly, `never`
// -- traced, in interleaved rounds (so a burst of load on a shared machine spoils part of every
// chunk count's samples rather than all of one's), and derives:
//
//   forwardScale(b)  = median over micro-batches of b samples of (sum over partitions of its forward
//                      spans) / the profile's forward of the whole model at b; backwardScale(b) likewise
//   calibrated profile = every layer's forward (and recompute) and backward time at b times the scales
//   speed(j)         = the calibrated profile's compute of partition j's layers over what partition j
//                      measured, over all the reference runs: the cluster's relative speed of device j
//                      (on CPU the partitions of one host do not run alike: the last one's backward,
//                      for one, measured 10-15% slower per GEMM than the first one's)
//   overhead(m)      = median step time of the reference run - the simulator's step time for the same
//                      candidate with the calibrated profile and speeds (zeroing, loss, SGD step,
//                      waking workers)
//
//   step span  |<--------------------------------- step ------------------------------------>|
//   partition 0   [f0][f1][f2][f3]              ...               [b3][b2][b1][b0]  SGD
//   partition 1       [f0][f1][f2][f3] loss [b3][b2][b1][b0]
//
// Scales and overheads are functions of the micro-batch size or chunk count only; the speeds
// are per device. Everything here is torch-free (simulator and core), so it is unit-tested.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// Measured / profiled compute of the whole model at one micro-batch size (1.0: as profiled).
struct MicroBatchScale {
  double forward = 1.0;
  double backward = 1.0;
};

struct ChainedCalibration {
  std::map<std::int64_t, MicroBatchScale> scales;  ///< by micro-batch size (samples)
  std::map<std::int64_t, TimeNs> overheadNs;       ///< by chunk count
  std::vector<double> deviceSpeeds;                ///< relative speed of cluster device j (partition j)

  /// The overhead of a candidate with `chunks` chunks: the measured one, else the one of the
  /// largest measured chunk count below it (the smallest above when there is none); 0 when
  /// nothing was measured.
  TimeNs stepOverheadNs(std::int64_t chunks) const;
};

/// One traced reference run: the candidate it trained (mode `never`) and its trace (step spans
/// and the pipeline's op spans, each op carrying its micro-batch and partition).
struct ReferenceRun {
  Candidate candidate;
  Trace trace;
};

/// The calibration from reference runs (see the file comment); runs of the same chunk count
/// (rounds of one reference) pool their steps. Partition j of every run is on cluster device j.
/// Scales are clamped to [0.25, 4] and speeds to [0.5, 2]; a size without spans or without
/// profile time keeps 1.0; overheads are never negative. Throws what the simulator throws for
/// a reference candidate it cannot simulate.
ChainedCalibration chainedCalibrationFromRuns(const Profile& profile, const Cluster& cluster,
                                              const std::vector<ReferenceRun>& runs);

/// The cluster the simulator should use: device j's relativeSpeed set to deviceSpeeds[j] (for
/// the devices that have one).
Cluster calibratedCluster(Cluster cluster, const ChainedCalibration& calibration);

/// The profile the simulator should use: every layer's forward (and recompute) and backward
/// time at each calibrated micro-batch size multiplied by that size's scale; sizes without a
/// scale are left as they are.
Profile calibratedProfile(Profile profile, const ChainedCalibration& calibration);

/// One line for the sweep's progress: the range of the scales and of the step overheads.
std::string describeChainedCalibration(const ChainedCalibration& calibration);

/// {"micro_batch_scales": [{"micro_batch", "forward", "backward"}], "step_overhead_ns":
/// [{"chunks", "ns"}], "device_speeds": [...]} -- stored in the report (docs/formats.md).
nlohmann::json toJson(const ChainedCalibration& calibration);
/// Reads what toJson wrote (an empty calibration for null or a missing key).
ChainedCalibration chainedCalibrationFromJson(const nlohmann::json& json);

}  // namespace pipeprof::cli
