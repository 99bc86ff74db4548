// The layer profile builder: per-layer times, memory and skip sizes at several micro-batch sizes.
//
// Per micro-batch size b (see docs/profiler.md and the memory model's "Profile fields"):
//
//   memory (layer_memory_profiler.cpp; on the target device, tag = layer index; the library
//   workspace measured first)
//     on CPU the tracked CPU allocator counts what the thread allocates under tag L; on CUDA
//     layer L runs with a stream of its own current whose caching-allocator blocks count
//     against tag L (TaggedStreams in device_memory.h; its backward runs on that stream too),
//     the device synchronised after each layer. Every (thread, stream) pair's library workspace
//     is created by pass 1, so it is in every "before" and never in a layer's figures.
//     1. one untimed pass (per-layer forward + backward) so every gradient already exists, as
//        in a training run whose grads are zeroed in place;
//     2. the whole model forward in training mode, layer L under tag L, keeping the graph:
//        output bytes, forward workspace (peak - live after the layer), and after the last
//        layer, its output let go (the graph kept), saved_bytes(L) = what tag L still holds,
//        each skip's unsaved bytes (its tensor's, when nothing holds that any more after the
//        pop) and output_saved_bytes(L) = the bytes of L's output whose storage the graph alone
//        still keeps alive;
//     3. per layer, on a detached copy of its input: forward and backward under tag L:
//        backward workspace = peak above the bytes live when it started, the output and the
//        gradient of it (ones) held throughout, as a stage holds its last layer's; then again
//        as a layer inside a stage runs (the output let go, its gradient made by the backward
//        and let go once used): the inner backward workspace;
//     4. per layer, on a copy of its input made under tag L, forward and then the backward
//        split into I and W (split_backward.h): weight_saved_bytes = what W frees (what I kept
//        for it: the input when the weights' gradient needs it, the gradients it captured),
//        weight_workspace_bytes = W's peak above its start, input_workspace_bytes = I's peak
//        above its start (its output's gradient made inside; the graph is whole until I ends),
//        input_kept_bytes = the gradients I captured for W (WeightBackward::keptGradientBytes).
//     Passes 3 and 4 run every layer as a timed pass does (below): each is timed too, outside
//     what it measures (the loss's forward and backward in pass 3 after the last layer's
//     forward), and counts as one run of the time samples, whole and split; except the
//     backward of a layer that pops a skip, whose skip needs no gradient here (time_samples.h,
//     popsASkip).
//   skip gradients (skip_gradient_profiler.cpp)
//     each popping layer alone, its backward split (I) and whole: whether the gradient it hands
//     the skip is the very tensor it hands its input, and whether I's is a slice of the gradient
//     of its output (SkipProfile's gradient_* fields). The whole backward's probe runs a
//     popping layer as a timed pass does, and times that backward: its time sample.
//   time (layer_time_profiler.cpp; options.device, the memory device so far)
//     the memory (and skip) passes' runs, then passes that time the layers still short of
//     minRuns runs whole and split (a warm-up before them), then passes of every layer while the
//     next is expected to end within the size's share of the budget (profile_budget.h; or a
//     cap), the warm-ups left first: each pass runs the layers in order, each on a detached
//     input that requires grad, timing its forward and then
//     torch::autograd::backward of its output alone, or on every other pass that backward split
//     into I and W; after the last layer's forward, the loss of its output, forward and
//     backward, as the last stage runs it; medians are kept.
//     On CUDA each pass also times the host up to the return of the forward and of the
//     backward, before the synchronize: the host's launch time (LaunchCost::hostNs).
//   precision (bf16, fp16)
//     every forward above runs under autocast, every backward paused, as in a pipeline step.
//     Pass 1 fills autocast's cache: what each layer's tag holds more before the cache is
//     cleared than after is its cast_cache_bytes; the cache is filled again (a forward without
//     gradients) before pass 2, so saved_bytes holds only each micro-batch's own copies.
//   loss (after pass 2, on its output; loss_profiler.cpp)
//     the model's loss of the last layer's output under tag n: what its graph keeps, its
//     forward's transient and its backward's peak (the output's gradient included). Its time
//     is taken in the timed passes below, right after the last layer's forward.
//   optimizer (optimizer_profiler.cpp; once, before the sizes)
//     per optimizer kind, one over each layer's trainable parameters (the profile's
//     hyperparameters where they apply), each stepped once (its state: exactly
//     optimizerStateCopies x the gradients); then passes that write over the caches and step
//     every layer in order, as a device steps its stages after its backward: each layer's
//     median time, with its transient peak above the state under tag L: optimizer_steps, the
//     profile's own kind's also as optimizer_step_ns and optimizer_step_bytes, its state as
//     optimizer_bytes.
//   kernels (layer_time_profiler.cpp; CUDA, CUPTI's cheap mode)
//     one more pass, each layer's forward and backward captured alone: how many kernels each
//     ran and their summed device time. Without CUPTI the profile has no launch data at all.
//
// The budget (profile_budget.h) bounds the whole profile: every pass above is timed into
// Profile::environment.profiling, and the timed runs get what the others leave. Where every
// layer's memory passes at every size are expected to outlast it, the passes leave out each layer
// identical to an earlier one (identical_layers.h; Layers::sameAs): pass 2 still runs it, the
// others hand its input on, and it takes its twin's figures.
//
// Layers run one at a time through layer_runs.h. Skip tensors go through a tracker of our own
// (profiler_skip_tracker.h): in the memory pass it keeps the stashed tensor as is (its graph
// alive, as in a Pipe); in timed passes it hands out detached copies, so a popping layer's
// backward stops at the skip instead of running the stasher's too.
#include <pipeprof/runtime/layer_profiler.h>

#include "layer_profiling/identical_layers.h"
#include "layer_profiling/layer_memory_profiler.h"
#include "layer_profiling/layer_runs.h"
#include "layer_profiling/layer_time_profiler.h"
#include "layer_profiling/loss_profiler.h"
#include "layer_profiling/optimizer_profiler.h"
#include "layer_profiling/profile_budget.h"
#include "layer_profiling/profiler_skip_tracker.h"
#include "layer_profiling/profiling_scopes.h"
#include "layer_profiling/skip_gradient_profiler.h"
#include "memory/device_memory.h"
#include "stage/autocast.h"
#include "stage/shared_parameters.h"
#include "training/make_optimizer.h"

#include <pipeprof/core/allocator_rounding.h>
#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/library_workspaces.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/skip.h>

#include <torch/version.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace pipeprof {

using namespace layer_profiling;

namespace {

/// Parameters, gradients, buffers and the training flag, restored on destruction.
class ModuleSnapshot {
 public:
  explicit ModuleSnapshot(const torch::nn::Module& module) : module_(module), training_(module.is_training()) {
    torch::NoGradGuard noGrad;
    for (const torch::Tensor& p : module.parameters()) {
      parameters_.push_back(p.detach().clone());
      grads_.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::Tensor());
    }
    for (const torch::Tensor& b : module.buffers()) buffers_.push_back(b.detach().clone());
  }
  ~ModuleSnapshot() {
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> parameters = module_.parameters();
    for (std::size_t k = 0; k < parameters.size() && k < parameters_.size(); ++k) {
      parameters[k].detach().copy_(parameters_[k]);
      parameters[k].mutable_grad() = grads_[k].defined() ? grads_[k].to(parameters[k].device()) : torch::Tensor();
    }
    std::vector<torch::Tensor> buffers = module_.buffers();
    for (std::size_t k = 0; k < buffers.size() && k < buffers_.size(); ++k) buffers[k].detach().copy_(buffers_[k]);
    const_cast<torch::nn::Module&>(module_).train(training_);
  }
  ModuleSnapshot(const ModuleSnapshot&) = delete;
  ModuleSnapshot& operator=(const ModuleSnapshot&) = delete;

 private:
  const torch::nn::Module& module_;
  bool training_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> grads_;
  std::vector<torch::Tensor> buffers_;
};

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "cpu";
}

/// Moves the module's parameters and buffers to `device`. Module::to leaves a gradient where it
/// was made, and a later backward could not accumulate into it from the other device; the
/// gradients are dropped instead (the caller's ModuleSnapshot restores them).
void moveDroppingGradients(torch::nn::Module& module, const torch::Device& device) {
  const std::vector<torch::Tensor> parameters = module.parameters();
  const bool there =
      std::all_of(parameters.begin(), parameters.end(), [&](const torch::Tensor& p) { return p.device() == device; });
  const std::vector<torch::Tensor> buffers = module.buffers();
  if (there &&
      std::all_of(buffers.begin(), buffers.end(), [&](const torch::Tensor& b) { return b.device() == device; }))
    return;  // the gradients stay: a training step accumulates into them
  for (torch::Tensor p : parameters) p.mutable_grad() = torch::Tensor();
  module.to(device);
}

/// The distinct micro-batch sizes asked for, after checking the options and the model.
std::set<std::int64_t> checkedSizes(const Model& model, const LayerProfilerOptions& options) {
  std::set<std::int64_t> sizes;
  for (std::int64_t b : options.microBatches) {
    if (b <= 0) throw std::invalid_argument("micro-batch sizes must be positive, got " + std::to_string(b));
    sizes.insert(b);
  }
  if (sizes.empty()) throw std::invalid_argument("the layer profiler needs at least one micro-batch size");
  if (options.minRuns <= 0 || options.warmupRuns < 0 || options.timeBudgetSeconds < 0) {
    throw std::invalid_argument("layer profiler options: minRuns must be positive and warm-up runs and the time "
                                "budget non-negative (got minRuns " +
                                std::to_string(options.minRuns) + ")");
  }
  if (!model.sequential || model.sequential->size() == 0) {
    throw std::invalid_argument("model '" + model.name + "' has no layers to profile");
  }
  validatePrecision(options.precision, options.device);
  validateOptimizer(options.optimizer);
  return sizes;
}

ProfileEnvironment environmentOf(const Model& model, const LayerProfilerOptions& options) {
  ProfileEnvironment environment;
  environment.model = model.name;
  environment.deviceType = options.device.is_cuda() ? "cuda" : "cpu";
  environment.deviceName = options.device.is_cuda() ? options.device.str() : cpuName();
  environment.threads = torch::get_num_threads();
  environment.torchVersion = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                             std::to_string(TORCH_VERSION_PATCH);
  environment.precision = options.precision;
  environment.optimizer = options.optimizer;
  return environment;
}

/// The layers' names and parameter and gradient bytes, and the parameters layers share: what
/// the model holds whatever the batch. On CUDA a parameter, and its gradient, is one block of
/// the caching allocator.
void addParameterFacts(Profile& profile, const Layers& layers, const torch::nn::Sequential& sequential, bool cuda) {
  auto parameterBytes = [&](const torch::Tensor& p) { return cuda ? roundToAllocatorBlock(bytesOf(p)) : bytesOf(p); };
  profile.layers.resize(layers.modules.size());
  for (std::size_t L = 0; L < layers.modules.size(); ++L) {
    LayerProfile& layer = profile.layers[L];
    layer.name = layers.names[L];
    for (const torch::Tensor& p : sequential->ptr(static_cast<std::int64_t>(L))->parameters()) {
      layer.paramBytes += parameterBytes(p);
      if (p.requires_grad()) layer.gradBytes += parameterBytes(p);
    }
  }
  for (const SharedParameterUse& use : findSharedParameters(sequential)) {
    profile.sharedParameters.push_back({use.name, use.layers, parameterBytes(use.tensor)});
  }
}

using SkipGradientsByRoute = std::map<ProfilerSkipTracker::LayerAndName, SkipGradientFacts>;

/// Each skip's bytes per sample at micro-batch `b` (the largest size, last, wins: least
/// rounding) and how its gradient relates to the tensors around it.
void addSkipFacts(Profile& profile, const Model& model, const ProfilerSkipTracker& skips, std::int64_t b,
                  const SkipGradientsByRoute& inputGradients, const SkipGradientsByRoute& wholeGradients) {
  for (const SkipRoute& route : model.skips) {
    auto it = std::find_if(profile.skips.begin(), profile.skips.end(), [&](const SkipProfile& s) {
      return s.name == route.name && s.stashLayer == route.stashLayer;
    });
    if (it == profile.skips.end()) {
      profile.skips.push_back(SkipProfile{route.name, route.stashLayer, route.popLayer, 0, 0});
      it = std::prev(profile.skips.end());
    }
    it->bytesPerSample = skips.stashedBytes(route.stashLayer, route.name) / b;
    it->unsavedBytesPerSample = skips.unsavedBytes(route.stashLayer, route.name) / b;
    const auto inI = inputGradients.find({route.stashLayer, route.name});
    const auto inB = wholeGradients.find({route.stashLayer, route.name});
    it->gradientSharedWithInput = inI != inputGradients.end() && inI->second.sharedWithInput;
    it->gradientSliceOfOutput = inI != inputGradients.end() && inI->second.sliceOfOutput;
    it->gradientSharedInBackward = inB != wholeGradients.end() && inB->second.sharedWithInput;
  }
}

/// What profiling one micro-batch size needs beside the model: where memory and time are
/// measured, the streams, the skip tracker, the kernel collector (CUDA with CUPTI) and the
/// whole profile's budget.
struct SizeProfiling {
  const LayerProfilerOptions& options;
  torch::Device memoryDevice;
  const TaggedStreams& streams;
  ProfilerSkipTracker& skips;
  CuptiCollector* kernelCollector;  ///< null where no launch data is collected
  ProfileBudget& budget;
  bool launchData;  ///< every size so far gave launch data
};

/// Every pass at micro-batch size `b`: memory, skip gradients and the loss on the memory device,
/// then times (and kernels) on the target device; their samples added to `profile`.
void profileSize(Model& model, Layers& layers, std::int64_t b, SizeProfiling& how, Profile& profile) {
  const LayerProfilerOptions& options = how.options;
  ProfileBudget& budget = how.budget;
  torch::nn::Sequential& sequential = model.sequential;
  const auto n = static_cast<std::int64_t>(layers.modules.size());
  const Batch batch = model.makeBatch(b, /*seed=*/0);
  std::vector<CostSample> costs(static_cast<std::size_t>(n));
  for (CostSample& c : costs) c.microBatch = b;
  // The loss's time is taken where the last layer's forward runs, in the timed passes.
  std::optional<LossTiming> lossTiming;
  if (model.loss) lossTiming = LossTiming{&model, batch.target.to(options.device), LossTime{}};
  // Memory on the target device: its allocator (tracked on CPU, the caching one on CUDA). Its
  // passes 3 and 4 run each layer as a timed pass does, so they time it too where the memory
  // device is the timing device (always so far): one run gives a layer's time and its memory.
  moveDroppingGradients(*sequential, how.memoryDevice);
  TimeSamples samples(static_cast<std::size_t>(n));
  for (const SkipRoute& route : model.skips) samples.popsASkip.at(route.popLayer) = true;
  for (std::int64_t L = 0; L < n; ++L) samples.leftOut[static_cast<std::size_t>(L)] = !layers.runs(L);
  TimeSamples* memoryTimes = how.memoryDevice == options.device ? &samples : nullptr;
  std::vector<Bytes> castCacheBytes;
  torch::Tensor output;
  budget.time("memory", b, [&] {
    measureMemory(layers, {batch.input.to(how.memoryDevice)}, costs, how.skips, how.streams, how.memoryDevice,
                  options.precision, castCacheBytes, output, memoryTimes);
  });
  SkipGradientsByRoute inputGradients, wholeGradients;
  if (!model.skips.empty()) {
    budget.time("skip gradients", b, [&] {
      inputGradients = skipGradientFacts(layers, {batch.input.to(how.memoryDevice)}, options.precision,
                                         ProbedBackward::Input, memoryTimes);
      wholeGradients = skipGradientFacts(layers, {batch.input.to(how.memoryDevice)}, options.precision,
                                         ProbedBackward::Whole, memoryTimes);
    });
  }
  std::optional<LossSample> loss;
  if (model.loss && output.defined()) {
    const LossMeasurement lossHow{how.memoryDevice, options.precision, &how.streams, n};
    loss = budget.time("loss memory", b,
                       [&] { return measureLossMemory(model, output, batch.target.to(how.memoryDevice), lossHow); });
  }
  if (!loss) lossTiming.reset();
  // Times on the target device, in what the passes above and the sizes to come leave.
  moveDroppingGradients(*sequential, options.device);
  const Tensors input{batch.input.to(options.device)};
  const TimedRuns runs{budget.timedRunsSeconds(b), options.warmupRuns, options.minRuns, options.stop};
  budget.recordTimedRuns(budget.time(kTimedRunsPass, b, [&] {
    return measureTimes(layers, input, costs, options.device, options, runs, std::move(samples),
                        lossTiming ? &*lossTiming : nullptr);
  }));
  if (loss) {
    loss->cost.forwardNs = lossTiming->median.forwardNs;
    loss->cost.backwardNs = lossTiming->median.backwardNs;
    profile.loss.costs.push_back(loss->cost);
    profile.loss.keepsOutput = loss->keepsOutput;  // the largest size's
  }
  if (how.launchData) {
    how.launchData = budget.time("kernels", b, [&] {
      return measureKernels(layers, input, costs, options.device, *how.kernelCollector, options.precision);
    });
  }
  if (!layers.sameAs.empty()) takeIdenticalFigures(layers.sameAs, costs, castCacheBytes);
  // The cast copies are of the weights: the same at every size (the largest size's kept).
  for (std::size_t L = 0; L < castCacheBytes.size(); ++L) profile.layers[L].castCacheBytes = castCacheBytes[L];
  for (std::int64_t L = 0; L < n; ++L) profile.layers[L].costs.push_back(costs[L]);
  profile.inputBytesPerSample = bytesOf(batch.input) / b;
  addSkipFacts(profile, model, how.skips, b, inputGradients, wholeGradients);
}

/// Where every layer's memory passes at every size are expected to outlast the budget, the passes
/// leave out each layer identical to an earlier one (identical_layers.h): `layers.sameAs`. Returns
/// how many are left out.
std::int64_t leaveOutIdenticalLayers(Model& model, Layers& layers, const std::set<std::int64_t>& sizes,
                                     const torch::Device& memoryDevice, const LayerProfilerOptions& options,
                                     ProfileBudget& budget) {
  if (layers.modules.size() < 4) return 0;  // the first and last layers are never left out
  const std::int64_t smallest = *sizes.begin();
  const std::int64_t sumOfSizes = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  const IdenticalLayers identical = budget.time("identical layers", 0, [&] {
    const Tensors input{model.makeBatch(smallest, /*seed=*/0).input.to(memoryDevice)};
    return findIdenticalLayers(layers, model.sequential, input, memoryDevice, options.precision);
  });
  if (identical.copies() == 0 || !memoryPassesOutlast(identical, smallest, sumOfSizes, options.timeBudgetSeconds)) {
    return 0;
  }
  layers.sameAs = identical.sameAs;
  return identical.copies();
}

/// Launch data on every sample or on none: a size without it drops the others'.
void dropLaunchData(Profile& profile) {
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) {
      cost.forwardLaunch.reset();
      cost.backwardLaunch.reset();
    }
  }
}

}  // namespace

Profile profileModel(Model& model, const LayerProfilerOptions& options) {
  const std::set<std::int64_t> sizes = checkedSizes(model, options);
  installMemoryTracker();
  torch::nn::Sequential& sequential = model.sequential;
  const std::vector<torch::Tensor> parameters = sequential->parameters();
  const torch::Device home = parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device();
  Layers layers = layersOf(model);
  const auto n = static_cast<std::int64_t>(layers.modules.size());

  Profile profile;
  profile.environment = environmentOf(model, options);
  // Memory is measured on the target device (on CUDA the caching allocator's blocks): CPU and
  // CUDA keep different tensors for backward (dropout keeps a mask on CUDA, its noise on CPU).
  const bool cuda = options.device.is_cuda();
  const torch::Device memoryDevice = cuda ? options.device : torch::Device(torch::kCPU);
  addParameterFacts(profile, layers, sequential, cuda);
  ProfileBudget budget(options.timeBudgetSeconds, sizes);
  if (cuda) {
    profile.libraryWorkspaceBytes =
        budget.time("library workspace", 0, [&] { return measureLibraryWorkspaceBytes(options.device); });
  }
  // CUDA: the kernels of each pass, for the simulator's launch model; without CUPTI (no driver
  // or permission, a build without it) the profile carries no launch data at all.
  HostTracer kernelClock;
  const std::unique_ptr<CuptiCollector> kernelCollector =
      cuda ? CuptiCollector::create(kernelClock, CuptiMode::Cheap) : nullptr;
  ProfilerSkipTracker skips(ProfilerSkipTracker::HandOut::AsStashed);
  bool launchData = kernelCollector && kernelCollector->available();
  std::int64_t leftOut = 0;  // layers that take an identical layer's figures
  {
    ModuleSnapshot snapshot(*sequential);  // restores parameters, grads, buffers, mode
    // CUDA: one stream per layer and one for the loss (tag n); frees their workspaces last.
    const TaggedStreams streams(memoryDevice, n + 1);
    sequential->train();
    // The optimizer on the target device first: its costs do not depend on the batch, and its
    // time is then known before the sizes share the budget.
    moveDroppingGradients(*sequential, memoryDevice);
    budget.time("optimizer", 0, [&] { measureOptimizer(sequential, profile, options, streams, memoryDevice); });
    leftOut = leaveOutIdenticalLayers(model, layers, sizes, memoryDevice, options, budget);
    SizeProfiling how{options, memoryDevice, streams, skips, kernelCollector.get(), budget, launchData};
    for (std::int64_t b : sizes) profileSize(model, layers, b, how, profile);
    launchData = how.launchData;
    moveDroppingGradients(*sequential, home);
  }
  profile.environment.profiling = budget.spent();
  profile.environment.profiling.layersFromIdentical = leftOut;
  if (!launchData) dropLaunchData(profile);
  return profile;
}

}  // namespace pipeprof
