// `pipeprof run`'s flags and the validated run they describe, shared by the threaded and multi-process layouts.
#pragma once

#include "model_options.h"
#include "schedule_options.h"
#include "training_step_options.h"

#include <pipeprof/core/report.h>
#include <pipeprof/launch/rank_job.h>
#include <pipeprof/runtime/models.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace pipeprof::cli {

struct RunFlags {
  ModelFlags model;
  std::string devices = "cpu,cpu";
  bool devicesGiven = false;  ///< --devices was on the command line (--procs N defaults to N CPUs)
  std::string balance = "auto";
  std::string splitAt;  ///< layer names where a new stage begins (instead of --balance)
  std::int64_t chunks = 4;
  std::string checkpoint = "except_last";
  ScheduleFlags schedule;
  std::int64_t steps = 10;
  std::int64_t warmup = 2;
  TrainingStepFlags trainingStep;
  std::string tracePath;
  std::string cuptiMode = "cheap";  ///< what CUPTI records with --trace on CUDA: cheap | exact
  std::string profilePath;
  bool json = false;
  int procs = 0;          ///< > 0: one process per pipeline device, started here; 0: --procs left out
  double timeoutS = 120;  ///< multi-process: the longest any rank waits for another
  std::string cpuBind;    ///< cores | none; empty: cores for --procs, none as a torchrun rank
};

/// A run the flags describe, validated before anything is computed: the model, and the job --
/// the candidate (its balance resolved: --balance, --split-at or auto), the devices, the steps --
/// that threads of this process, the ranks started here, or this rank of torchrun's world run.
struct RunPlan {
  Model model;
  launch::RankJob job;
};

/// Validates the flags and resolves the balance (auto: the simulator's fastest, logged on
/// `log`). `balanceAutoAllowed` false (a rank under torchrun) refuses auto: every rank would
/// measure its own profile. Throws UsageError naming the flag.
RunPlan planRun(const RunFlags& flags, std::ostream& log, bool balanceAutoAllowed);

/// Prints a finished run (text, or one JSON object with `extra` merged in).
void printRun(const RunFlags& flags, const RunPlan& plan, const Measurement& measurement,
              const std::vector<double>& losses, const nlohmann::json& extra, std::ostream& out);

/// `pipeprof run --procs N`: the ranks started here from the plan's job (launch/local_run.h),
/// then the report. Throws UsageError when --procs differs from the devices, Interrupted on Ctrl-C.
void runLaunchedRanks(const RunFlags& flags);
/// `pipeprof run` started as a rank (RANK and WORLD_SIZE set, as torchrun does): runs the plan's
/// job in this process (launch/run_rank_job.h).
void runAsRank(const RunFlags& flags);

}  // namespace pipeprof::cli
