// The sweep report (pipeprof.report/v1): candidates with predictions, measurements and a suggestion.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/core/step_breakdown.h>
#include <pipeprof/core/units.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof {

inline constexpr const char* kReportSchema = "pipeprof.report/v1";

/// What the simulator says about one candidate.
struct Prediction {
  TimeNs iterationNs = 0;  ///< one training step (forward + backward of the mini-batch)
  double samplesPerS = 0.0;
  double bubbleFraction = 0.0;                ///< mean over devices of idle / iteration time
  std::vector<TimeNs> busyNs;                 ///< per pipeline device (per partition when v is 1)
  std::vector<Bytes> peakBytes;               ///< per pipeline device: all its stages together
  std::vector<std::string> peakOp;            ///< per pipeline device: label of the op at which the peak happens
  bool fits = true;                           ///< every device's peak within its capacity
  std::vector<std::int64_t> overflowDevices;  ///< cluster device indices over capacity
  std::string tracePath;                      ///< predicted timeline (Chrome trace), if written
  /// Per pipeline device: the peak when each free another device's op makes of this device's
  /// tensors comes as late as the schedule lets it (when this device starts an op that waits
  /// for the freeing one, else at the step's end), where peakBytes sees it a little after the
  /// op: the largest a long run reaches in its unluckiest step as the two timelines drift
  /// (docs/simulator.md, "Frees another device makes"). peakBytes where no device frees
  /// another's tensors; empty where not computed (a search's candidates).
  std::vector<Bytes> latePeakBytes;
};

/// How far apart a measurement's rounds may lie and still agree: the slowest round's median
/// step within this fraction of the fastest's. Past it the rounds disagree (a machine that
/// changed speed between them, or two modes of the candidate): a sweep measures such a
/// candidate again and marks it when they still disagree.
inline constexpr double kRoundsAgreeSpread = 0.10;

/// A round a sweep measured and then measured again because another process competed for the
/// CPU during it (its steps are not among the measurement's).
struct DiscardedRound {
  double startS = 0.0;   ///< when it began, seconds after its sweep began
  TimeNs medianNs = 0;   ///< its median step
  double cpuWait = 0.0;  ///< its threads' wait for a CPU over its steps' time (Measurement::roundCpuWait)
};

/// What the runtime did for one candidate.
struct Measurement {
  std::int64_t warmupSteps = 0;  ///< untimed steps before each round's timed ones
  std::int64_t rounds = 1;       ///< runs of the candidate whose steps are pooled here
  std::vector<TimeNs> stepNs;    ///< every measured step, in order (round after round)
  TimeNs stepNsMedian = 0;
  TimeNs stepNsMin = 0;
  TimeNs stepNsMax = 0;
  double samplesPerS = 0.0;      ///< batch / median step time
  std::vector<Bytes> peakBytes;  ///< per pipeline device, as defined in docs/formats.md
  std::string tracePath;         ///< measured timeline (Chrome trace), if written
  /// Timed steps of each round, in order (they sum to stepNs.size()); empty when not recorded
  /// (older reports, `pipeprof run`), where every step counts as one round's.
  std::vector<std::int64_t> roundSteps;
  /// When each round began, in seconds after its sweep began (the clock of the sweep's
  /// machine-speed samples); empty when not recorded.
  std::vector<double> roundStartS;
  /// Per step of stepNs, how long the pipeline's threads were ready to run but waited for a
  /// CPU, summed over the threads (of the process, or of every rank): near 0 when the pipeline
  /// had the cores to itself, a large share of the step when another process competed for them.
  /// Empty where the machine does not say (Linux's per-thread schedstat).
  std::vector<TimeNs> stepCpuWaitNs;
  /// The rounds measured again because the CPU was contended while they ran.
  std::vector<DiscardedRound> discardedRounds;
  /// How much slower (> 1) or faster the machine ran during these rounds than over the sweep's
  /// whole measuring phase, as the reference pipelines timed around them saw it
  /// (tuner::CalibrationDrift::localRatioWhile); the candidate's prediction is taken at that
  /// speed. nullopt where the sweep did not know (too few references, `pipeprof run`).
  std::optional<double> machineSlowdown;
  /// Of `rounds`, the last ones a sweep's run-off measured (SweepConfig::runOffCandidates): the
  /// best measured candidate and those it was not told apart from, measured again. 0: none.
  std::int64_t runOffRounds = 0;

  /// Appends one more round: its steps, its peaks (the largest per device wins) and its
  /// steps' CPU waits (empty when unknown); then recomputes the statistics below for `batch`
  /// samples per step. `startS` is when the round began (see roundStartS).
  void addRound(const std::vector<TimeNs>& roundStepNs, const std::vector<Bytes>& roundPeakBytes, std::int64_t batch,
                double startS = 0.0, const std::vector<TimeNs>& roundCpuWaitNs = {});
  /// Recomputes stepNsMedian (the mean of the middle two for an even count), stepNsMin,
  /// stepNsMax and samplesPerS from stepNs; all zero when there are no steps.
  void updateStatistics(std::int64_t batch);
  /// The median step of each round (one entry for all of stepNs when roundSteps is empty).
  std::vector<TimeNs> roundMediansNs() const;
  /// The slowest round's median over the fastest's, minus 1: 0.25 when one round took 25%
  /// longer than another; 0 for fewer than two rounds.
  double roundSpread() const;
  /// Whether the rounds agree: roundSpread() within kRoundsAgreeSpread.
  bool roundsAgree() const { return roundSpread() <= kRoundsAgreeSpread; }
  /// Per round (as roundMediansNs), its steps' CPU wait over their time: 0.3 when the threads
  /// waited, together, for 30% of the round's step time; nullopt where not measured.
  std::vector<std::optional<double>> roundCpuWait() const;
};

/// The CPU wait of `stepNs` over their time (Measurement::roundCpuWait); nullopt when
/// `cpuWaitNs` does not hold one entry per step.
std::optional<double> cpuWaitShare(const std::vector<TimeNs>& stepNs, const std::vector<TimeNs>& cpuWaitNs);

enum class CandidateStatus {
  Predicted,  ///< simulated only; notMeasuredReason says why
  Measured,   ///< simulated and measured
  Failed,     ///< measuring failed; error says how
};
std::string candidateStatusName(CandidateStatus status);  ///< "predicted", "measured", "failed"

struct CandidateResult {
  Candidate candidate;
  /// The report's prediction: the calibrated simulator's, scaled by the sweep's drift factor.
  Prediction prediction;
  /// The calibrated simulator's prediction before the drift factor: what `pipeprof simulate`
  /// with the report's profile, cluster and calibration says (memory as in `prediction`, which
  /// the drift never changes). nullopt in reports written before it was kept.
  std::optional<Prediction> predictionBeforeDrift;
  std::int64_t predictedRank = 0;  ///< 1 = best predicted among those that fit; 0 = does not fit
  CandidateStatus status = CandidateStatus::Predicted;
  std::optional<Measurement> measurement;
  std::string notMeasuredReason;     ///< e.g. "not in top 4", "predicted not to fit"
  std::string error;                 ///< Failed: the exception text
  nlohmann::json predictedAnalysis;  ///< timeline analysis of the predicted trace (may be null)
  nlohmann::json measuredAnalysis;   ///< timeline analysis of the measured trace (may be null)
  /// Each device's step by category (core/step_breakdown.h), of the predicted and the measured
  /// trace; nullopt where no trace was analysed (not measured, or an older report).
  std::optional<StepBreakdown> predictedBreakdown;
  std::optional<StepBreakdown> measuredBreakdown;

  /// (predicted - measured) / measured * 100 of the median step time; nullopt unless measured.
  std::optional<double> stepTimeErrorPct() const;
  /// The same for predictionBeforeDrift; nullopt unless measured and kept.
  std::optional<double> stepTimeErrorBeforeDriftPct() const;
  /// The same for peak memory: the largest per-device peak, predicted against measured.
  std::optional<double> peakBytesErrorPct() const;
};

struct ReportEnvironment {
  std::string model;
  std::int64_t batch = 0;
  std::vector<std::string> devices;  ///< e.g. {"cpu", "cpu"}
  std::int64_t threads = 1;          ///< intra-op threads per worker
  std::string torchVersion;
  std::string pipeprofRevision;  ///< git revision of pipeprof that wrote the report
  std::string createdAt;         ///< ISO 8601 UTC
  /// What every measured step trained with. Older reports: fp32, plain SGD.
  Precision precision = Precision::Fp32;
  OptimizerSpec optimizer;
  /// "cores": each pipeline device's worker thread or rank ran on CPUs of its own; "none": where
  /// the scheduler put it. Older reports: "" (threads unbound, ranks bound).
  std::string cpuBinding;
};

struct Suggestion {
  std::optional<std::size_t> bestMeasured;   ///< index into candidates
  std::optional<std::size_t> bestPredicted;  ///< index into candidates
  bool agree = false;                        ///< both exist and are the same candidate
};

struct Report {
  ReportEnvironment environment;
  std::string profilePath;         ///< where the profile was cached, if anywhere
  std::optional<Profile> profile;  ///< embedded profile
  std::optional<Cluster> cluster;  ///< the cluster the simulator used
  /// The calibration the predictions used: a pipeprof.calibration/v1 object (the simulator
  /// reads it; see docs/formats.md), null when none. Reports written before it had a file of
  /// its own hold {"chained": ..., "drift": ...} here, with the profile and cluster above
  /// already calibrated.
  nlohmann::json calibration;
  /// The sweep's drift correction: {"factor", "references"} (docs/formats.md); null when none.
  nlohmann::json calibrationDrift;
  /// How the measured pipelines ran: null for threads of one process; for one process per
  /// pipeline device {"procs", "transport": "gloo" | "nccl", "link": {"latency_ns",
  /// "bandwidth_bytes_per_s"}} (docs/formats.md).
  nlohmann::json processLayout;
  /// Why calibrating failed (the predictions then use the raw profile); empty when it did not.
  std::string calibrationError;
  /// The sweep stopped before its calibration ended: the predictions use the raw profile and
  /// nothing was measured; --resume keeps the profile and calibrates.
  bool calibrationPending = false;
  std::vector<CandidateResult> candidates;
  Suggestion suggestion;
  bool complete = false;  ///< false while a sweep is still running or was interrupted

  /// The index of the candidate of this predicted rank (pred#), or nullopt.
  std::optional<std::size_t> candidateOfRank(std::int64_t predictedRank) const;

  /// Recomputes suggestion from candidates: best measured = highest measured throughput;
  /// best predicted = predictedRank 1.
  void updateSuggestion();
};

/// JSON form; reportFromJson throws FormatError naming the file, the JSON path and what was
/// expected. Trace paths are stored as written (relative paths are relative to the report).
nlohmann::json toJson(const Report& report);
Report reportFromJson(const nlohmann::json& json, const std::string& file);
Report readReport(const std::string& path);
void writeReport(const Report& report, const std::string& path);  ///< atomic

nlohmann::json toJson(const Prediction& prediction);
nlohmann::json toJson(const Measurement& measurement);

}  // namespace pipeprof
