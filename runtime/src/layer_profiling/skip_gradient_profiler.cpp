// The layer profiler's skip-gradient probe (skip_gradient_profiler.h).
#include "layer_profiling/skip_gradient_profiler.h"

#include "stage/autocast.h"
#include "stage/split_backward.h"
#include "stage/stage_input.h"

#include <algorithm>

namespace pipeprof::layer_profiling {

namespace {

/// Whether `a` and `b` are both defined and their data starts in one storage.
bool shareStorage(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.has_storage() && b.has_storage() && a.storage().data() == b.storage().data();
}

}  // namespace

std::map<ProfilerSkipTracker::LayerAndName, SkipGradientFacts> skipGradientFacts(
    const Layers& layers, const Tensors& input, Precision precision, ProbedBackward probed, TimeSamples* times) {
  std::map<ProfilerSkipTracker::LayerAndName, SkipGradientFacts> facts;
  ProfilerSkipTracker leaves(ProfilerSkipTracker::HandOut::DetachedLeaf, precision);
  leaves.keepHandedOut();
  const torch::Device device = input.empty() ? torch::Device(torch::kCPU) : input.front().device();
  const DeviceClock clock(device);
  AutocastScope autocast(precision, device);
  eachLayerAlone(layers, input, leaves, [&](std::int64_t L, const Tensors& in) {
    bool timed = times != nullptr && times->popsASkip[L] && probed == ProbedBackward::Whole;  // once a layer
    Tensors out = runLayer(*layers.modules[L], in, layers.names[L]);
    for (const auto& [key, skip] : leaves.takeHandedOut()) {
      SkipGradientFacts& fact = facts[key];
      if (in.size() != 1 || !in.front().requires_grad() || !skip.requires_grad()) continue;
      const BackwardRoots backward = backwardRoots(out);
      if (probed == ProbedBackward::Whole) {
        const TimedRun run = clock.time([&] { runBackward(backward); });
        if (timed) {
          times->addBackward(L, run);
          timed = false;
        }
        const torch::Tensor skipGrad = skip.is_view() ? torch::Tensor(skip._base()).grad() : skip.grad();
        fact.sharedWithInput = shareStorage(sinkGradientOf(in.front()), skipGrad);
        continue;
      }
      AutocastPause pause;
      // The engine's own gradient first (runInputs copies a slice into storage of its own).
      const Tensors raw = torch::autograd::grad(backward.roots, {skip}, backward.grads, /*retain_graph=*/true,
                                                /*create_graph=*/false, /*allow_unused=*/true);
      fact.sliceOfOutput = std::any_of(backward.grads.begin(), backward.grads.end(), [&](const torch::Tensor& g) {
        return shareStorage(g, raw.front()) && raw.front().numel() < g.numel();  // (an add's is all of it)
      });
      WeightBackward weights;
      const Tensors grads =
          weights.runInputs(backward.roots, backward.grads, {gradientEdges(in).front(), gradientEdges({skip}).front()});
      fact.sharedWithInput = shareStorage(grads[0], grads[1]);
    }
    for (torch::Tensor& t : out) t = t.detach();
    return out;
  });
  return facts;
}

}  // namespace pipeprof::layer_profiling
