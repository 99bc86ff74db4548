// A rank's side: runs a RankJob as the rank its environment names (the body of pipeprof-rank).
#pragma once

#include <pipeprof/launch/rank_job.h>
#include <pipeprof/runtime/link_benchmark.h>
#include <pipeprof/runtime/rank_environment.h>
#include <pipeprof/runtime/training_loop.h>

#include <nlohmann/json.hpp>

namespace pipeprof::launch {

/// Runs `job` as rank environment.rank of its world:
///  1. binds this process to its CPUs (job.rankCpus[rank], or its share of the host with
///     CpuBinding::Cores; cpu_binding.h), before any thread starts;
///  2. Train: builds the model, joins the world (connectC10d over its device, job.timeout),
///     trains its stages (trainRank) and, with job.tracePath, writes its trace to
///     rankTracePath(job.tracePath, rank) on rank 0's clock. LinkBenchmark: joins the world on
///     job.linkDevice and ping-pongs (measureLink; ranks 0 and 1 measure);
///  3. with job.resultDir, writes {"rank", "joined": true} to rankResultPath(job.resultDir, rank)
///     once it joined the world, and its result there at the end.
/// Returns the result: for Train the rank's figures (rank, host, device, stages, step_ns,
/// peak_bytes, sent/received bytes and messages, losses on the last stage's rank, clock offset
/// and uncertainty, cpus: docs/cli.md's "ranks" of `run --procs --json`); for LinkBenchmark
/// rank 0's samples and fitted link (linkMeasurementFromJson), {"rank": r} on the others.
///
/// When training fails the rank names the rank to blame first ("rank 1 (stage 1) is gone:
/// rank 0 (host, cpu) (stage 0) stopped: ..."), publishes that line to the store, writes it
/// as {"rank", "error"} to its result file and throws std::runtime_error with it. Throws
/// std::invalid_argument when the world does not fit the job (WORLD_SIZE other than its
/// devices, CpuBinding::Cores without LOCAL_WORLD_SIZE) and what the model or the transport
/// throw while setting up.
nlohmann::json runRankJob(const RankJob& job, const RankEnvironment& environment);

/// The options of one training loop running the Train `job`: its shape and batch, its devices,
/// steps, learning rate, trace (when job.tracePath is set) and CUPTI mode. A rank trains its
/// stages with them (trainRank); `pipeprof run` without --procs trains the whole job as threads
/// of one process (trainAndMeasure). Throws std::invalid_argument for a device that is not here.
TrainingOptions trainingOptions(const RankJob& job);

/// The samples and link of a LinkBenchmark job's rank 0 result, and back.
nlohmann::json toJson(const LinkMeasurement& measurement);
LinkMeasurement linkMeasurementFromJson(const nlohmann::json& result);

}  // namespace pipeprof::launch
