// A candidate as PyTorch's pipelining runtime takes it (pytorch_export.h).
#include <pipeprof/core/pytorch_export.h>

#include <pipeprof/core/schedule.h>
#include <pipeprof/core/schedule_csv.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace pipeprof {
namespace {

/// torchtitan's pipeline_parallel_schedule (its class in torch.distributed.pipelining without
/// "Schedule"); "" where PyTorch has no class for the order.
std::string torchtitanSchedule(const Candidate& candidate) {
  for (std::size_t d = 0; d < candidate.deferredWeights.size(); ++d) {
    if (candidate.deferredWeights[d] != static_cast<std::int64_t>(d)) return "";  // not torch's own W's
  }
  switch (candidate.schedule) {
    case ScheduleKind::GPipe: return "GPipe";
    case ScheduleKind::OneFOneB: return "1F1B";
    case ScheduleKind::Interleaved: return "Interleaved1F1B";
    case ScheduleKind::ZeroBubble:  // torch's interleaved zero bubble with one stage per rank
    case ScheduleKind::InterleavedZeroBubble: return "InterleavedZeroBubble";
    case ScheduleKind::ZeroBubbleV: return "ZBVZeroBubble";
    case ScheduleKind::Custom: return "";
  }
  return "";
}

std::vector<std::string> csvRows(const Candidate& candidate) {
  std::istringstream csv(writeScheduleCsv(scheduleActions(Schedule::build(candidate.scheduleSpec({})))));
  std::vector<std::string> rows;
  for (std::string row; std::getline(csv, row);) {
    if (!row.empty()) rows.push_back(row);
  }
  return rows;
}

}  // namespace

nlohmann::json pytorchConfiguration(const Candidate& candidate, const std::vector<std::string>& layerNames) {
  const std::int64_t covered = std::accumulate(candidate.balance.begin(), candidate.balance.end(), std::int64_t{0});
  if (covered != static_cast<std::int64_t>(layerNames.size())) {
    throw std::invalid_argument("the balance covers " + std::to_string(covered) + " layers but the model has " +
                                std::to_string(layerNames.size()));
  }
  nlohmann::json parts = nlohmann::json::array();
  nlohmann::json splitSpec = nlohmann::json::object();
  nlohmann::json notExpressible = nlohmann::json::array();
  std::size_t next = 0;
  for (std::size_t j = 0; j < candidate.balance.size(); ++j) {
    nlohmann::json part = nlohmann::json::array();
    for (std::int64_t k = 0; k < candidate.balance[j]; ++k, ++next) {
      const std::string& name = layerNames[next];
      part.push_back(name);
      if (k == 0 && j > 0) {
        if (name.find('#') != std::string::npos) {
          notExpressible.push_back("stage " + std::to_string(j) + " begins at '" + name +
                                   "', a second call of a module: no module path names that place, so neither "
                                   "split_spec nor module_fqns_per_model_part can cut there");
        } else {
          splitSpec[name] = "BEGINNING";
        }
      }
    }
    parts.push_back(part);
  }
  const std::int64_t p = candidate.pipelineDevices();
  nlohmann::json stageToRank = nlohmann::json::array();
  for (std::int64_t j = 0; j < candidate.stages(); ++j) stageToRank.push_back(candidate.deviceOfStage(j));
  const std::string schedule = torchtitanSchedule(candidate);
  nlohmann::json checkpoint;
  if (candidate.checkpoint == Checkpoint::Always) checkpoint = "full";
  if (candidate.checkpoint == Checkpoint::Never) checkpoint = "none";
  if (candidate.checkpoint == Checkpoint::ExceptLast) {
    notExpressible.push_back(
        "checkpoint except_last (recompute every micro-batch but the last) has no switch in PyTorch's pipelining "
        "runtime or torchtitan, whose activation checkpointing is per layer for every micro-batch: 'full' is "
        "pipeprof's always, 'none' its never");
  }
  return {{"module_fqns_per_model_part", parts},
          {"split_spec", splitSpec},
          {"pipeline_parallel_degree", p},
          {"stages_per_rank", candidate.stagesPerDevice},
          {"stage_to_rank", stageToRank},
          {"placement", candidate.order                                           ? "custom"
                        : stagePlacement(candidate.schedule) == StagePlacement::V ? "v"
                                                                                  : "loop"},
          {"pipeline_parallel_schedule", schedule.empty() ? nlohmann::json() : nlohmann::json(schedule)},
          {"pytorch_schedule_class", schedule.empty() ? nlohmann::json() : nlohmann::json("Schedule" + schedule)},
          {"pipeline_parallel_schedule_csv", csvRows(candidate)},
          {"num_pp_microbatches", candidate.chunks},
          {"activation_checkpoint", checkpoint},
          {"not_expressible", notExpressible}};
}

}  // namespace pipeprof
