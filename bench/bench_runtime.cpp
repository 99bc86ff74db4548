// Runtime speed: the Pipe's overhead against the plain Sequential, and CPU pipelining speed-up.
//
// Every benchmark runs with one intra-op thread (setIntraOpThreads(1) before anything else; the
// Pipe's workers adopt the caller's setting, and OpenBLAS stays on one), so each partition's
// worker computes on one core and two partitions on two workers use two cores.
//
//   build-rt/bench/bench_runtime --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/torch_environment.h>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using pipeprof::Batch;
using pipeprof::Checkpoint;
using pipeprof::Model;
using pipeprof::Pipe;
using pipeprof::PipeOptions;

const std::vector<std::string> kModels{"mlp", "resnet", "unet", "gpt"};

void clearGrads(const std::vector<torch::Tensor>& parameters) {
  for (auto parameter : parameters) {
    parameter.mutable_grad() = torch::Tensor();
  }
}

/// One training step (forward, loss, backward) of the zoo model at its default size, run on
/// the calling thread by the plain Sequential.
void plainStep(benchmark::State& state) {
  Model model = pipeprof::buildModel(kModels.at(static_cast<std::size_t>(state.range(0))));
  Batch batch = model.makeBatch(model.defaultBatch, 1);
  auto parameters = model.sequential->parameters();
  for (auto _ : state) {
    clearGrads(parameters);
    model.loss(model.sequential->forward(batch.input), batch.target).backward();
  }
  state.SetLabel(model.name);
}

/// The same step through a Pipe with one partition, chunks 1, checkpoint never.
void pipeStep(benchmark::State& state) {
  Model model = pipeprof::buildModel(kModels.at(static_cast<std::size_t>(state.range(0))));
  Batch batch = model.makeBatch(model.defaultBatch, 1);
  PipeOptions options;
  options.devices = {torch::kCPU};
  options.chunks = 1;
  options.checkpoint = Checkpoint::Never;
  Pipe pipe(model.sequential, {static_cast<std::int64_t>(model.sequential->size())}, options);
  auto parameters = pipe.parameters();
  for (auto _ : state) {
    clearGrads(parameters);
    model.loss(pipe.forward(batch.input), batch.target).backward();
  }
  state.SetLabel(model.name);
}

/// Pipelining: the default mlp (8 Linear layers, 15 layers), batch 256, chunks 8, checkpoint
/// never, on range(0) partitions of one CPU worker each (1: [15]; 2: [8, 7], balanced).
void pipelining(benchmark::State& state) {
  const auto partitions = state.range(0);
  Model model = pipeprof::buildModel("mlp");
  Batch batch = model.makeBatch(256, 1);
  const auto layers = static_cast<std::int64_t>(model.sequential->size());
  std::vector<std::int64_t> balance =
      partitions == 1 ? std::vector<std::int64_t>{layers} : std::vector<std::int64_t>{layers / 2 + 1, layers / 2};
  PipeOptions options;
  options.devices.assign(static_cast<std::size_t>(partitions), torch::kCPU);
  options.chunks = 8;
  options.checkpoint = Checkpoint::Never;
  Pipe pipe(model.sequential, balance, options);
  auto parameters = pipe.parameters();
  for (auto _ : state) {
    clearGrads(parameters);
    model.loss(pipe.forward(batch.input), batch.target).backward();
  }
  state.SetItemsProcessed(state.iterations() * 256);
}

/// bench/pipe_reference.py's step in pipeprof: a 4-layer 512-wide MLP (7 layers), batch 256,
/// chunks 8, except_last; range(0) partitions of one worker each (0: the plain Sequential; 7:
/// every layer its own partition, as the reference does on CPU; 2: [4, 3]).
void referenceMlp(benchmark::State& state) {
  const auto partitions = state.range(0);
  pipeprof::ModelOptions sizes;
  sizes.width = 512;
  sizes.depth = 4;
  Model model = pipeprof::buildModel("mlp", sizes);
  Batch batch = model.makeBatch(256, 1);
  std::unique_ptr<Pipe> pipe;
  if (partitions > 0) {
    PipeOptions options;
    options.devices.assign(static_cast<std::size_t>(partitions), torch::kCPU);
    options.chunks = 8;
    options.checkpoint = Checkpoint::ExceptLast;
    pipe = std::make_unique<Pipe>(
        model.sequential, partitions == 7 ? std::vector<std::int64_t>(7, 1) : std::vector<std::int64_t>{4, 3}, options);
  }
  auto parameters = model.sequential->parameters();
  for (auto _ : state) {
    clearGrads(parameters);
    torch::Tensor output = pipe ? pipe->forward(batch.input) : model.sequential->forward(batch.input);
    model.loss(output, batch.target).backward();
  }
}

BENCHMARK(plainStep)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(pipeStep)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(pipelining)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(referenceMlp)->Arg(0)->Arg(7)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  pipeprof::setIntraOpThreads(1);  // OpenBLAS's pool on one thread too (docs/runtime.md, "Threads")
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
