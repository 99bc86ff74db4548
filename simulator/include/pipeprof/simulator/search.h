// Search over schedules, stages per device, balances, chunks and checkpoint modes; torchgpipe's balance_by_time for
// comparison.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/report.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

enum class BalanceEnumeration {
  Auto,   ///< all balances when there are at most maxExhaustiveBalances, else min-bottleneck + neighbours
  All,    ///< every composition of the layers into n positive parts
  Given,  ///< exactly SearchSpace::balances
};

struct SearchSpace {
  std::int64_t batch = 1;
  /// p: pipeline devices, device d on cluster device d. A candidate with v stages per device
  /// has p * v stages, stage j on device deviceOfStage(j) (j mod p; zbv's V).
  std::int64_t devices = 1;
  /// Schedule families to try: gpipe, 1f1b and zb1p with one stage per device, zbv with two,
  /// interleaved and interleaved-zb with every v >= 2 of stagesPerDevice. The zero-bubble ones
  /// (zb1p, interleaved-zb, zbv) are left out when the profile has no backward split (older profiles);
  /// asking for them alone then throws std::invalid_argument saying to profile again.
  std::vector<ScheduleKind> schedules{std::begin(kScheduleKinds), std::end(kScheduleKinds)};
  std::vector<std::int64_t> stagesPerDevice{1, 2};
  std::vector<std::int64_t> chunks{1, 2, 4, 8};
  std::vector<Checkpoint> modes{std::begin(kAllCheckpoints), std::end(kAllCheckpoints)};
  /// Balances over the n = devices * v stages of each v tried.
  BalanceEnumeration enumeration = BalanceEnumeration::Auto;
  /// For Given: every balance has devices * v entries for a v tried, and is used for that v.
  std::vector<std::vector<std::int64_t>> balances;
  std::int64_t maxExhaustiveBalances = 5000;
};

struct RankedCandidate {
  Candidate candidate;
  Prediction prediction;
  /// Empty when it fits; e.g. "predicted peak 17.2 GiB > 16 GiB on device 2", or the shape error of
  /// a candidate not simulated (scheduleShapeError's text, or too few layers for p * v stages:
  /// then the balance is empty and prediction is default with fits false).
  std::string rejection;
};

struct SearchResult {
  std::vector<RankedCandidate> ranked;  ///< fitting candidates, best predicted throughput first
  /// Predicted not to fit, or not schedulable (chunks > batch is legal: fewer micro-batches)
  std::vector<RankedCandidate> rejected;
  std::int64_t evaluated = 0;  ///< candidates decided: ranked + rejected (when not cancelled)
  std::int64_t simulatedEvents = 0;
  bool cancelled = false;
  /// Families of the space the profile cannot predict and the search left out: the
  /// zero-bubble ones on a profile without the backward's I/W split.
  std::vector<ScheduleKind> leftOut;
};

/// Progress callback: (done, total). Return false to cancel the search.
using SearchProgress = std::function<bool(std::int64_t done, std::int64_t total)>;

/// Enumerates and simulates the space: schedules x v (gpipe and 1f1b with v = 1, interleaved
/// with each v >= 2 of stagesPerDevice) x balances of devices * v stages x chunks x modes.
/// A candidate whose shape the schedule cannot run (scheduleShapeError, e.g. interleaved with
/// micro-batches not a multiple of the devices) or with more stages than layers is rejected
/// unsimulated with that reason. Deterministic order for ties: fewer chunks, then mode order
/// always < except_last < never, then schedule gpipe < 1f1b < interleaved, then smaller v,
/// then lexicographic balance. Throws std::invalid_argument for an empty or inconsistent space
/// (no schedules, v < 1, no chunks, ...), naming the values.
SearchResult search(const Profile& profile, const Cluster& cluster, const SearchSpace& space,
                    const SearchProgress& progress = {});

/// What the candidates of one schedule and checkpoint mode are simulated on. Every shape's
/// profile has the same layers and every cluster the same devices; their costs may differ (a
/// calibration corrects the profile per shape, simulator/predictor.h).
struct ShapeInputs {
  const Profile* profile = nullptr;
  const Cluster* cluster = nullptr;
};
/// The inputs of a schedule family with its stages per device (1 for gpipe and 1f1b) in a
/// checkpoint mode; called once per schedule and mode searched, with `never` for the inputs a
/// schedule's balances are enumerated from, and with (gpipe, 1, never) for the checks that
/// concern every shape.
using InputsByShape = std::function<ShapeInputs(ScheduleKind kind, std::int64_t stagesPerDevice, Checkpoint mode)>;

/// search() with each shape's candidates simulated on its own inputs; the same order, progress
/// and errors, and std::invalid_argument when a shape's inputs have other layers or devices
/// than gpipe's.
SearchResult search(const InputsByShape& inputs, const SearchSpace& space, const SearchProgress& progress = {});

/// The stage counts (p * v) the space's schedules use for p = `devices` pipeline devices,
/// increasing: p for gpipe and 1f1b, p * v for interleaved with each v >= 2 of the space.
std::vector<std::int64_t> stageCounts(const SearchSpace& space, std::int64_t devices);

/// The pipeline devices p the space's given balances imply: the shortest balance's stage count
/// over the fewest stages per device its schedules use (stageCounts for p = 1), at least 1; 0
/// unless the enumeration is Given.
std::int64_t devicesOfGivenBalances(const SearchSpace& space);

/// Rejected candidates of one kind: how many, and the first of them.
struct RejectionGroup {
  std::string reason;  ///< "predicted not to fit on devices 0,1", or "not schedulable: <the shape error>"
  std::int64_t count = 0;
  const RankedCandidate* example = nullptr;  ///< points into the vector grouped
};

/// Groups a search's rejected candidates: memory rejections by the cluster devices that
/// overflow, shape rejections (a schedule that cannot run the chunks or stage count) by their
/// reason. The largest group first; equal counts keep the order of their reasons.
std::vector<RejectionGroup> groupRejections(const std::vector<RankedCandidate>& rejected);

/// Balances of devices * stagesPerDevice stages the search would try (for a given space), in
/// deterministic order; stages placed on the devices by `placement` (the auto neighbourhood
/// weighs each stage by its device's speed). Throws std::invalid_argument for an inconsistent
/// space or when the profile has fewer layers than stages.
std::vector<std::vector<std::int64_t>> enumerateBalances(const Profile& profile, const Cluster& cluster,
                                                         const SearchSpace& space, std::int64_t stagesPerDevice = 1,
                                                         StagePlacement placement = StagePlacement::Loop);

/// Number of compositions of `layers` into `stages` positive parts, C(layers-1, stages-1).
std::int64_t countBalances(std::int64_t layers, std::int64_t stages);

/// The balance minimising the largest per-stage cost (exact, dynamic programming).
std::vector<std::int64_t> minBottleneckBalance(const std::vector<double>& layerCosts, std::int64_t stages);

/// torchgpipe's balance_by_time: its block-partition heuristic on per-layer times.
std::vector<std::int64_t> balanceByTime(const std::vector<double>& layerTimes, std::int64_t stages);

/// Per layer: forward + backward time in ns at a micro-batch size (the profile interpolated),
/// the cost the min-bottleneck balance and balanceByTime split.
std::vector<double> layerTimesNs(const Profile& profile, std::int64_t microBatch);

/// The rejection text for a prediction that does not fit, e.g.
/// "predicted peak 17.2 GiB > 16.0 GiB on device 2" (one clause per overflowing device, "; "
/// between them); empty when it fits. devicePeakBytes: per cluster device, the sum of the peaks
/// of the pipeline devices placed on it.
std::string rejectionReason(const Cluster& cluster, const std::vector<Bytes>& devicePeakBytes);

/// Per cluster device of `clusterDevices`, the sum of the predicted peaks of the candidate's
/// pipeline devices placed on it (Candidate::deviceOf): what rejectionReason takes.
std::vector<Bytes> clusterPeakBytes(const Candidate& candidate, const Prediction& prediction,
                                    std::int64_t clusterDevices);

}  // namespace pipeprof
