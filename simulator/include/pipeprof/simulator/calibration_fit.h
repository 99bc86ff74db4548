// Fitting a calibration to traced reference pipelines: the scales, device speeds and step overheads they imply.
//
// A reference pipeline of chunk count m runs every device, the layers split evenly over its
// stages, in one shape: a schedule and a checkpoint mode (GPipe without checkpoints, or a shape
// it calibrates). From traced runs of one reference per shape and chunk count (in rounds, so a
// burst of load on a shared machine spoils part of every reference's samples rather than all of
// one's):
//
//   forwardScale(s, b) = how much longer shape s's layers ran in its references than profiled
//                      at micro-batch size b, as a shape's effect times a size's: the cells
//                      log(median over shape s's micro-batches of b samples of (sum over
//                      stages of its forward spans) / the profile's forward of the whole model
//                      at b), fitted by Tukey's median polish (each effect the median of what
//                      the other leaves); backwardScale likewise. A reference timed in a slow
//                      spell is one cell off the table's pattern and moves its shape's effect
//                      and its size's by little, where a scale per shape and size took it whole
//                      (resnet, 2026-11-29: GPipe's x1 reference at 242 ms against 132 ms an
//                      hour before gave x1 a backward scale of 2.3). One shape: each size's
//                      own median. The polish runs over the shapes timed at every size; a
//                      shape a bounded calibration timed at some sizes only gets its effect
//                      from those (the median of its cells less the sizes' effects) and a
//                      scale at every size: shape s timed at size p alone is
//                      c(s, p) / c(gpipe, p) x c(gpipe, b) at each size b.
//   speed(s, d)      = the scaled profile's compute of device d's stages' layers over what
//                      they measured, over shape s's runs (on CPU the stages of one host do not
//                      run alike: the last one's backward measured 10-15% slower per GEMM)
//   lossScale(s, b)  = likewise of the loss ops of micro-batches of b samples, each span x the
//                      speed of its device, over the profile's loss forward at b
//   messageLatency   = (runs of one process per device, whose traces hold send and receive
//                      spans joined by flows) over the messages whose receiver was already
//                      waiting when the send began: receive end - send start - the link's drain
//                      time; the median per direction, the mean of the directions (a clock
//                      offset between two ranks lengthens one direction as it shortens the other)
//   overhead(s, m)   = a + b m, never negative: the least-squares line through each chunk
//                      count's median step time of shape s's reference m - the simulator's step
//                      time for it with the scales, speeds and message latency applied
//                      (zeroing, waking workers, whatever else the simulated ops miss; one chunk
//                      count: a alone). At a chunk count the own shape (below) timed and
//                      shape s did not: the own shape's overhead there plus the mean of s's
//                      unexplained time less the own shape's overhead at those s timed.
//
// and one message latency over the runs of every shape. The runs of GPipe without checkpoints
// give the calibration's own scales, speeds and overheads (every candidate's, unless its shape
// has its own); every other shape's are its entry in Calibration::byShape. Shapes differ in
// what the profile does not see: an interleaved rank switches between its stages' weights at
// every op; a backward right after its recompute finds the micro-batch in cache, one after
// another micro-batch's forward and a wait for its gradient does not (2 ranks on 2 cores, 1F1B:
// rank 0's backward 1.0 ms after a wait under `never`, 0.6 ms under `except_last`).
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
};

/// The calibration the runs imply (see the file comment); runs of the same shape and chunk
/// count pool their steps. Without runs of GPipe without checkpoints, the calibration's own
/// corrections are those of the first shape (gpipe, 1f1b, interleaved by stages per device;
/// then always, except_last, never). Stage j of every run is on cluster device j mod its device
/// count. Scales are clamped to [0.25, 4] (the loss's to [0.25, 64]) and speeds to [0.5, 2]; a
/// size without spans or without profile time keeps 1.0; overheads are never negative; the
/// message latency is fitted from 3 messages or more (else left unset), never negative, with the
/// cluster's links for the drain time, and applies to the links between ranks of one host
/// (calibratedCluster).
/// provenance.references lists each shape's and chunk count's steps and median (the caller
/// fills in the rest of the provenance); no runs give an empty calibration. Throws what the
/// simulator throws for a reference candidate it cannot simulate.
Calibration calibrationFromRuns(const Profile& profile, const Cluster& cluster, const std::vector<ReferenceRun>& runs);

}  // namespace pipeprof
