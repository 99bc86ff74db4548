// What a core's idle time costs the op after it: a Linear layer's forward and the MSE loss on its
// output, each timed right after the thread slept, as a pipeline worker sleeps while it waits for
// another device (docs/performance.md, "An op after its device idled").
//
// Each iteration sleeps `idle` microseconds, then times the mlp's layer (Linear 512x512) on
// `samples` rows, the loss on its output, and a second loss right after it (warm again); manual
// time is the layer and the first loss. One intra-op thread, as a sweep's worker on 2 cores.
//
//   build/bench/bench_idle --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <pipeprof/runtime/torch_environment.h>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

double microseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

void layerAndLossAfterIdle(benchmark::State& state) {
  const auto idle = std::chrono::microseconds(state.range(0));
  const std::int64_t samples = state.range(1);
  torch::manual_seed(0);
  torch::nn::Linear layer(512, 512);
  const torch::Tensor input = torch::randn({samples, 512});
  const torch::Tensor target = torch::randn({samples, 512});
  double layerUs = 0;
  double lossUs = 0;
  double secondLossUs = 0;
  for (auto _ : state) {
    if (idle.count() > 0) std::this_thread::sleep_for(idle);
    const auto t0 = Clock::now();
    const torch::Tensor output = layer->forward(input);
    const auto t1 = Clock::now();
    const torch::Tensor loss = torch::mse_loss(output, target);
    const auto t2 = Clock::now();
    const torch::Tensor again = torch::mse_loss(output, target);
    const auto t3 = Clock::now();
    loss.backward();  // as a step does: the next iteration's forward starts a fresh graph
    layerUs += microseconds(t0, t1);
    lossUs += microseconds(t1, t2);
    secondLossUs += microseconds(t2, t3);
    state.SetIterationTime(microseconds(t0, t2) / 1e6);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["layer_us"] = layerUs / iterations;
  state.counters["loss_us"] = lossUs / iterations;
  state.counters["second_loss_us"] = secondLossUs / iterations;
}

void idleArguments(benchmark::internal::Benchmark* benchmark) {
  for (std::int64_t samples : {16, 128}) {
    for (std::int64_t idleUs : {0, 100, 1000, 3000, 10000, 30000}) benchmark->Args({idleUs, samples});
  }
}

}  // namespace

BENCHMARK(layerAndLossAfterIdle)
    ->Apply(idleArguments)
    ->ArgNames({"idle_us", "samples"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);

int main(int argc, char** argv) {
  pipeprof::setIntraOpThreads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
