// Measuring a calibration: reference pipelines timed in rounds, and the calibration they imply.
//
// One reference pipeline per shape (schedule and checkpoint mode) and chunk count (every device,
// an even balance; see simulator/calibration_fit.h) is trained through a CandidateMeasurer,
// traced, in interleaved rounds; the fitted scales, device speeds and step overheads (GPipe's
// without checkpoints, and each other shape's own) are the calibration that `pipeprof
// calibrate` writes and the sweep embeds in its report.
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/tuner/candidate_measurer.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace pipeprof::tuner {

/// How long the reference runs go on: rounds over the reference plan (referencePlan) until
/// `budgetSeconds` have passed. A reference starts only when it is expected to end within the
/// budget (it takes what it took in the round before, or the references' mean so far), so the
/// budget bounds the whole calibration: the first reference always runs, the last round may
/// stop part way, and references the budget never reached leave their shape with the
/// corrections the others imply. Each run trains `warmupSteps` + `steps` steps. The references
/// warm up as the candidates do: a fresh Pipe's first 2-3 steps on a CPU run 10-100% slower
/// than the ones after.
struct CalibrationRounds {
  double budgetSeconds = 20.0;
  /// At most this many rounds, budget left or not (0: as many as the budget holds): one round
  /// times every reference of the plan once, whatever it costs.
  std::int64_t maxRounds = 0;
  std::int64_t warmupSteps = 1;
  std::int64_t steps = 4;
  /// What a reference is expected to take before any of these rounds has run (the references
  /// of an earlier pass took it on average); 0: unknown, and the first reference always runs.
  double expectedSeconds = 0.0;
  /// When these rounds begin, in seconds after the calibration began (a sweep's later passes):
  /// each run's moment (ReferenceRun::atS, the middle of its run) counts from the calibration's
  /// start, so that the probe runs of every pass sample one timeline (reference_speed.h).
  double startedS = 0.0;
  /// Called after each round with its number (from 1), the reference pipelines it trained, the
  /// plan's size and the seconds it took: the sweep and `pipeprof calibrate` print it (on an
  /// H200 a round of 72 traced references took over 45 s, silent before).
  std::function<void(std::int64_t round, std::size_t measured, std::size_t planned, double seconds)> onRound;
  /// Called when a reference's threads waited for a CPU past kContendedCpuWait (another process
  /// competed for the cores) and it is timed again, once, where the budget holds it.
  std::function<void(const Candidate& reference)> onContended;
};

/// gpipe without checkpoints: the reference shape every calibration times (its own corrections,
/// and the drift correction's references). Its balance and chunks are filled per reference.
PipelineShape gpipeReferenceShape();

/// The reference shapes of a sweep over `kinds` with `stagesPerDevice` and `modes` on
/// `devices` devices of a `layers`-layer model: gpipeReferenceShape() first, always, then every
/// schedule the sweep tries (interleaved with each v >= 2 that has at most one stage per layer)
/// in every mode it tries. Each has its schedule, v and checkpoint mode; the balance (even over
/// the devices' stages) and the chunks are filled per reference by measureCalibration.
std::vector<PipelineShape> referenceShapes(const std::vector<ScheduleKind>& kinds,
                                           const std::vector<std::int64_t>& stagesPerDevice,
                                           const std::vector<Checkpoint>& modes, std::int64_t devices,
                                           std::int64_t layers);

/// The reference pipelines a calibration trains, in the order each round trains them: the first
/// of `shapes` (GPipe without checkpoints) at its largest chunk count of `chunks`; every other
/// shape at its largest, with GPipe's other chunk counts spread among them; GPipe at its largest
/// again (the shapes are corrected against GPipe timed over the same seconds); then the rest of
/// the grid, largest chunk count first; GPipe at its largest last, unless it is last already (the
/// probe: simulator/reference_speed.h samples the machine's speed by it). A shape is timed
/// only at chunk counts 1 <= m <= batch its schedule can run (interleaved needs micro-batches a
/// multiple of the devices) over `devices` devices, its layers split evenly. The first
/// shapes + chunks or so are what the fit needs to correct every shape at every chunk count
/// (calibration_fit.h): the rest refine it.
std::vector<Candidate> referencePlan(std::int64_t layers, std::int64_t batch, const std::vector<std::int64_t>& chunks,
                                     std::int64_t devices, const std::vector<PipelineShape>& shapes);

/// The reference pipelines that calibrate the predictions of `candidates` (those a sweep is
/// about to measure), in the order referencePlan gives: GPipe without checkpoints at each of
/// `gpipeChunks` (its corrections are every other shape's until that shape has its own, and the
/// drift correction's reference), and each candidate's shape (schedule, v, checkpoint mode) at
/// the candidate's chunk count; none that `timed` (references timed already) holds, and none
/// for a custom order. A sweep's calibration grows with the shapes it measures, not with every
/// shape and chunk count it predicts (the default mlp sweep: 14 references in its first pass, not 70).
/// A plan that times anything ends with GPipe at the largest of `gpipeChunks`, timed or not: the
/// probe of the machine's speed (simulator/reference_speed.h).
std::vector<Candidate> referencePlanFor(std::int64_t layers, std::int64_t batch, std::int64_t devices,
                                        const std::vector<std::int64_t>& gpipeChunks,
                                        const std::vector<Candidate>& candidates,
                                        const std::vector<Candidate>& timed = {});

/// Trains `plan` in rounds through `measurer`, traced, within the rounds' budget and rounds
/// (CalibrationRounds), appending each run to `runs`; returns the rounds begun. Throws what the
/// measurer throws, and TrainingStopped when `stop` asks (between references too).
std::int64_t timeReferences(CandidateMeasurer& measurer, const std::vector<Candidate>& plan,
                            const CalibrationRounds& rounds, std::vector<ReferenceRun>& runs,
                            const StopToken& stop = {});

/// Trains the reference plan of `shapes` and `chunks` in rounds through `measurer`, traced,
/// within the rounds' budget, and fits the calibration to them (calibrationFromRuns). More
/// rounds spread the reference steps over a longer time, so that a slow spell of a shared
/// machine weighs on the calibration as it will on the measured candidates. provenance.rounds
/// (rounds begun) and .references are filled. Throws what the measurer throws, and
/// TrainingStopped when `stop` asks (between references too).
Calibration measureCalibration(CandidateMeasurer& measurer, const Profile& profile, const Cluster& cluster,
                               std::int64_t batch, const std::vector<std::int64_t>& chunks, std::int64_t devices,
                               const CalibrationRounds& rounds,
                               const std::vector<PipelineShape>& shapes = {gpipeReferenceShape()},
                               const StopToken& stop = {});

/// Fills the rest of the calibration's provenance: the model, batch, devices, threads, LibTorch
/// version, pipeprof's revision and the time now.
void stampProvenance(Calibration& calibration, const ModelSpec& model, std::int64_t batch,
                     const std::vector<DeviceDesc>& devices);

/// One cluster device per sweep device, with `memoryBytes` each (nullopt: unbounded). CPU
/// pipeline devices of one process share its memory, so their links cost nothing (no copies); CUDA
/// devices get the same zero-cost links until the cluster flags say otherwise. With
/// `rankLink` (one process per device) every link between two devices is that one and the
/// cluster says processPerDevice.
Cluster sweepCluster(const std::vector<DeviceDesc>& devices, std::optional<Bytes> memoryBytes,
                     const std::optional<Link>& rankLink = std::nullopt);

}  // namespace pipeprof::tuner
