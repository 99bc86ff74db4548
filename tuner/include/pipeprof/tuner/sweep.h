// The main job as a library: profile, calibrate, predict every candidate, measure a chosen subset, write the report.
//
//   profile (or cached) -> calibrate (reference pipelines, or a calibration file) -> search
//     (every candidate predicted by the Predictor, ranked) -> select (MeasurePolicy)
//     -> in each of `rounds` rounds, for each selected candidate: a CandidateMeasurer trains
//        warm-up + its share of the steps on a fresh pipeline, the report is rewritten
//        atomically (the last round also traces the measured steps and predicts the twin
//        trace); the reference pipelines are timed again in between (the drift correction,
//        tuner/calibration_drift.h)
//     -> complete = true, suggestion
#pragma once

#include <pipeprof/core/checkpoint.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/simulator/search.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/candidate_selection.h>
#include <pipeprof/tuner/machine_load.h>
#include <pipeprof/tuner/sweep_progress.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// Everything a sweep needs, validated by the caller before any file is created.
struct SweepConfig {
  ModelSpec model;                  ///< its threads are the intra-op threads of profiling and measuring (>= 1)
  std::vector<DeviceDesc> devices;  ///< the p pipeline devices (stage j on device deviceOfStage(j))
  std::int64_t batch = 1;
  /// The optimizer and precision every step trains with: profiled, calibrated and measured so.
  TrainingStepOptions step;
  std::vector<ScheduleKind> schedules{std::begin(kScheduleKinds), std::end(kScheduleKinds)};
  /// v tried by interleaved and interleaved-zb (gpipe, 1f1b and zb1p run 1, zbv 2)
  std::vector<std::int64_t> stagesPerDevice{1, 2};
  std::vector<std::int64_t> chunks{1, 2, 4, 8};
  std::vector<Checkpoint> modes{Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never};
  BalanceEnumeration enumeration = BalanceEnumeration::Auto;
  std::vector<std::vector<std::int64_t>> balances;  ///< for BalanceEnumeration::Given: p * v entries each
  MeasurePolicy measure;
  std::int64_t warmupSteps = 2;  ///< per round
  std::int64_t steps = 5;        ///< timed steps per candidate, over all its rounds
  std::int64_t rounds = 1;       ///< interleaved rounds (1..steps): see runSweep
  /// Rounds a candidate may get in all when its rounds disagree (Measurement::roundsAgree):
  /// each extra round has the steps of the last of `rounds`. 0: twice `rounds`; else at least
  /// `rounds` (`rounds` for no extra round).
  std::int64_t maxRounds = 0;
  /// The run-off: once every candidate is measured, the best measured one and at most this
  /// many of those it is not told apart from (MeasuringConditions::tiedWithBest), the best
  /// predicted first, then the fastest, get `rounds` more rounds each, alternated as before.
  /// 0: none.
  std::int64_t runOffCandidates = 3;
  std::optional<Bytes> deviceMemoryBytes;  ///< per device; nullopt = unbounded
  double profileBudgetSeconds = 20.0;
  double calibrationBudgetSeconds = 20.0;  ///< the reference rounds end within this (CalibrationRounds)
  /// At most this many rounds of each pass of references (0: as many as the budget holds;
  /// nullopt: as many as a measured candidate gets, `rounds`); tuner/src/sweep_calibration.h.
  std::optional<std::int64_t> calibrationRounds;
  /// > 0: the whole sweep is to end within this many seconds (`--time`; withinTime() plans it).
  /// 0: no limit.
  double timeLimitSeconds = 0.0;
  std::string profilePath;      ///< cache: read when it exists, written after profiling otherwise
  std::string calibrationPath;  ///< where SweepInputs::calibration came from ("" when calibrating)
  std::string reportPath;
  std::string tracesDir;
  /// One process per pipeline device: the transport's link between ranks (measured like
  /// `pipeprof bench-link`), charged on every copy between devices; nullopt for threads of one
  /// process, whose CPU copies cost nothing.
  std::optional<Link> rankLink;
  /// The report's process_layout (docs/formats.md); null for threads of one process.
  nlohmann::json processLayout;

  /// maxRounds, its default resolved.
  std::int64_t roundsAtMost() const { return maxRounds > 0 ? maxRounds : 2 * rounds; }
  /// calibrationRounds, its default resolved.
  std::int64_t calibrationRoundsAtMost() const { return calibrationRounds.value_or(rounds); }
};

/// What the command loaded (and validated) before the sweep starts.
struct SweepInputs {
  std::optional<Profile> cachedProfile;    ///< from --profile or the resumed report
  std::optional<Report> resumedReport;     ///< --resume: finished candidates are kept
  std::optional<Calibration> calibration;  ///< a calibration file: no reference pipelines before measuring
  /// How busy other work keeps the machine's CPUs, which a contended round waits on before it is
  /// measured again (null: this machine's /proc/stat).
  std::shared_ptr<MachineLoad> machineLoad;
};

/// Ctrl-C during a sweep: the report on disk is valid (complete = false); --resume continues.
class SweepInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs the sweep; writes the report (atomically) after the predictions, when a candidate
/// finishes, every few seconds between rounds and when measuring stops (measuring_rounds.h).
/// Candidates and reference pipelines run through `measurer`. The selected candidates are
/// measured in `rounds` rounds, each training every candidate once on a fresh pipeline (warm-up,
/// then its share of the steps), so that every candidate's steps sample the whole measuring
/// time; the final round is traced. A partly measured candidate keeps its rounds in the report
/// (status predicted, reason "measuring: ...") and --resume continues it. A candidate that
/// throws is recorded as Failed and the sweep goes on. Throws SweepInterrupted when `stop` asks
/// (checked after every step of the candidates and reference pipelines, and between them); the
/// report on disk then holds what finished. With a time limit (SweepConfig::timeLimitSeconds)
/// it runs withinTime(config), and the candidates that the time left no room for keep the
/// reason and leave the report incomplete (complete = false), for --resume.
Report runSweep(const SweepConfig& config, const SweepInputs& inputs, CandidateMeasurer& measurer,
                SweepProgress& progress, const StopToken& stop);

/// The shares of a --time the profile's timed runs and the calibration may take at most.
constexpr double kProfileTimeShare = 0.2;
constexpr double kCalibrationTimeShare = 0.15;

/// `config` planned within its time limit: the profile's and the calibration's budgets cut to
/// kProfileTimeShare and kCalibrationTimeShare of it; measuring gets what is left (runSweep
/// measures only what is expected to end within it). Without a limit, `config` as it is.
SweepConfig withinTime(SweepConfig config);

/// What a sweep of `config` (already withinTime) with `inputs` will do and how long each part may
/// take, the first line it says: "plan: profiling within 20 s, calibrating within 20 s, then
/// measuring 12 of the best predicted in 3 rounds of 10 steps in all (about how long, once
/// calibrated)"; under --time it starts "--time 60s: " and measures what is expected to end.
std::string describePlan(const SweepConfig& config, const SweepInputs& inputs);

/// Profiles `model`'s layers on `device` at `microBatches` within `budgetSeconds` under `step`'s
/// precision and optimizer (the layer profiler of runtime/layer_profiler.h), recording the
/// model's name and threads in the profile's environment. Once `stop` is requested, each size's
/// timed runs end at their fewest.
Profile measureProfile(const ModelSpec& model, const DeviceDesc& device, const std::vector<std::int64_t>& microBatches,
                       double budgetSeconds, const TrainingStepOptions& step = {}, const StopToken& stop = {});

/// Checks a cached profile against the model it is to predict (name, intra-op threads,
/// `deviceType`, LibTorch version, layer count) and the training step (precision, optimizer kind);
/// returns the reason it does not fit, or "" when it does.
std::string profileMismatch(const Profile& profile, const ModelSpec& model, const std::string& deviceType,
                            std::int64_t layerCount, const TrainingStepOptions& step = {});

/// Checks that a report to resume was written by the same sweep (model, batch, devices,
/// threads); returns the reason, or "" when it was.
std::string resumeMismatch(const Report& report, const SweepConfig& config);

/// Timed steps of round `round` (0-based): config.steps split as evenly as possible over
/// config.rounds, the first rounds taking one more.
std::int64_t roundSteps(const SweepConfig& config, std::int64_t round);

/// The first line of `text` (an error message for a table cell or a progress line).
std::string firstLine(const std::string& text);

/// The micro-batch sizes the candidates use (every chunk count's full and remainder sizes).
std::vector<std::int64_t> microBatchSizes(std::int64_t batch, const std::vector<std::int64_t>& chunks);

}  // namespace pipeprof::tuner
