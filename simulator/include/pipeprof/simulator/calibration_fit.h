// Fitting a calibration to traced reference pipelines: the scales, device speeds and step overheads they imply.
//
// A reference pipeline of chunk count m runs every device, the layers split evenly over its
// stages, in one shape: a schedule and a checkpoint mode (GPipe without checkpoints, or the
// shape of a candidate to measure). The runs of every shape are samples of one set of
// corrections, which every candidate is predicted with: a shape's runs are one cell of each
// table below, and each correction is the median over the shapes' cells, so that a reference
// timed in a slow spell of a shared machine is one cell among the shapes' and moves nothing by
// itself. (Until 2026-12-01 each shape fitted corrections of its own from its one or two
// references; those absorbed whatever spell the reference ran in, and two sweeps of the same
// space predicted the same candidates 4-6% apart (median, 12-21% at the 90th percentile).
// Refitted from the same reference traces as one set: 1.2-3.7% (4-12%), the measured
// candidates' error no worse by more than 1.6 points: docs/performance.md, "One set of
// corrections for every shape".)
//
//   stageSwitch      = (shapes of two or more stages per device) how much longer an op ran after
//                      another stage's op on its device (the candidate's device order) than the
//                      ops of its kind (forward, backward, recompute, I, W) and size of the
//                      references of one stage per device, each measured over its stage's
//                      profiled time: a cell per shape and size, log(the median of those ops'
//                      ratios over the median of the one-stage ops'), and one scale for every
//                      size, exp(the median over the cells): the stage's weights and activations
//                      are no longer in the caches (mlp at 16 samples: +8-16% over a
//                      back-to-back op of its own stage, +2-6% at 64, none at 128;
//                      docs/performance.md, "An op after another stage's"). Against the
//                      one-stage ops because a two-stage device's ops after their own stage run
//                      slow too (0.99-1.07x a one-stage device's; docs/performance.md, "An op
//                      after another stage's, against a device of one stage"), so its own other
//                      ops understated it; those are the baseline only where no one-stage
//                      reference timed that kind and size. One scale because a size's own
//                      wandered 1.0-1.18 between runs of one sweep. A stage's first op of a
//                      kind in the step is left out of these cells (firstInStep below).
//   firstInStep      = how much longer a stage's first op of its kind in the step (its first
//                      forward, recompute, backward, I, W: Schedule::firstOfKindOnStage) ran
//                      than the later ops of that kind of its run's shape and size, fitted as
//                      stageSwitch is (each span divided by stageSwitch where it followed
//                      another stage's): the optimizer's step and the zeroing between two steps
//                      sweep every parameter and gradient out of the caches (mlp: a device's
//                      first forward 1.1-1.27x a later one, a stage's first backward 1.1x;
//                      docs/performance.md, "A stage's first op of a kind in a step"). Every
//                      shape runs such ops on its critical path, but not as many: four stages
//                      of two per device run twice GPipe's first forwards in the fill, zero
//                      bubble's I and W are a kind each. The spans below count an op of either
//                      kind as it would have run warm (divided by its scales).
//   forwardScale(b)  = how much longer the layers ran in the references than profiled at
//                      micro-batch size b: a cell per shape timed at b, log(median over the
//                      shape's micro-batches of b samples of (sum over stages of its forward
//                      spans) / the profile's forward of the whole model at b, for a
//                      checkpointed micro-batch its forward without a graph); y(b) the median
//                      of b's cells, c the median of y over the sizes; forwardScale(b) =
//                      exp(c + share (y(b) - c)), share = tau^2 / (tau^2 + s^2) (empirical Bayes:
//                      tau = kSizeScaleSd, how far two sizes' scales truly differ; s^2 the
//                      cells' pooled variance about their size's mean, how far the shapes
//                      disagree at one size); backwardScale likewise (a zero-bubble reference's
//                      I and W spans against the profile's I and W halves)
//   speed(d)         = the scaled profile's compute of device d's stages' layers over what
//                      they measured, over every run (on CPU the stages of one host do not run
//                      alike: the last one's backward measured 10-15% slower per GEMM), its
//                      split (log speed(d) less the devices' mean) then drawn toward the mean:
//                      exp(mean + share x split(d)), share = tau^2 / (tau^2 + s^2), tau =
//                      kDeviceSplitSd, s^2 how far one run's split wanders about the pooled one
//                      (per device, over the runs that timed every device). Identical cores of a
//                      shared host split by the moment, not by the device (one of the two vCPUs
//                      ran the same work 1.5x as long as the other for minutes, then not at
//                      all): two sweeps' calibrations read device 1 over device 0 at 1.08 and
//                      0.87, and their predictions of the same space 8% apart at the median.
//                      A split every run agrees on (devices of different kinds) stays whole.
//   lossColdStart(s) = per shape s, the median over every timed step of its references that
//                      calls the loss more than once of (its first loss op - the median of its
//                      later ones of the same size), each span x the speed of its device, never
//                      negative: the loss's code and state go cold between steps, a step's first
//                      call pays for it (mlp's MSE 30-70 us of a 60-140 us call), and the profile
//                      times a first call. Per shape: how warm a later call finds the loss is
//                      what the schedule runs between two (GPipe 62-68 us, 1F1B 29-36 us for
//                      mlp), and a difference within one step stays out of the machine's slow
//                      spells. A shape without one takes the median over the shapes'.
//   lossScale(b)     = likewise of the loss ops of micro-batches of b samples, each span x the
//                      speed of its device and a later call's plus its shape's cold start, over
//                      the profile's loss forward at b
//   messageLatency   = (runs of one process per device, whose traces hold send and receive
//                      spans joined by flows) over the messages whose receiver was already
//                      waiting when the send began: receive end - send start - the link's drain
//                      time; the median per direction, the mean of the directions (a clock
//                      offset between two ranks lengthens one direction as it shortens the other)
//   wakeLatency      = (threads of one process) the median over every op whose device sat idle
//                      from before the op of another device it waited for ended until after it
//                      of (its start - that op's end): a sleeping worker's wake-up (about 60 us
//                      on a 2-core VM; core/step_breakdown.h, wakeUpsNs)
//   overhead(m)      = a + b m, never negative: the least-squares line through each chunk
//                      count's median over the shapes of (the median step of the shape's
//                      reference m - the simulator's step for it with the scales, speeds,
//                      message and wake latency applied): zeroing, waking the workers at the
//                      step's start, whatever else the simulated ops miss; one chunk count: a alone.
//
// Why each size is drawn toward the others (until 2026-12-03 each size's scale was y(b) itself):
// a calibration times its shapes' second chunk counts one after another, so a slow spell lifts
// every cell of one size (resnet's backward at 16 samples fitted 1.51 where 8 and 32 read
// 1.03-1.11), and the shapes disagree at one size by 6-7% (the loss 13%) on a quiet machine.
// But what one size reads apart from the others is partly real for the sweep's own candidates:
// the profile's error at that size, which the candidates share (gpt at 2 samples read 0.73 in
// one run, and its candidates ran as that said). s^2 is the noise of y(b), not s^2 over the count of cells: the
// cells of one size run back to back, and over two runs of five sweeps y(b) wandered by 0.057
// (forward) where one cell's spread was 0.060. Refitted from the same references, two suites
// (a quiet and a busy one): two runs of a sweep predicted their candidates 1.6% and 2.4% apart
// (mean of the sweeps' medians) where y(b) put them 3.0% and 2.8%, the measured candidates' step
// MAPE before drift 4.1% and 12.9% where it read 4.3% and 12.5%. One trend in log2(size) per
// kind of scale, tried first, read 2.2% and 5.1% apart, 4.0% and 13.4% (docs/performance.md,
// "Each size's scale drawn toward the others'").
//
// A fit leaves Calibration::byShape empty; a calibration file may still give a shape
// corrections of its own (docs/formats.md), which its candidates are then predicted with.
//
//   step span  |<--------------------------------- step ------------------------------------>|
//   stage 0   [f0][f1][f2][f3]              ...               [b3][b2][b1][b0]  SGD
//   stage 1       [f0][f1][f2][f3] loss [b3][b2][b1][b0]
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/trace.h>
#include <pipeprof/simulator/calibration.h>

#include <cstdint>
#include <map>
#include <vector>

namespace pipeprof {

/// How far the scales of two micro-batch sizes truly differ, in log terms (about 10%): what each
/// size's deviation from the others is weighed against. Chosen over two suites of five sweeps
/// each run twice (2026-12-03): 0.07, 0.1 and 0.15 read alike (docs/performance.md, "Each size's
/// scale drawn toward the others'").
inline constexpr double kSizeScaleSd = 0.1;

/// How far two devices of a calibration truly run apart, in log terms (about 5%): what the
/// references' split of the devices is weighed against, by how far one run's split wanders about
/// their pooled one. Chosen over four suites of nine sweeps each run twice (2026-12-05 22:51 to
/// 12-06 10:53, refitted): 0.03, 0.05 and 0.1 read alike within a point or two of step error,
/// 0.05 between them (docs/performance.md, "The devices' split drawn toward their mean").
inline constexpr double kDeviceSplitSd = 0.05;

/// The layers of a `layers`-layer model split as evenly as possible over `stages`
/// stages (the first ones take one more); the reference pipelines' balance.
std::vector<std::int64_t> evenBalance(std::int64_t layers, std::int64_t stages);

/// The reference pipeline of chunk count `chunks` under `schedule` and `checkpoint`: every
/// device, its stages (stagesPerDevice per device for interleaved, else one; at most one per
/// layer) with an even balance.
Candidate referenceCandidate(std::int64_t layers, std::int64_t devices, std::int64_t chunks, std::int64_t batch,
                             ScheduleKind schedule = ScheduleKind::GPipe, std::int64_t stagesPerDevice = 1,
                             Checkpoint checkpoint = Checkpoint::Never);

/// The step overhead per chunk count: the least-squares line a + b m through `unexplainedNs`
/// (by chunk count: the median step's time beyond the simulated step, possibly negative) at
/// each of its chunk counts, rounded, never negative. Two chunk counts: the points themselves.
std::map<std::int64_t, TimeNs> overheadLine(const std::map<std::int64_t, TimeNs>& unexplainedNs);

/// One traced reference run: the candidate it trained and its trace (step spans and the
/// pipeline's op spans, each op carrying its micro-batch and stage).
struct ReferenceRun {
  Candidate candidate;
  Trace trace;
  /// When it ran: the middle of its run, in seconds after the calibration began; negative when
  /// unknown. The fit does not use it; the probe's samples of the machine's speed do
  /// (reference_speed.h).
  double atS = -1.0;
};

/// The calibration the runs imply (see the file comment); runs of the same shape and chunk
/// count pool their steps, and are one cell of the shape. Stage j of every run is on cluster
/// device j mod its device count. Scales are clamped to [0.25, 4] (the loss's to [0.25, 64]) and speeds to [0.5, 2]; a
/// size without spans or without profile time keeps 1.0; overheads are never negative; the
/// message latency is fitted from 3 messages or more (else left unset), never negative, with the
/// cluster's links for the drain time, and applies to the links between ranks of one host
/// (calibratedCluster); the wake latency from 3 wake-ups or more of a cluster that is not one
/// process per device (else left unset); a shape's loss cold start from 3 of its steps or more
/// with a later loss call of the first one's size, of a profile with a loss (else left unset).
/// provenance.references lists each shape's and chunk count's steps and median (the caller
/// fills in the rest of the provenance); no runs give an empty calibration. Throws what the
/// simulator throws for a reference candidate it cannot simulate.
Calibration calibrationFromRuns(const Profile& profile, const Cluster& cluster, const std::vector<ReferenceRun>& runs);

}  // namespace pipeprof
