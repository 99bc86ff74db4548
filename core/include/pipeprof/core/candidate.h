// A candidate configuration: schedule, balance, chunks, checkpoint mode, mini-batch and placement.
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/schedule.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

/// A pipeline shape with its mini-batch and its placement on cluster devices.
struct Candidate : PipelineShape {
  std::int64_t batch = 1;  ///< mini-batch size in samples
  /// Cluster device index of each pipeline device (p entries, one per stage when v is 1);
  /// empty means pipeline device d on cluster device d.
  std::vector<std::int64_t> devices;

  /// Cluster device of stage j: devices[deviceOfStage(j)], or deviceOfStage(j) when devices is
  /// empty.
  std::int64_t deviceOf(std::int64_t j) const;
  /// "[2,6] x8 except_last": balance, chunks and mode, then the schedule unless it is gpipe
  /// ("[2,6] x8 never 1f1b", "[1,1,1,1] x4 never interleaved v2", orderLabel(): "[8,7] x8 never
  /// zb1p deferred-weights 0,0"); identifies a candidate in a sweep.
  std::string label() const;
  /// The schedule spec for training with the given skip routes: this shape, its chunks the
  /// number of micro-batches that exist (microBatching(batch, chunks).count), as the runtime
  /// splits.
  ScheduleSpec scheduleSpec(const std::vector<SkipRoute>& skips, bool training = true) const;

  friend bool operator==(const Candidate& a, const Candidate& b) {
    return static_cast<const PipelineShape&>(a) == static_cast<const PipelineShape&>(b) && a.batch == b.batch &&
           a.devices == b.devices;
  }
  friend bool operator!=(const Candidate& a, const Candidate& b) { return !(a == b); }
};

/// How torch::chunk splits a batch of B samples into m chunks: chunks of c = ceil(B / m)
/// samples, the last one holding the remainder, and only ceil(B / c) of them exist.
struct MicroBatching {
  std::int64_t chunkSize = 1;  ///< c
  std::int64_t count = 1;      ///< micro-batches that exist (<= m)
  std::int64_t lastSize = 1;   ///< size of micro-batch count-1
};

/// Throws std::invalid_argument when batch or chunks is not positive.
MicroBatching microBatching(std::int64_t batch, std::int64_t chunks);

/// "2, 3,3" -> {2, 3, 3}: comma-separated whole numbers (spaces around them allowed), each at
/// least `minimum`; nullopt for anything else.
std::optional<std::vector<std::int64_t>> parseCountList(const std::string& text, std::int64_t minimum);
/// "2,3,3" -> {2, 3, 3} (parseCountList, positive). Throws std::invalid_argument naming the text.
std::vector<std::int64_t> parseBalance(const std::string& text);
/// The balance that starts a new stage at each named layer, like torch.distributed.pipelining's
/// SplitPoint.BEGINNING: layers {a, b, c, d, e} split at "c,e" -> {2, 2, 1}. Throws
/// std::invalid_argument naming an unknown or repeated name, the first layer, or names out of
/// layer order, and listing the layers.
std::vector<std::int64_t> balanceFromSplitPoints(const std::vector<std::string>& layerNames,
                                                 const std::string& splitAt);

/// A file-name-safe name of the candidate for its trace files, e.g. "b2-6_m8_except_last",
/// "b2-6_m8_except_last_1f1b", "b1-1-1-1_m8_never_interleaved-v2", and for a custom order
/// "b1-1-1-1_m4_never_custom-3f2a9c1e" (a digest of its actions: two orders, two names), and
/// zb1p's deferred W's when given: "b8-7_m8_never_zb1p-deferred-0-0".
std::string candidateSlug(const Candidate& candidate);

/// The shape's keys (toJson(const PipelineShape&)), batch, and devices when placed.
nlohmann::json toJson(const Candidate& candidate);
/// Throws FormatError naming file and JSON path.
Candidate candidateFromJson(const nlohmann::json& json, const std::string& file, const std::string& path = "$");

}  // namespace pipeprof
