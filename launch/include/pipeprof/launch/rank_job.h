// What one rank of a multi-process world runs: a typed job, and its JSON file (pipeprof.rank-job/v1).
//
// Every rank of a world gets the same job; its rank (RANK, from the launcher or torchrun)
// picks its part: its device, its stages, its CPUs. A launcher writes the job to a file and
// starts `pipeprof-rank --job FILE` once per rank (local_run.h); `pipeprof run` under torchrun
// builds the job from its flags and runs it in its own process (run_rank_job.h).
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/optimizer.h>
#include <pipeprof/core/precision.h>
#include <pipeprof/launch/cpu_binding.h>
#include <pipeprof/profiler/activity_source.h>
#include <pipeprof/runtime/models.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::launch {

/// The schema tag of a rank job file.
inline constexpr const char* kRankJobSchema = "pipeprof.rank-job/v1";

enum class RankJobKind {
  Train,          ///< train the candidate's pipeline, one rank per pipeline device (trainRank)
  LinkBenchmark,  ///< ping-pong messages between ranks 0 and 1 (measureLink)
};

struct RankJob {
  RankJobKind kind = RankJobKind::Train;

  // --- Train ---
  /// Built whole on the CPU by every rank from the same seed (each keeps its stages); its
  /// threads are each rank's intra-op threads (0: LibTorch's default).
  ModelSpec model;
  /// The pipeline shape and batch: balance, schedule, stages per device, chunks, checkpoint.
  Candidate candidate;
  /// One per rank: rank r trains its stages on devices[r] (the candidate's pipeline devices).
  std::vector<DeviceDesc> devices;
  std::int64_t steps = 10;                ///< measured training steps
  std::int64_t warmupSteps = 2;           ///< untimed steps before them
  OptimizerSpec optimizer;                ///< every step's optimizer (default: plain SGD)
  Precision precision = Precision::Fp32;  ///< the forward's arithmetic (TrainingOptions::precision)
  /// Non-empty: every rank records its trace and writes it to rankTracePath(tracePath, rank).
  std::string tracePath;
  CuptiMode cuptiMode = CuptiMode::Cheap;  ///< what CUPTI records in a traced rank on CUDA

  // --- LinkBenchmark ---
  std::string linkDevice = "cpu";  ///< "cpu" (Gloo) or "cuda" (NCCL, each rank on cuda:LOCAL_RANK)
  int repeats = 5;                 ///< timed round trips per message size

  // --- Both ---
  /// The longest a rank waits for another (the rendezvous, every receive and barrier).
  std::chrono::milliseconds timeout{120000};
  /// How a rank binds itself to CPUs when rankCpus does not say: Cores takes its share of the
  /// host's CPUs by LOCAL_RANK among LOCAL_WORLD_SIZE (as under torchrun).
  CpuBinding cpuBinding = CpuBinding::None;
  /// Set by a launcher that split its CPUs: rank r binds to rankCpus[r] (an empty list binds
  /// nothing). Empty: cpuBinding decides.
  std::vector<std::vector<int>> rankCpus;
  /// Non-empty: rank r writes {"rank", "joined": true} to rankResultPath(resultDir, r) once it
  /// joined the world, and its result, or its error, there at the end.
  std::string resultDir;
};

/// The job as JSON, with its schema tag.
nlohmann::json toJson(const RankJob& job);
/// Reads a job. Throws FormatError naming `file`, the JSON path and what was expected (an
/// unknown schema or kind, a missing or malformed field, devices that do not match the
/// candidate's pipeline devices).
RankJob rankJobFromJson(const nlohmann::json& json, const std::string& file);
/// Writes the job to `path` atomically.
void writeRankJob(const RankJob& job, const std::string& path);
/// Reads the job file at `path`. Throws FormatError as rankJobFromJson does.
RankJob readRankJob(const std::string& path);

/// Where rank r writes its trace when the job says `path`: "t.json" -> "t.rank1.json".
std::string rankTracePath(const std::string& path, int rank);
/// Where rank r writes its result in `resultDir`: "<dir>/rank1.json".
std::string rankResultPath(const std::string& resultDir, int rank);
/// The stages rank r holds in `candidate`: "stage 1", "stages 0,2".
std::string rankStagesText(int rank, const Candidate& candidate);
/// Rank r and its stages, as failures name a rank: "rank 1 (stages 1,3)".
std::string rankWithStagesText(int rank, const Candidate& candidate);

}  // namespace pipeprof::launch
