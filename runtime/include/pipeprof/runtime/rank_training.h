// The measured training loop of one rank of a multi-process pipeline (`pipeprof run --procs N`, torchrun).
#pragma once

#include <pipeprof/core/trace.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/model.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/stage_runtime.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/runtime/training_options.h>
#include <pipeprof/runtime/transfer_totals.h>
#include <pipeprof/runtime/transport.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// How this rank's steady clock relates to rank 0's, measured at set-up by ping-pong messages:
/// rank 0's time = this rank's time + offsetNs, give or take uncertaintyNs (half the fastest
/// round trip of the pings).
struct ClockOffset {
  TimeNs offsetNs = 0;
  TimeNs uncertaintyNs = 0;
  TimeNs epochNs = 0;  ///< rank 0's clock when the alignment ended: the common zero of the ranks' traces
};

/// Measures every rank's ClockOffset (rounds ping-pongs between rank 0 and each other rank;
/// the fastest round trip wins) and hands each rank its own. A collective: every rank calls it.
ClockOffset alignClocks(Transport& transport, int rounds = 16);

struct RankTrainingResult {
  int rank = 0;
  std::vector<std::int64_t> stages;  ///< this rank's stages
  std::string device;                ///< e.g. "cpu", "cuda:0"
  std::vector<TimeNs> stepNs;        ///< this rank's measured steps (a barrier before each)
  /// Per measured step, how long this rank's threads waited for a CPU (empty where the system
  /// does not say).
  std::vector<TimeNs> stepCpuWaitNs;
  Bytes peakBytes = 0;  ///< largest StageRuntime::peakBytes over the measured steps
  /// CUDA only: the largest StageRuntime::devicePeakBytes (the caching allocator's) over them.
  std::optional<Bytes> devicePeakBytes;
  TransferTotals transfers;    ///< over the measured steps
  std::vector<double> losses;  ///< every step's loss (warm-up first); the last stage's rank only
  ClockOffset clock;
  Trace trace;  ///< captureTrace: on rank 0's clock (shifted by clock.offsetNs), baseNs = clock.epochNs
  /// captureTrace on a CUDA device: the CUPTI collector's summary, or why it could not record.
  std::string collectorNote;
};

/// Trains this rank's stages of `model` (built whole on the CPU by every rank from the same
/// seed; the other stages are dropped) for options.warmupSteps + options.steps steps of
/// options.optimizer (over this rank's parameters: every optimizer here works per parameter) on
/// the model's synthetic batch, as trainAndMeasure does for the threaded Pipe: the same losses
/// for the same seed. options.devices holds one device per rank (this rank uses
/// devices[rank]). Every step starts after a barrier and is timed on this rank alone; the
/// pipeline's step is the slowest rank's. Throws std::invalid_argument for bad options, and
/// PipeError (a TransportError nested when a peer was lost) when a step fails.
RankTrainingResult trainRank(Model& model, const TrainingOptions& options, Transport& transport);

}  // namespace pipeprof
