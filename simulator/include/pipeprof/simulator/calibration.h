// The calibration (pipeprof.calibration/v1): measured corrections of a profile inside a real pipeline.
//
// The layer profiler times every layer alone, repeatedly, on hot caches. Inside a training step
// the layers run back to back through one autograd graph while the other stages of the host
// compute, and the step pays for grad zeroing and waking the workers.
// A calibration, measured by timing reference pipelines (`pipeprof calibrate`, or the sweep
// before it measures anything; see simulator/calibration_fit.h), holds these corrections:
//
//   scales(b)       how long the layers take chained in the pipeline at micro-batch size b
//                   against the profile: every layer's forward (with its graph or without)
//                   and recompute time at b times forward, its backward time times
//                   backward, the loss's forward times loss (sizes without a scale: 1.0)
//   deviceSpeeds(j) the relative speed of cluster device j (on one CPU host the stages do
//                   not run alike)
//   stepOverhead(m) what a step with m chunks costs beyond the simulated pipeline
//   messageLatency  (one process per device) how long a message between two ranks takes inside
//                   the pipeline beyond its drain time: the link's latency as the pipeline sees
//                   it, wake-ups of busy cores included, where a ping-pong sees an idle machine
//   wakeLatency     (threads of one process) how long a worker that sleeps waiting for another
//                   device's data takes to start its op once the data is there
//   lossColdStart   how much longer a step's first loss op takes than each later one (the
//                   loss's code and state go cold between steps; the profile times a first
//                   call), per shape: the schedule decides how warm it stays between two calls
//
// A calibration fitted from reference pipelines (simulator/calibration_fit.h) holds one set for
// every candidate, each shape's references (schedule and checkpoint mode) samples of it: on this
// project's machines what a shape's own corrections caught was mostly the spell its one
// reference ran in. A calibration file may still give a shape corrections of its own (byShape),
// and a candidate of that shape is predicted with them.
//
// The simulator's cost model is profile + cluster + calibration (simulator/predictor.h): every
// command that predicts (simulate, suggest, sweep, the GUI) applies the same calibration the
// same way.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace pipeprof {

inline constexpr const char* kCalibrationSchema = "pipeprof.calibration/v1";

/// Chained-in-the-pipeline over profiled compute of the whole model at one micro-batch size
/// (1.0: as profiled).
struct MicroBatchScale {
  double forward = 1.0;
  double backward = 1.0;
  /// The loss op in the pipeline over the loss's profiled forward. The profiler times the loss
  /// right after the last layer's forward, where the pipeline runs it; profiles from before
  /// timed it alone, on hot caches, at a fraction of its pipeline time (unet's MSE at 2
  /// samples: 13 us profiled, 50-90 us in the pipeline), which this scale made up for.
  double loss = 1.0;
  /// A compute op whose device ran another stage's op before it over one of the same kind and
  /// size on a device holding one stage (Profile::stageSwitchScales): with two or more stages
  /// per device, the stage finds less of its weights and activations in the caches. 1: no
  /// difference (and one stage per device never switches).
  double afterStageSwitch = 1.0;
  /// A compute op that is its stage's first of its kind in the step (first forward, first
  /// backward, first I or W) over a later one of the same kind (Profile::firstInStepScales): the
  /// optimizer's step and the zeroing swept the caches since. 1: no difference.
  double firstInStep = 1.0;
};

/// The shape of a reference pipeline: what it shares with the candidates it calibrates.
struct ReferenceShape {
  std::string schedule = "gpipe";  ///< Candidate::scheduleLabel(): "gpipe", "1f1b", "interleaved v2"
  Checkpoint checkpoint = Checkpoint::Never;

  static ReferenceShape of(const Candidate& candidate) { return {candidate.scheduleLabel(), candidate.checkpoint}; }
  std::string label() const;  ///< "1f1b except_last"
  bool operator<(const ReferenceShape& other) const {
    return std::tie(schedule, checkpoint) < std::tie(other.schedule, other.checkpoint);
  }
  bool operator==(const ReferenceShape& other) const {
    return schedule == other.schedule && checkpoint == other.checkpoint;
  }
};

/// One reference pipeline the calibration timed.
struct CalibrationReference {
  ReferenceShape shape;
  std::int64_t chunks = 1;
  std::vector<std::int64_t> balance;  ///< every stage, layers split evenly
  std::int64_t steps = 0;             ///< timed steps pooled over its rounds
  TimeNs stepNsMedian = 0;
};

/// How and when a calibration was measured (all optional: a calibration written by hand has none).
struct CalibrationProvenance {
  std::string model;                 ///< zoo name or TorchScript path
  std::int64_t batch = 0;            ///< mini-batch of the reference pipelines
  std::vector<std::string> devices;  ///< e.g. {"cpu", "cpu"}
  std::int64_t threads = 0;          ///< intra-op threads per worker
  std::string torchVersion;
  std::string pipeprofRevision;
  std::string createdAt;    ///< ISO 8601 UTC
  std::int64_t rounds = 0;  ///< rounds of the reference pipelines
  std::vector<CalibrationReference> references;
};

/// The corrections that depend on the schedule and checkpoint mode, fitted from reference
/// pipelines of one shape.
struct ScheduleCorrections {
  std::map<std::int64_t, MicroBatchScale> scales;  ///< by micro-batch size (samples)
  std::vector<double> deviceSpeeds;                ///< relative speed of cluster device j
  std::map<std::int64_t, TimeNs> stepOverheadNs;   ///< by chunk count

  /// True when it corrects nothing (no scales, speeds or overheads).
  bool empty() const { return scales.empty() && deviceSpeeds.empty() && stepOverheadNs.empty(); }
  /// The step overhead of a candidate with `chunks` chunks: the measured one, else the one of
  /// the largest measured chunk count below it (the smallest above when there is none); 0 when
  /// nothing was measured.
  TimeNs stepOverheadNsFor(std::int64_t chunks) const;
};

/// The corrections it holds itself (its ScheduleCorrections base, fitted from the reference
/// pipelines of every shape) apply to every candidate whose shape has none of its own in byShape.
struct Calibration : ScheduleCorrections {
  /// Corrections of a shape's own: a calibration file's (a fit leaves it empty).
  std::map<ReferenceShape, ScheduleCorrections> byShape;
  /// The latency of every link between two devices of one host (of every link when the
  /// cluster names no hosts) that moves data at a cost; nullopt: the cluster's latencies.
  std::optional<TimeNs> messageLatencyNs;
  /// The cluster's wake latency (Cluster::wakeLatencyNs): how long a pipeline device's worker
  /// that sleeps waiting for another device's data takes to start its op once the data is
  /// there; nullopt: the cluster's own (0 unless its file gives one).
  std::optional<TimeNs> wakeLatencyNs;
  /// The loss's cold start (LossProfile::coldStartNs), at a device speed of 1: how much longer a
  /// step's first loss op takes than each later one, for a shape without its own; nullopt:
  /// every call as profiled.
  std::optional<TimeNs> lossColdStartNs;
  /// A shape's own cold start. What runs between two loss calls of a step is the schedule's
  /// (GPipe: the last stage's next forward; 1F1B: a backward and a forward), and so is how warm
  /// the later call finds the loss; a difference within one step, which a slow spell of the
  /// machine moves little (simulator/calibration_fit.h).
  std::map<ReferenceShape, TimeNs> lossColdStartByShape;
  CalibrationProvenance provenance;

  /// True when it corrects nothing (no scales, speeds, overheads, schedule corrections, message
  /// or wake latency or loss cold start).
  bool empty() const {
    return ScheduleCorrections::empty() && byShape.empty() && !messageLatencyNs && !wakeLatencyNs && !lossColdStartNs &&
           lossColdStartByShape.empty();
  }
  /// The loss cold start a candidate of `shape` is predicted with: its shape's own, else that
  /// of the shape whose corrections it takes (correctingShape), else lossColdStartNs.
  std::optional<TimeNs> lossColdStartNsFor(const ReferenceShape& shape) const;
  /// The key of byShape whose corrections a candidate of `shape` is predicted with: its shape,
  /// else its schedule in another mode (without checkpoints, else except_last, else always: a
  /// sweep times the shapes of the candidates it measures only, and a schedule's modes differ
  /// from each other by less than from GPipe's); nullptr when none has corrections (the
  /// calibration's own apply).
  const ReferenceShape* correctingShape(const ReferenceShape& shape) const;
  /// Those corrections: byShape's at correctingShape(shape), else the calibration's own.
  const ScheduleCorrections& correctionsFor(const ReferenceShape& shape) const;
  /// This calibration with correctionsFor(shape) in place of its own and lossColdStartNsFor(shape)
  /// as its loss cold start, and no byShape or lossColdStartByShape.
  Calibration forShape(const ReferenceShape& shape) const;
};

/// The profile the simulator uses: every layer's forward (both kinds) and backward time at
/// each calibrated micro-batch size multiplied by that size's scale (rounded to the nearest ns);
/// sizes without a scale are left as they are.
Profile calibratedProfile(Profile profile, const Calibration& calibration);

/// The cluster the simulator uses: device j's relativeSpeed set to deviceSpeeds[j] (for the
/// devices that have one), and with a message latency, the latency of every link it applies to
/// (see Calibration::messageLatencyNs; a link that costs nothing stays free), and with a wake
/// latency, the cluster's.
Cluster calibratedCluster(Cluster cluster, const Calibration& calibration);

/// One line: the range of the scales, the device speeds and the range of the step overheads,
/// and the shapes with corrections of their own.
std::string describeCalibration(const Calibration& calibration);

/// JSON form (docs/formats.md). calibrationFromJson throws FormatError naming `file`, the JSON
/// path and what was expected: a foreign schema tag, a scale or speed that is not a positive
/// number, a negative overhead, a size or chunk count given twice, a schedule that is not a
/// schedule label, an unknown checkpoint mode, a shape given twice. Missing lists are empty.
nlohmann::json toJson(const Calibration& calibration);
/// `jsonPath` is where the object sits in `file` ("$" for a calibration file).
Calibration calibrationFromJson(const nlohmann::json& json, const std::string& file, const std::string& jsonPath = "$");
Calibration readCalibration(const std::string& path);
void writeCalibration(const Calibration& calibration, const std::string& path);  ///< atomic

/// The calibration a report's predictions used, to predict again from its profile and
/// cluster: its pipeprof.calibration/v1 object; for a report written before calibrations had a
/// file of their own ({"chained": ...}, its profile and cluster already calibrated) only the
/// step overheads; empty when it has none. Throws FormatError naming `file` and $.calibration.
Calibration reportCalibration(const Report& report, const std::string& file);

}  // namespace pipeprof
