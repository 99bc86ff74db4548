// The layer profile (pipeprof.profile/v1): measured per-layer costs of a model on a device type.
#pragma once

#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

inline constexpr const char* kProfileSchema = "pipeprof.profile/v1";

/// How one pass of a layer (its forward or its backward) runs on a CUDA device when the host
/// launches it without synchronizing: the host's time to launch its kernels, their time on
/// the device, and how many there are. The simulator's launch model (docs/simulator.md,
/// "Launches") feeds a stream from the launching thread with these.
struct LaunchCost {
  TimeNs hostNs = 0;         ///< the launching thread's time inside the pass (its launches)
  TimeNs deviceNs = 0;       ///< the sum of the pass's kernel durations on the device
  std::int64_t kernels = 0;  ///< kernels launched; at least 1 when deviceNs > 0
};

/// An optimizer stepping one layer's parameters alone: its time (median) and the transient peak
/// of its temporaries above its state.
struct OptimizerStepCost {
  TimeNs ns = 0;
  Bytes bytes = 0;
};

/// A layer's backward split as zero-bubble schedules run it (core/schedule.h): I, the gradient
/// of its input, then W, the gradients of its weights.
struct BackwardSplit {
  TimeNs inputNs = 0;   ///< I
  TimeNs weightNs = 0;  ///< W
  /// What I keeps alive for W (what the weights' gradients need: the inputs of the layer's
  /// matrix products and the gradients entering them); the rest of its saved bytes is freed
  /// when I ends.
  Bytes weightSavedBytes = 0;
  /// W's transient peak above what it starts with (the weights' gradients before they are
  /// accumulated).
  Bytes weightWorkspaceBytes = 0;
  /// I's transient peak above what it starts with, the gradient of the layer's output
  /// included: the engine keeps every saved tensor until I ends, and the gradients I captures
  /// for W add up as it goes. Absent in profiles measured before 2026-11-27 (then estimated).
  std::optional<Bytes> inputWorkspaceBytes = std::nullopt;
  /// What of that I keeps for W: the gradients it captured (those entering the layer's matrix
  /// products), its output's among them where a matrix product takes it as it is. Comes with
  /// inputWorkspaceBytes.
  std::optional<Bytes> inputKeptBytes = std::nullopt;
};

/// Costs of one layer at one micro-batch size.
struct CostSample {
  std::int64_t microBatch = 1;  ///< samples in the micro-batch
  TimeNs forwardNs = 0;
  TimeNs backwardNs = 0;
  Bytes outputBytes = 0;  ///< the layer's output
  Bytes savedBytes = 0;   ///< what autograd keeps for backward
  /// Transient peak of the forward above the layer's live results.
  Bytes forwardWorkspaceBytes = 0;
  /// Transient peak of the backward above the bytes live when it starts (the gradients of the
  /// layer's output and input included), with the layer's output and the gradient of it held by
  /// the caller to the backward's end, as a pipeline holds its stage's output and the gradient
  /// it received: the figure of a stage's last layer.
  Bytes backwardWorkspaceBytes = 0;
  /// CUDA only, and optional: the forward's and the backward's launches (both or neither; a
  /// profile carries them on every sample or on none). Absent in CPU profiles and older files.
  /// (Initialised here so that aggregate initialisers of the fields above may leave them out
  /// under -Wmissing-field-initializers.)
  std::optional<LaunchCost> forwardLaunch{};
  std::optional<LaunchCost> backwardLaunch{};
  /// The backward split into I and W, measured alongside the whole backward; absent in older
  /// files (a profile carries it on every sample or on none).
  std::optional<BackwardSplit> backwardSplit{};
  /// The part of outputBytes the graph keeps for backward (the layer's own saved result, a later
  /// layer's saved input, or what it is a view of): at most outputBytes. Absent in files
  /// measured before 2026-11-28, then taken as min(outputBytes, savedBytes) -- which a layer
  /// whose saved bytes are something else (a bf16 cast copy of a Linear's weight) misreads.
  std::optional<Bytes> outputSavedBytes{};
  /// The same peak for a layer inside a stage: the gradient of its output made by the backward
  /// itself and let go once used, its output held by nothing but the graph (above the bytes live
  /// when it starts, that output not counted unless the graph keeps it). A layer of many ops
  /// peaks lower than backwardWorkspaceBytes says, once its first ops freed those two. Absent in
  /// files measured before 2026-11-30, then taken as backwardWorkspaceBytes.
  std::optional<Bytes> innerBackwardWorkspaceBytes{};
  /// How far the backward's last allocation -- the gradient of the layer's input, made as it
  /// finishes -- lifts its peak: backwardWorkspaceBytes less the highest the backward held before
  /// that allocation (0 where the peak came earlier). inputEndRiseBytes: the same of a split
  /// backward's I. In a stage the first layer's backward ends the op, so that part of its peak
  /// comes after whatever other devices freed meanwhile. Absent in files measured before
  /// 2026-12-05, then 0 (the whole peak from the op's start).
  std::optional<Bytes> backwardEndRiseBytes{};
  std::optional<Bytes> inputEndRiseBytes{};
  /// What of the layer's saved bytes the next layer's backward lets go, one layer before the
  /// layer's own: its output where only the next layer's nodes keep it (a convolution's, which the
  /// BatchNorm after it saves as its input), 0 where the layer's own node keeps it too (a ReLU's
  /// result). Absent in files measured before 2026-12-06, then 0 (all freed by its own backward).
  std::optional<Bytes> savedFreedByNextBytes{};
  /// The forward run without a graph, as a checkpointed micro-batch's forward (and a forward
  /// outside training) runs: no tensor saved for backward, no autograd node made, under autocast
  /// no cast kept in the cache. Absent in files measured before 2026-12-04, then taken as
  /// forwardNs (forwardWithoutGraphNs).
  std::optional<TimeNs> forwardNoGradNs{};

  /// The forward without a graph: forwardNoGradNs where measured, else forwardNs.
  TimeNs forwardWithoutGraphNs() const { return forwardNoGradNs.value_or(forwardNs); }
};

/// Costs at any micro-batch size from samples sorted by size: piecewise-linear between samples,
/// extrapolated from the nearest two outside them, proportional to size with a single sample.
/// Times and bytes are clamped at zero and rounded to the nearest integer. Launch data is
/// interpolated alike where both samples carry it (the kernel count rounded, at least 1 while
/// the device time is positive), except that with a single sample only the device time is
/// proportional: a launch's host time and kernel count do not grow with the batch. Throws
/// std::invalid_argument, naming `what`, for a size below 1 or no samples.
CostSample costAtSize(const std::vector<CostSample>& costs, std::int64_t microBatch, const std::string& what);

struct LayerProfile {
  std::string name;
  Bytes paramBytes = 0;
  Bytes gradBytes = 0;  ///< defaults to paramBytes in the file format
  /// The state of the profile's optimizer for the layer's parameters once it has stepped
  /// (momentum: one buffer per parameter, adam and adamw: two; optimizerStateBytes). Defaults to 0.
  Bytes optimizerBytes = 0;
  /// The profile's optimizer stepping the layer's parameters alone: its time (median) and the
  /// transient peak of its temporaries above the state (Adam's square root and quotient, the
  /// size of a parameter). 0 in older files.
  TimeNs optimizerStepNs = 0;
  Bytes optimizerStepBytes = 0;
  /// bf16/fp16: the cast copies of the layer's weights that autocast's cache keeps from their
  /// first use in a step to the step's end, shared by every micro-batch (the ops that cast a
  /// weight themselves; a copy made of a view, as LibTorch 1.13's Linear casts weight.t(), is
  /// not cached and is in each micro-batch's savedBytes instead). 0 in fp32 and older files.
  Bytes castCacheBytes = 0;
  /// Every optimizer kind's step of the layer's parameters, measured alongside the profile's
  /// own (optimizerStepNs and optimizerStepBytes are its kind's entry), so a prediction can be
  /// made for another kind (withOptimizer). Empty in older files and for layers without
  /// trainable parameters.
  std::map<OptimizerKind, OptimizerStepCost> optimizerSteps;
  std::vector<CostSample> costs;  ///< sorted by microBatch, distinct sizes

  /// Costs at any micro-batch size (costAtSize).
  CostSample costAt(std::int64_t microBatch) const { return costAtSize(costs, microBatch, "layer '" + name + "'"); }
};

/// The model's loss on the last stage's output, measured like a layer whose input is that
/// output (CostSample's fields, read for the loss): forwardNs and backwardNs its two passes
/// (the backward makes the gradient of the output), timed right after the last layer's forward
/// as the last stage runs it; savedBytes what its graph keeps beyond the
/// output itself (under autocast, MSE's fp32 copy of a bf16 output); forwardWorkspaceBytes the
/// forward's transient above that; backwardWorkspaceBytes the backward's peak above its start,
/// the output's gradient included; outputBytes the loss itself. No launch data.
struct LossProfile {
  std::vector<CostSample> costs;  ///< sorted by microBatch, distinct sizes; empty: not measured
  /// Whether the loss's graph keeps the output alive until the backward (fp32 MSE saves it);
  /// false when it saves something else in its place (under autocast, a cast copy), and the
  /// output is freed once the loss returns unless a layer saved it.
  bool keepsOutput = true;
  /// How much longer a step's first loss op takes than each later one of the same step: the
  /// loss's code and state go cold between steps, and costs[].forwardNs is a first call's (the
  /// profiler's timed passes call the loss once each). A later call costs forwardNs less this,
  /// never below 0. Not measured by the profiler and not in profile files: a calibration's
  /// (Calibration::lossColdStartNs, applied by calibratedProfile); 0: every call alike.
  TimeNs coldStartNs = 0;

  bool measured() const { return !costs.empty(); }
  /// Costs at any size (costAtSize); all zero when not measured (older profiles).
  CostSample costAt(std::int64_t microBatch) const;
};

/// A skip route with the size of its tensor.
struct SkipProfile {
  std::string name;
  std::int64_t stashLayer = 0;
  std::int64_t popLayer = 0;
  Bytes bytesPerSample = 0;  ///< the skip tensor: what a copy to another device moves
  /// The part of it, per sample, that the backward graph does not save: when the micro-batch
  /// is not checkpointed the stash holds only this (the saved part is in a layer's savedBytes
  /// already), from the stash to the pop's forward. A checkpointed micro-batch saves nothing,
  /// so there the skip holds bytesPerSample until the pop's backward.
  Bytes unsavedBytesPerSample = 0;
  /// Whether the popping layer's backward hands the skip the very tensor it hands its input (an
  /// add passes one gradient to both; a concatenation gives each a slice, which a stage copies
  /// for the skip). A split backward's W then keeps the skip's gradient as the gradient the
  /// layer before the pop captured (that layer's input_kept_bytes): no extra bytes until W.
  bool gradientSharedWithInput = false;
  /// The same for a whole backward (B), which leaves the skip's gradient in its leaf: shared
  /// where the leaf gets the tensor itself (a stage hands a popped skip out as a view of its
  /// leaf under autocast, and the view's gradient shares storage with the input's), a clone of
  /// it where autograd accumulates it into the leaf as it is (fp32). Old profiles read false.
  bool gradientSharedInBackward = false;
  /// Whether the popping layer's I hands the skip a slice of the gradient of its output (a
  /// concatenation). Until I ends that slice keeps the whole gradient alive, which I then lets
  /// go when it gives the slice storage of its own: the skip's gradient is one of I's results,
  /// not a tensor held from the pop down. Old profiles read false.
  bool gradientSliceOfOutput = false;
};

/// A parameter that several layers hold (tied embeddings). Each of those layers counts it in
/// its paramBytes, gradBytes and optimizerBytes; a device whose stages hold it in several
/// layers holds one copy, and the copies on different devices sum their gradients at the end
/// of the step (docs/simulator.md, "Shared parameters").
struct SharedParameterProfile {
  std::string name;                  ///< as its first layer names it ("embed.tokens.weight")
  std::vector<std::int64_t> layers;  ///< ascending, at least two
  Bytes bytes = 0;                   ///< the parameter's (its gradient's are the same)
};

/// CPU: the optimizer steps of several pipeline devices of one host running at once. They share
/// the host's caches and memory bandwidth, so each takes longer than its layers'
/// optimizer_step_ns, which were timed with the other cores idle (docs/profiler.md, "The optimizer
/// step"). The layer profiler measures it with `devices` threads, each stepping a contiguous
/// share of the layers: slowdown[kind] = their times stepping at once / the same shares' times
/// stepped one after another (the median over its passes).
struct OptimizerAtOnce {
  std::int64_t devices = 1;                  ///< threads that stepped at once; 1: not measured
  std::map<OptimizerKind, double> slowdown;  ///< per kind measured; > 0

  bool measured() const { return devices > 1 && !slowdown.empty(); }
  /// What a `kind` step takes with `stepping` devices of one host at once, over its time alone:
  /// 1 + (s - 1) x (stepping - 1) / (devices - 1) with s = max(1, slowdown[kind]) -- linear in
  /// the other devices stepping, exact at the measured count; 1 when `kind` was not measured or
  /// stepping <= 1.
  double factor(OptimizerKind kind, std::int64_t stepping) const;
};

/// One pass of the layer profiler and the wall time it took over every micro-batch size.
struct ProfilePass {
  std::string name;  ///< "memory", "skip gradients", "loss memory", "timed runs", "kernels", "optimizer"
  double seconds = 0.0;
};

/// What measuring the profile cost: the budget it was measured within, the timed runs that
/// budget allowed and each pass's time (docs/profiler.md, "The budget"). Informational; older
/// files have none.
struct ProfilingTime {
  double budgetSeconds = 0.0;  ///< the whole profile's budget (0: none recorded)
  /// The runs each layer's times are the medians of, at the size that got fewest: the timed
  /// passes' and the memory passes' (one whole backward, one split), which time what they run.
  std::int64_t fewestTimedRuns = 0;
  std::vector<ProfilePass> passes;  ///< in the order they first ran
  /// The layers that took an identical earlier layer's times and backward figures instead of
  /// being run, because the memory passes of every layer were expected to outlast the budget
  /// (docs/profiler.md, "Identical layers"). 0 in older files.
  std::int64_t layersFromIdentical = 0;

  bool empty() const { return passes.empty(); }
  double seconds() const;  ///< every pass together
};

/// One line for people: "29.9 s within a budget of 5 s: memory 16.2 s, timed runs 13.4 s (4 runs
/// at the fewest, the memory passes' included), optimizer 280 ms", how many layers took an identical
/// layer's figures, and where it took more than the budget by a fifth, that the passes a profile
/// cannot do without took longer.
std::string describeProfilingTime(const ProfilingTime& profiling);

/// Where and how a profile was measured; a sweep refuses a cached profile whose environment
/// differs from its own.
struct ProfileEnvironment {
  std::string model;         ///< zoo name or file path
  std::string deviceType;    ///< "cpu" or "cuda"
  std::string deviceName;    ///< e.g. "NVIDIA H100" or the CPU model; informational
  std::int64_t threads = 1;  ///< intra-op threads used while measuring
  std::string torchVersion;  ///< LibTorch version, e.g. "1.13.1"
  /// The training step measured: the forward's arithmetic (a layer's times and saved bytes are
  /// that precision's) and the optimizer (the layers' optimizer fields). Older files: fp32, SGD.
  Precision precision = Precision::Fp32;
  OptimizerSpec optimizer;
  ProfilingTime profiling;
};

struct Profile {
  ProfileEnvironment environment;
  Bytes inputBytesPerSample = 0;  ///< the model input, per sample (partition 0's input)
  std::vector<LayerProfile> layers;
  std::vector<SkipProfile> skips;
  std::vector<SharedParameterProfile> sharedParameters;  ///< absent in older files: none
  LossProfile loss;                                      ///< absent in older files: the loss then costs nothing
  /// CUDA only (0 elsewhere): the device memory the math libraries keep for one (host thread,
  /// stream) pair once the thread has launched a matrix multiplication on the stream -- LibTorch
  /// 2.x's cuBLAS and cuBLASLt workspaces, allocated through the caching allocator and kept
  /// until cleared (docs/simulator.md, "Memory model", says what the simulator charges).
  Bytes libraryWorkspaceBytes = 0;
  /// CPU only; absent in older files and where one device had the cores (not measured).
  OptimizerAtOnce optimizerAtOnce;
  /// By micro-batch size: how much longer a compute op runs when its device's previous op was
  /// another stage's (two or more stages per device) than on a device holding one stage, whose
  /// weights and activations it then finds in the caches. Not measured by the profiler
  /// and not in profile files: a calibration's (MicroBatchScale::afterStageSwitch, applied by
  /// calibratedProfile); a size absent: 1.
  std::map<std::int64_t, double> stageSwitchScales;
  /// By micro-batch size: how much longer a compute op runs as its stage's first of its kind in
  /// the step (its first forward, first backward, first I or W) than a later one: the optimizer's
  /// step and the zeroing between two steps sweep every parameter and gradient, and the stage's
  /// weights, code and state come back into the caches with its first op. Not measured by the
  /// profiler and not in profile files: a calibration's, fitted from the references' first ops
  /// against their later ones (MicroBatchScale::firstInStep, applied by calibratedProfile); a
  /// size absent: 1.
  std::map<std::int64_t, double> firstInStepScales;

  std::int64_t layerCount() const { return static_cast<std::int64_t>(layers.size()); }
  /// Whether the profile was measured on a CUDA device (environment.deviceType "cuda"): its
  /// sizes are the caching allocator's blocks and its partitions hold library workspaces.
  bool onCuda() const { return environment.deviceType == "cuda"; }
  /// Whether every cost sample carries launch data for both passes (the simulator then runs its
  /// launch model; docs/simulator.md, "Launches"). False for CPU profiles and older files.
  bool hasLaunchData() const;
  /// Whether every layer's cost samples carry the backward's I/W split, which the zero-bubble
  /// schedules need. False for older files.
  bool hasBackwardSplit() const;
  /// The skip routes as the schedule needs them.
  std::vector<SkipRoute> skipRoutes() const;
  /// Whether the profile can stand for a training step with this optimizer kind: its own, or
  /// one whose step every layer with gradients measured (LayerProfile::optimizerSteps).
  bool predictsOptimizer(OptimizerKind kind) const;
};

/// The profile as if measured with `optimizer`: each layer's optimizer state is that kind's
/// (optimizerStateCopies x its gradients), its step time and temporaries that kind's measured
/// ones, and environment.optimizer says so. The layers' times and saved bytes do not depend on
/// the optimizer. Throws std::invalid_argument, naming the kinds the profile can stand for, when
/// it cannot stand for this one (!predictsOptimizer).
Profile withOptimizer(Profile profile, const OptimizerSpec& optimizer);

/// JSON form. profileFromJson validates everything (schema tag, required fields, non-negative
/// times and sizes, skip layers in range and stash < pop, a library workspace and launch data
/// only on CUDA, launch data complete and on every sample or none) and throws FormatError
/// naming the file, the JSON path and what was expected.
nlohmann::json toJson(const Profile& profile);
Profile profileFromJson(const nlohmann::json& json, const std::string& file);
Profile readProfile(const std::string& path);
void writeProfile(const Profile& profile, const std::string& path);  ///< atomic

}  // namespace pipeprof
