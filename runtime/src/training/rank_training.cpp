// The measured training loop of one rank of a multi-process pipeline.
#include <pipeprof/runtime/rank_training.h>

#include "training/cpu_wait.h"
#include "training/training_steps.h"
#include "transport/control_tags.h"

#include <pipeprof/profiler/cupti_collector.h>
#include <pipeprof/profiler/host_tracer.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/rank_environment.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>

namespace pipeprof {
namespace {

/// A one-element message on the transport's device (NCCL sends CUDA tensors only): a clock
/// reading or a flag.
torch::Tensor int64Tensor(const Transport& transport, std::int64_t value) {
  return torch::tensor({value}, torch::kLong).to(transport.device());
}

/// Whether `found` holds on any rank: rank 0 gathers every rank's flag and sends back the answer.
bool anyRank(Transport& transport, bool found) {
  if (transport.rank() == 0) {
    for (int peer = 1; peer < transport.worldSize(); ++peer) {
      torch::Tensor theirs = int64Tensor(transport, 0);
      transport.receive(theirs, peer, kAnyRankTag);
      found = found || theirs.cpu().item<std::int64_t>() != 0;
    }
    for (int peer = 1; peer < transport.worldSize(); ++peer)
      transport.send(int64Tensor(transport, found ? 1 : 0), peer, kAnyRankTag + 1)->wait();
    return found;
  }
  transport.send(int64Tensor(transport, found ? 1 : 0), 0, kAnyRankTag)->wait();
  torch::Tensor answer = int64Tensor(transport, 0);
  transport.receive(answer, 0, kAnyRankTag + 1);
  return answer.cpu().item<std::int64_t>() != 0;
}

}  // namespace

ClockOffset alignClocks(Transport& transport, int rounds) {
  const int rank = transport.rank();
  ClockOffset own;
  if (rank == 0) {
    const TimeNs epochNs = steadyNowNs();
    own.epochNs = epochNs;
    for (int peer = 1; peer < transport.worldSize(); ++peer) {
      TimeNs bestRoundTrip = std::numeric_limits<TimeNs>::max();
      ClockOffset best;
      for (int round = 0; round < rounds; ++round) {
        const TimeNs sentNs = steadyNowNs();
        transport.send(int64Tensor(transport, sentNs), peer, kClockTag)->wait();
        torch::Tensor reply = int64Tensor(transport, 0);
        transport.receive(reply, peer, kClockTag);
        const TimeNs receivedNs = steadyNowNs();
        const TimeNs peerNs = reply.cpu().item<std::int64_t>();
        if (receivedNs - sentNs < bestRoundTrip) {
          bestRoundTrip = receivedNs - sentNs;
          best.offsetNs = (sentNs + receivedNs) / 2 - peerNs;  // rank 0's clock minus the peer's
          best.uncertaintyNs = bestRoundTrip / 2;
        }
      }
      torch::Tensor result =
          torch::tensor({static_cast<std::int64_t>(best.offsetNs), static_cast<std::int64_t>(best.uncertaintyNs),
                         static_cast<std::int64_t>(epochNs)},
                        torch::kLong)
              .to(transport.device());
      transport.send(result, peer, kClockTag + 1)->wait();
    }
    return own;
  }
  for (int round = 0; round < rounds; ++round) {
    torch::Tensor ping = int64Tensor(transport, 0);
    transport.receive(ping, 0, kClockTag);
    transport.send(int64Tensor(transport, steadyNowNs()), 0, kClockTag)->wait();
  }
  torch::Tensor result = torch::zeros({3}, torch::TensorOptions().dtype(torch::kLong).device(transport.device()));
  transport.receive(result, 0, kClockTag + 1);
  result = result.cpu();
  own.offsetNs = result[0].item<std::int64_t>();
  own.uncertaintyNs = result[1].item<std::int64_t>();
  own.epochNs = result[2].item<std::int64_t>();
  return own;
}

RankTrainingResult trainRank(Model& model, const TrainingOptions& options, Transport& transport) {
  validateTrainingOptions(options);
  const int rank = transport.rank();
  if (static_cast<int>(options.devices.size()) <= rank) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " has no device: " +
                                std::to_string(options.devices.size()) + " given, one per rank needed");
  }
  StageOptions stageOptions;
  static_cast<PipelineShape&>(stageOptions) = options;
  stageOptions.device = options.devices[static_cast<std::size_t>(rank)];
  stageOptions.precision = options.precision;
  StageRuntime runtime(model.sequential, stageOptions, transport);
  model.sequential = nullptr;  // the other ranks' stages are freed here
  runtime.train(true);

  const Batch batch = model.makeBatch(options.batch, options.dataSeed);
  RankTrainingResult result;
  result.rank = rank;
  result.stages = runtime.stages();
  result.device = stageOptions.device.str();
  result.clock = alignClocks(transport);

  std::unique_ptr<HostTracer> tracer;
  std::unique_ptr<CuptiCollector> collector;  // a CUDA rank's kernels, copies and NCCL's kernels
  const std::string traceDevice = rankLabel(rank, stageOptions.device.str());
  if (options.captureTrace) {
    tracer = std::make_unique<HostTracer>();
    if (stageOptions.device.is_cuda()) {
      collector = CuptiCollector::create(*tracer, options.cuptiMode);
      if (!collector->start()) {
        result.collectorNote = collector->unavailableReason();
        collector.reset();
      }
    }
    tracer->enable();
    runtime.setTracer(tracer.get());
  }
  TransferTotals before;
  StepHooks hooks;
  hooks.beforeStep = [&] { transport.barrier(); };
  hooks.runStep = [&](double lossScale) {
    before = runtime.transferTotals();
    return runtime.step(batch.input, batch.target, model.loss, runtime.stepSeed(), lossScale);
  };
  hooks.afterStep = [&] {
    if (stageOptions.device.is_cuda()) torch::cuda::synchronize(stageOptions.device.index());
  };
  bool waitsKnown = true;
  hooks.measured = [&](TimeNs stepNs, std::optional<TimeNs> cpuWaitNs) {
    result.stepNs.push_back(stepNs);
    waitsKnown = waitsKnown && cpuWaitNs.has_value();
    result.stepCpuWaitNs.push_back(cpuWaitNs.value_or(0));
    result.peakBytes = std::max(result.peakBytes, runtime.peakBytes());
    if (const std::optional<Bytes> device = runtime.devicePeakBytes()) {
      result.devicePeakBytes = std::max(result.devicePeakBytes.value_or(0), *device);
    }
    const TransferTotals after = runtime.transferTotals();
    result.transfers.sentBytes += after.sentBytes - before.sentBytes;
    result.transfers.receivedBytes += after.receivedBytes - before.receivedBytes;
    result.transfers.messagesSent += after.messagesSent - before.messagesSent;
    result.transfers.messagesReceived += after.messagesReceived - before.messagesReceived;
  };
  hooks.onEachDevice = [&](const std::function<void(std::int64_t)>& task) {
    ScopedAllocationTag tag(rank);  // the rank's own thread, counted against its device
    task(0);
  };
  hooks.anyProcess = [&](bool found) { return anyRank(transport, found); };
  // This thread runs the rank's stages; the transport's own threads wait for it by design.
  hooks.cpuWaitNs = threadCpuWaitNs;
  result.losses = runTrainingSteps(options, {runtime.parameters()}, hooks, tracer.get(), traceDevice);
  if (!waitsKnown) result.stepCpuWaitNs.clear();
  transport.barrier();  // no rank leaves (and takes the store with it) while another still needs it

  if (tracer) {
    runtime.setTracer(nullptr);
    tracer->disable();
    result.trace = tracer->drain();
    if (collector) {
      collector->stop();
      Trace device = collector->trace(result.trace);
      result.collectorNote = collector->summary();
      // The device's records sit with the rank's spans: one rank's process in the merged trace.
      for (TraceEvent& event : device.events) event.device = traceDevice;
      result.trace = mergeTraces(std::move(result.trace), device);
    }
    for (TraceEvent& event : result.trace.events) event.startNs += result.clock.offsetNs;
    result.trace.baseNs = result.clock.epochNs;  // every rank's file counts from the same instant
    result.trace.metadata["source"] = "measured";
  }
  return result;
}

}  // namespace pipeprof
