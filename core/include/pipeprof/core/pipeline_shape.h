// The pipeline shape: balance, schedule, stages per device, chunks and checkpoint mode, one value from the command line
// to the ranks.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/schedule_kind.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeprof {

struct CustomOrder;

/// How a model runs as a pipeline: n stages of balance[j] layers each, v stages per pipeline
/// device on p = n / v devices (stage j on device deviceOfStage(j): j mod p, or zbv's V), trained in m = chunks
/// micro-batches under a schedule and a checkpoint mode.
///
/// Candidate, ScheduleSpec, PipeOptions, StageOptions and TrainingOptions inherit it (their
/// other fields say where and how long it runs), so a shape passes from one to the next by
/// slicing, never field by field:
///
///   static_cast<PipelineShape&>(options) = candidate;
///
/// operator== compares shapes only: a type that inherits it and has fields of its own defines
/// its own operator== (Candidate does).
struct PipelineShape {
  std::vector<std::int64_t> balance;  ///< layers per stage; n = balance.size()
  ScheduleKind schedule = ScheduleKind::GPipe;
  /// v: stages per pipeline device (1 for gpipe, 1f1b and zb1p, >= 2 for interleaved and interleaved-zb, 2 for zbv).
  std::int64_t stagesPerDevice = 1;
  std::int64_t chunks = 1;  ///< m: micro-batches asked for (torch.chunk may make fewer)
  Checkpoint checkpoint = Checkpoint::ExceptLast;
  /// schedule custom: the order (custom_order.h), whose ranks are the pipeline devices and which
  /// fixes the stages, their placement, v (the most stages a rank holds) and m; null for the generated families.
  std::shared_ptr<const CustomOrder> order{};
  /// zb1p only: per pipeline device d, how many of its W's it defers -- it runs the W of its
  /// k-th backward right after its (k + deferredWeights[d])-th I, 0 <= deferredWeights[d] <= d.
  /// Empty: d on every device, torch's order (each device holds at most p micro-batches' state
  /// when W keeps no more than the forward; the search bounds it where W keeps more: the
  /// simulator's deferralWithinOneFOneBMemory).
  std::vector<std::int64_t> deferredWeights{};

  /// n: the number of stages, balance.size().
  std::int64_t stages() const { return static_cast<std::int64_t>(balance.size()); }
  /// p: the number of pipeline devices, n / v (a custom order's ranks, which may hold different
  /// numbers of stages). The one definition every part of pipeprof uses: for a malformed shape (v < 1, or v not
  /// dividing n) it is n, one device per stage, so counts stay defined until shapeError() names the problem.
  std::int64_t pipelineDevices() const;
  /// The pipeline device d < p that runs stage j: placedDevice(stagePlacement(schedule), j, p),
  /// j mod p for every family but zbv (device d holds stages d and 2p - 1 - d), and the rank
  /// of its actions for a custom order.
  std::int64_t deviceOfStage(std::int64_t j) const;
  /// Whether backwards are split into I then W: splitsBackward(schedule), or whether any of
  /// the custom order's is (it may mix them with B).
  bool splitsBackward() const;
  /// "gpipe", "1f1b", "interleaved v2": scheduleLabel(schedule, stagesPerDevice).
  std::string scheduleLabel() const;
  /// scheduleLabel() and, when given, zb1p's deferred W's: "zb1p deferred-weights 0,0" (the
  /// flag and its value, as `run` takes them); what tables show in their schedule column.
  std::string orderLabel() const;

  /// Why the shape cannot run, or "" when it can: an empty balance or an entry < 1, chunks <
  /// 1, a custom order missing or not of the shape's stages, v and micro-batches (or one given
  /// to another schedule), then scheduleShapeError(schedule, v, n, chunks), e.g. "interleaved needs chunks a
  /// multiple of devices (chunks: 6, devices: 4, stages per device: 2)".
  std::string shapeError() const { return shapeError(chunks); }
  /// The same with the m micro-batches that exist after splitting a batch (torch.chunk can
  /// make fewer than chunks: microBatching(batch, chunks).count), which is what a schedule runs.
  std::string shapeError(std::int64_t microBatches) const;

  /// Shapes are equal when every field is, a custom order by its actions.
  friend bool operator==(const PipelineShape& a, const PipelineShape& b);
  friend bool operator!=(const PipelineShape& a, const PipelineShape& b) { return !(a == b); }
};

/// "2,3,3": a balance, or any list of counts (the deferred W's in orderLabel()).
std::string formatBalance(const std::vector<std::int64_t>& balance);

/// Why a list of deferred W's per device cannot go with (kind, p), or empty when it can: an empty
/// list always can; otherwise the schedule must be zb1p, the list one entry per device, and
/// device d's entry within 0..d, e.g. "device 1 defers at most 1 of its W's (torch's order), not
/// 2 (deferred weights: [0, 2])".
std::string deferredWeightsError(ScheduleKind kind, std::int64_t p, const std::vector<std::int64_t>& deferred);

/// Why (kind, v) cannot schedule n stages with m micro-batches, or empty when it can:
/// v must be 1 for gpipe, 1f1b and zb1p, at least 2 for interleaved and interleaved-zb and 2
/// for zbv, n a multiple of v (custom: any v >= 1, its order places the stages); for interleaved m a multiple of the p
/// = n / v devices, for interleaved-zb a multiple of its max(1, m / p) rounds (torch's ScheduleInterleavedZeroBubble),
/// e.g. "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)".
std::string scheduleShapeError(ScheduleKind kind, std::int64_t stagesPerDevice, std::int64_t n, std::int64_t m);

/// The shape's JSON form, the shape keys of a candidate (docs/formats.md): balance, chunks,
/// checkpoint, schedule, stages_per_device when it is not 1, deferred_weights when given, and a
/// custom order as `order`: one string per rank, its CSV row ("0F0,0F1,0B0,0B1").
nlohmann::json toJson(const PipelineShape& shape);
/// Reads those keys of an object (other keys are left to the caller): balance (at least one
/// positive entry), chunks and checkpoint required; schedule (default gpipe) and
/// stages_per_device (default 1, a divisor of the stages) and deferred_weights (default none)
/// optional, so files written before schedules existed still load; `order` with schedule custom
/// (checked as makeCustomOrder does). Throws FormatError naming file and JSON path.
PipelineShape pipelineShapeFromJson(const nlohmann::json& json, const std::string& file, const std::string& path = "$");

}  // namespace pipeprof
