// The layer profiler's optimizer pass (optimizer_profiler.h).
#include "layer_profiling/optimizer_profiler.h"

#include "layer_profiling/profiling_scopes.h"
#include "training/make_optimizer.h"

#include <pipeprof/core/statistics.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/memory_tracker.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace pipeprof::layer_profiling {

namespace {

/// A layer's optimizer of one kind, and what its timed steps measured.
struct LayerStepper {
  std::int64_t layer = 0;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<TimeNs> times;
  Bytes transient = 0;
};

/// Writes a buffer larger than the CPU's last-level cache (and a GPU's L2) on `device`: what a
/// training step's forward and backward leave there before its optimizer step.
void evictCaches(torch::Tensor& buffer) { buffer.fill_(1); }

/// Every layer's optimizer of one kind (their gradients zeros): each layer's first step creates
/// its state (optimizerStateCopies x the gradients); then `runs` passes, each after evicting the
/// caches, step the layers in order, as a device steps its stages' parameters after its backward:
/// each layer's median time and its transient peak above the state under its tag.
std::vector<LayerStepper> measureOptimizerSteps(const OptimizerSpec& spec,
                                                const std::vector<std::vector<torch::Tensor>>& trainable,
                                                std::int64_t runs, const TaggedStreams& streams,
                                                const torch::Device& device, torch::Tensor& evictionBuffer) {
  std::vector<LayerStepper> steppers;
  for (std::size_t L = 0; L < trainable.size(); ++L) {
    if (trainable[L].empty()) continue;
    LayerStepper stepper;
    stepper.layer = static_cast<std::int64_t>(L);
    stepper.optimizer = makeOptimizer(spec, trainable[L]);
    LayerMemoryScope scope(streams, stepper.layer);
    stepper.optimizer->step();  // creates the state
    synchronize(device);
    steppers.push_back(std::move(stepper));
  }
  for (std::int64_t r = 0; r < runs; ++r) {
    evictCaches(evictionBuffer);
    synchronize(device);
    for (LayerStepper& stepper : steppers) {
      LayerMemoryScope scope(streams, stepper.layer);
      const Bytes start = liveBytes(stepper.layer);
      resetPeakBytes(stepper.layer);
      const TimeNs t0 = steadyNowNs();
      stepper.optimizer->step();
      synchronize(device);
      stepper.times.push_back(steadyNowNs() - t0);
      stepper.transient = std::max(stepper.transient, peakBytes(stepper.layer) - start);
    }
  }
  return steppers;
}

/// The trainable layers in `shares` contiguous runs of about equal parameter bytes, each of one
/// layer at least, as a balanced pipeline puts them on its devices (fewer where fewer layers
/// have parameters).
std::vector<std::vector<torch::Tensor>> splitIntoShares(const std::vector<std::vector<torch::Tensor>>& trainable,
                                                        std::int64_t shares) {
  Bytes total = 0;
  std::int64_t layersLeft = 0;
  for (const auto& parameters : trainable) {
    for (const torch::Tensor& p : parameters) total += static_cast<Bytes>(p.nbytes());
    layersLeft += parameters.empty() ? 0 : 1;
  }
  std::vector<std::vector<torch::Tensor>> out(1);
  Bytes done = 0;
  for (const auto& parameters : trainable) {
    if (parameters.empty()) continue;
    const auto started = static_cast<std::int64_t>(out.size());
    const Bytes quota = total * started / shares;  // where the current share ends
    if (!out.back().empty() && started < shares && (done >= quota || layersLeft <= shares - started)) {
      out.emplace_back();
    }
    --layersLeft;
    for (const torch::Tensor& p : parameters) {
      out.back().push_back(p);
      done += static_cast<Bytes>(p.nbytes());
    }
  }
  return out;
}

/// CPU: steps every share's optimizer `runs` times one after another and `runs` times all at once
/// on a thread each (every pass after evicting the caches): the median over the runs of the shares'
/// summed times at once over their summed times one after another (OptimizerAtOnce).
double measureSlowdown(const OptimizerSpec& spec, const std::vector<std::vector<torch::Tensor>>& shares,
                       std::int64_t runs, torch::Tensor& evictionBuffer) {
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  for (const auto& share : shares) {
    optimizers.push_back(makeOptimizer(spec, share));
    optimizers.back()->step();  // creates the state
  }
  const int intraOpThreads = at::get_num_threads();
  std::vector<double> ratios;
  for (std::int64_t r = 0; r < runs; ++r) {
    evictCaches(evictionBuffer);
    TimeNs apart = 0;
    for (auto& optimizer : optimizers) {
      const TimeNs t0 = steadyNowNs();
      optimizer->step();
      apart += steadyNowNs() - t0;
    }
    evictCaches(evictionBuffer);
    std::vector<TimeNs> atOnce(optimizers.size(), 0);
    std::atomic<std::size_t> ready{0};
    std::vector<std::thread> threads;
    for (std::size_t g = 0; g < optimizers.size(); ++g) {
      threads.emplace_back([&, g] {
        if (at::get_num_threads() != intraOpThreads) at::set_num_threads(intraOpThreads);  // as a worker adopts it
        ready.fetch_add(1);
        while (ready.load() < optimizers.size()) std::this_thread::yield();  // all start together
        const TimeNs t0 = steadyNowNs();
        optimizers[g]->step();
        atOnce[g] = steadyNowNs() - t0;
      });
    }
    for (std::thread& thread : threads) thread.join();
    TimeNs together = 0;
    for (const TimeNs ns : atOnce) together += ns;
    if (apart > 0) ratios.push_back(static_cast<double>(together) / static_cast<double>(apart));
  }
  return ratios.empty() ? 1.0 : median(ratios);
}

}  // namespace

std::int64_t optimizerDevicesAtOnce(const torch::Device& device) {
  if (!device.is_cpu()) return 1;
  const auto cores = static_cast<std::int64_t>(std::max(1U, std::thread::hardware_concurrency()));
  return std::max<std::int64_t>(1, cores / std::max(1, at::get_num_threads()));
}

void measureOptimizer(torch::nn::Sequential& sequential, Profile& profile, const LayerProfilerOptions& options,
                      const TaggedStreams& streams, const torch::Device& device) {
  const Bytes copies = optimizerStateCopies(options.optimizer.kind);
  std::vector<std::vector<torch::Tensor>> trainable(static_cast<std::size_t>(profile.layerCount()));
  for (std::int64_t L = 0; L < profile.layerCount(); ++L) {
    LayerProfile& layer = profile.layers[static_cast<std::size_t>(L)];
    layer.optimizerBytes = copies * layer.gradBytes;
    for (const torch::Tensor& p : sequential->ptr(L)->parameters()) {
      if (p.requires_grad()) trainable[static_cast<std::size_t>(L)].push_back(p);
    }
  }
  for (auto& parameters : trainable) {
    for (torch::Tensor& p : parameters) p.mutable_grad() = torch::zeros_like(p);
  }
  torch::Tensor evictionBuffer =
      torch::empty({kCacheEvictionBytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  for (OptimizerKind kind : kOptimizerKinds) {
    for (const LayerStepper& stepper : measureOptimizerSteps(options.optimizer.asKind(kind), trainable,
                                                             kOptimizerTimedSteps, streams, device, evictionBuffer)) {
      profile.layers[static_cast<std::size_t>(stepper.layer)].optimizerSteps[kind] =
          OptimizerStepCost{medianNs(stepper.times), stepper.transient};
    }
  }
  const std::int64_t devices = optimizerDevicesAtOnce(device);
  const std::vector<std::vector<torch::Tensor>> shares =
      devices > 1 ? splitIntoShares(trainable, devices) : std::vector<std::vector<torch::Tensor>>{};
  if (shares.size() > 1) {
    profile.optimizerAtOnce.devices = static_cast<std::int64_t>(shares.size());
    for (OptimizerKind kind : kOptimizerKinds) {
      profile.optimizerAtOnce.slowdown[kind] =
          measureSlowdown(options.optimizer.asKind(kind), shares, kOptimizerTimedSteps, evictionBuffer);
    }
  }
  for (LayerProfile& layer : profile.layers) {
    const auto own = layer.optimizerSteps.find(options.optimizer.kind);
    if (own == layer.optimizerSteps.end()) continue;
    layer.optimizerStepNs = own->second.ns;
    layer.optimizerStepBytes = own->second.bytes;
  }
  for (auto& parameters : trainable) {
    for (torch::Tensor& p : parameters) p.mutable_grad() = torch::Tensor();
  }
}

}  // namespace pipeprof::layer_profiling
