// The sweep's measuring phase (measuring_rounds.h).
#include "measuring_rounds.h"

#include "report_pace.h"
#include "round_pace.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/statistics.h>
#include <pipeprof/profiler/timeline_analysis.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/simulator/calibration_fit.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <thread>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

/// How long the sweep waits, in all, for other processes to leave the CPUs before measuring a
/// contended round again, and how long at a time; and how busy (in CPUs) they may keep the
/// machine for it to count as quiet.
constexpr double kMaxQuietWaitS = 60.0;
constexpr double kQuietWaitPerRoundS = 10.0;
constexpr auto kQuietSample = std::chrono::milliseconds(500);
constexpr double kQuietBusyCpus = 0.25;

/// --time: seconds kept back at the end for the last report and the drift's refresh.
constexpr double kTimeMarginS = 1.0;

/// One run of a candidate or reference: what it measured and when it began.
struct TimedRun {
  MeasuredRun run;
  double startS = 0.0;

  /// Its threads' wait for a CPU over its steps' time; nullopt where not measured.
  std::optional<double> cpuWait() const { return cpuWaitShare(run.measurement.stepNs, run.measurement.stepCpuWaitNs); }
  bool contended() const { return contendedForCpus(cpuWait()); }
};

TimedRun timedRun(MeasuringContext& context, const Candidate& candidate, const MeasureRequest& request) {
  TimedRun timed;
  timed.startS = context.clock.seconds();
  timed.run = context.measurer.measure(candidate, request);
  return timed;
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100.0); }

/// Waits, at most kQuietWaitPerRoundS and within what is left of `budgetS`, until the machine's
/// other work keeps fewer than kQuietBusyCpus busy over one sample (nothing of the sweep runs
/// meanwhile). Returns the time waited.
double waitForQuietCpus(MeasuringContext& context, double budgetS) {
  const double startS = context.clock.seconds();
  const double limitS = std::min(kQuietWaitPerRoundS, budgetS);
  while (context.clock.seconds() - startS < limitS && !context.stop.stopRequested()) {
    const std::optional<TimeNs> before = context.load.busyNs();
    const double sampleStartS = context.clock.seconds();
    std::this_thread::sleep_for(kQuietSample);
    const std::optional<TimeNs> after = context.load.busyNs();
    const double sampleS = context.clock.seconds() - sampleStartS;
    if (!before || !after || sampleS <= 0) break;
    if (static_cast<double>(*after - *before) / 1e9 / sampleS <= kQuietBusyCpus) break;
  }
  return context.clock.seconds() - startS;
}

void recordFailure(CandidateResult& result, const std::string& error) {
  result.status = CandidateStatus::Failed;
  result.error = error;
  result.measurement.reset();
  result.notMeasuredReason.clear();
}

/// Where a selected candidate stands in the measuring phase.
struct CandidateRounds {
  std::size_t index = 0;         ///< into the report's candidates
  std::int64_t extraRounds = 0;  ///< granted beyond config.rounds because its rounds disagreed
  bool retrying = false;         ///< its last round was contended and is measured again
  bool outOfTime = false;        ///< --time leaves no room for its remaining rounds
  std::int64_t runOffFrom = -1;  ///< its first round of the run-off (grantRunOff); -1: not in it
  std::vector<DiscardedRound> discarded;
};

class MeasuringRounds {
 public:
  MeasuringRounds(MeasuringContext& context, const std::vector<std::size_t>& selected) : c_(context) {
    for (const std::size_t index : selected) {
      const CandidateResult& result = c_.report.candidates[index];
      if (result.status != CandidateStatus::Predicted) continue;
      CandidateRounds candidate;
      candidate.index = index;
      const std::int64_t done = roundsDone(result, c_.config);
      if (done > 0) candidate.discarded = result.measurement->discardedRounds;  // a resumed partial's
      candidates_.push_back(std::move(candidate));
      roundsToRun_ += c_.config.rounds - done;
    }
    if (c_.setup.timesReferences()) {
      for (const auto& entry : c_.setup.drift.predictedNs) references_.push_back(entry.first);
    }
  }

  void run() {
    const SweepConfig& config = c_.config;
    const std::size_t todo = candidates_.size();
    const auto expectedS = static_cast<std::int64_t>(std::ceil(plan(/*fitTimeLeft=*/false)));
    const auto fitting = std::count_if(c_.report.candidates.begin(), c_.report.candidates.end(),
                                       [](const CandidateResult& result) { return result.predictedRank > 0; });
    if (todo == 0) {
      c_.progress.phase(
          fmt::format("predicted {} candidates ({} fit); measuring none", c_.report.candidates.size(), fitting));
    } else {
      c_.progress.phase(fmt::format(
          "predicted {} candidates ({} fit); measuring {}{}: about {}:{:02}, from their predicted steps and the "
          "calibration's runs",
          c_.report.candidates.size(), fitting, todo,
          config.rounds > 1 ? fmt::format(" in {} interleaved rounds", config.rounds) : "", expectedS / 60,
          expectedS % 60));
    }
    c_.progress.setTotal(roundsToRun_);
    try {
      measurePasses();
      if (grantRunOff()) measurePasses();
    } catch (...) {
      writeReportNow();  // Ctrl-C, or a failure the sweep does not catch: the rounds so far are kept
      throw;
    }
    c_.progress.finish();
    if (hasTimeLimit()) markOutOfTime();
  }

  /// Whether every selected candidate was measured or failed (false: --time ran out first; a
  /// measured candidate whose extra rounds it cut short counts as measured).
  bool finished() const {
    return std::none_of(candidates_.begin(), candidates_.end(), [&](const CandidateRounds& candidate) {
      return candidate.outOfTime && c_.report.candidates[candidate.index].status == CandidateStatus::Predicted;
    });
  }

 private:
  /// Passes of every due candidate's next round until none is due (or --time ran out).
  void measurePasses() {
    while (!timeRanOut_) {
      if (hasTimeLimit()) plan(/*fitTimeLeft=*/true);
      std::vector<CandidateRounds*> due;
      for (CandidateRounds& candidate : candidates_) {
        if (isDue(candidate)) due.push_back(&candidate);
      }
      if (due.empty()) break;
      measurePass(passes_++, due);
    }
  }

  /// The run-off (SweepConfig::runOffCandidates): where the best measured candidate's rounds
  /// overlap others' (MeasuringConditions::tiedWithBest), it and the best predicted one among
  /// those, then the fastest of the others, get config.rounds more rounds each, alternated pass
  /// by pass like the first ones, so that the suggestion rests on more than the few rounds that
  /// happened to favour it, and the prediction's pick is weighed against it on as many. Only
  /// candidates this sweep measured take part (a resumed report's finished ones keep their
  /// figures; without the best there is no run-off). Returns whether it granted any round.
  bool grantRunOff() {
    if (c_.config.runOffCandidates <= 0 || timeRanOut_ || c_.stop.stopRequested()) return false;
    c_.report.updateSuggestion();
    const std::optional<std::size_t> best = c_.report.suggestion.bestMeasured;
    std::vector<std::size_t> tied = summarizeMeasuringConditions(c_.report).tiedWithBest;
    if (!best || tied.empty()) return false;
    const std::optional<std::size_t> bestPredicted = c_.report.suggestion.bestPredicted;
    const auto order = [&](std::size_t index) {
      return std::pair(index != bestPredicted, c_.report.candidates[index].measurement->stepNsMedian);
    };
    std::stable_sort(tied.begin(), tied.end(), [&](std::size_t a, std::size_t b) { return order(a) < order(b); });
    std::vector<CandidateRounds*> contenders;
    for (const std::size_t index : tied) {
      if (static_cast<std::int64_t>(contenders.size()) == c_.config.runOffCandidates) break;
      if (index == *best) continue;
      if (CandidateRounds* candidate = measuredHere(index)) contenders.push_back(candidate);
    }
    CandidateRounds* const bestHere = measuredHere(*best);
    if (bestHere == nullptr || contenders.empty()) return false;
    contenders.insert(contenders.begin(), bestHere);
    for (CandidateRounds* candidate : contenders) {
      candidate->runOffFrom = roundsKept(c_.report.candidates[candidate->index]);
      candidate->extraRounds += c_.config.rounds;
      roundsToRun_ += c_.config.rounds;
    }
    c_.progress.setTotal(roundsToRun_);
    c_.progress.phase(fmt::format(
        "run-off: the best measured, {}, is not told apart from {} other candidate(s) (their rounds overlap its "
        "own); measuring it and {} of them (the best predicted first, then the fastest) {} more round(s) each",
        c_.report.candidates[*best].candidate.label(), tied.size(), contenders.size() - 1, c_.config.rounds));
    return true;
  }

  /// The candidate of report index `index` if this sweep measured it (and it did not fail).
  CandidateRounds* measuredHere(std::size_t index) {
    for (CandidateRounds& candidate : candidates_) {
      if (candidate.index == index && c_.report.candidates[index].status == CandidateStatus::Measured) {
        return &candidate;
      }
    }
    return nullptr;
  }

  /// The rounds kept so far (of a resumed partial measurement: those this sweep continues).
  std::int64_t roundsKept(const CandidateResult& result) const {
    if (result.status == CandidateStatus::Measured) return result.measurement->rounds;
    return roundsDone(result, c_.config);
  }

  bool isDue(const CandidateRounds& candidate) const {
    const CandidateResult& result = c_.report.candidates[candidate.index];
    if (result.status == CandidateStatus::Failed || candidate.outOfTime) return false;
    return roundsLeft(candidate) > 0;
  }

  std::int64_t roundsLeft(const CandidateRounds& candidate) const {
    return c_.config.rounds + candidate.extraRounds - roundsKept(c_.report.candidates[candidate.index]);
  }

  bool hasTimeLimit() const { return c_.config.timeLimitSeconds > 0; }

  /// Seconds left of the sweep's --time, less kTimeMarginS.
  double secondsLeft() const { return c_.config.timeLimitSeconds - kTimeMarginS - c_.clock.seconds(); }

  void writeReportNow() {
    const double startS = c_.clock.seconds();
    c_.report.updateSuggestion();
    writeReport(c_.report, c_.config.reportPath);
    reportPace_.wrote(startS, c_.clock.seconds());
  }

  /// The seconds of the candidate's next round's steps, warm-up included, as predicted.
  double predictedRoundS(const CandidateRounds& candidate) const {
    const CandidateResult& result = c_.report.candidates[candidate.index];
    const std::int64_t round = std::min(roundsKept(result), c_.config.rounds - 1);
    return static_cast<double>(result.prediction.iterationNs) / 1e9 *
           static_cast<double>(c_.config.warmupSteps + roundSteps(c_.config, round));
  }

  /// The seconds the candidate's next round is expected to take (round_pace.h).
  double expectedRoundS(const CandidateRounds& candidate) const { return pace_.expectedS(predictedRoundS(candidate)); }

  /// The seconds the due candidates' remaining rounds are expected to take, best predicted
  /// first, with the reference pipelines of the passes they need (each as long as the last one
  /// timed; before any, as the candidate's round). With `fitTimeLeft` (--time, before each pass)
  /// only those whose rounds are expected to end within the time left go on; the others stop
  /// where they are (a partly measured one keeps its rounds).
  double plan(bool fitTimeLeft) {
    double plannedS = 0.0;
    std::int64_t passes = 0;
    for (CandidateRounds& candidate : candidates_) {
      if (!isDue(candidate)) continue;
      const std::int64_t rounds = roundsLeft(candidate);
      const double referenceS = referenceS_ > 0 ? referenceS_ : expectedRoundS(candidate);
      const double referencesS = static_cast<double>(std::max<std::int64_t>(0, rounds - passes)) *
                                 static_cast<double>(references_.size()) * referenceS;
      const double candidateS = static_cast<double>(rounds) * expectedRoundS(candidate) + referencesS;
      if (fitTimeLeft && plannedS + candidateS > secondsLeft()) {
        candidate.outOfTime = true;
        continue;
      }
      plannedS += candidateS;
      passes = std::max(passes, rounds);
    }
    return plannedS;
  }

  /// --time ran out: what each candidate that stopped short says.
  void markOutOfTime() {
    const std::string limit = fmt::format("--time {:g}s", c_.config.timeLimitSeconds);
    for (CandidateRounds& candidate : candidates_) {
      CandidateResult& result = c_.report.candidates[candidate.index];
      if (result.status != CandidateStatus::Predicted) continue;
      candidate.outOfTime = true;
      const std::int64_t kept = roundsKept(result);
      result.notMeasuredReason = kept == 0
                                     ? fmt::format("{} ran out before it was measured (--resume measures it)", limit)
                                     : fmt::format("measuring: {} of {} rounds done when {} ran out (--resume goes on)",
                                                   kept, c_.config.rounds, limit);
    }
  }

  /// One pass: every due candidate's next round, the references spread evenly between them
  /// (reference k before candidate k*n/R), so that they sample the machine's speed over the
  /// same span as the candidates.
  void measurePass(std::int64_t pass, const std::vector<CandidateRounds*>& due) {
    std::size_t referencesTimed = 0;
    for (std::size_t position = 0; position < due.size(); ++position) {
      if (hasTimeLimit() && expectedRoundS(*due[position]) > secondsLeft()) {
        timeRanOut_ = true;  // the estimate was short: stop here rather than overrun
        return;
      }
      while (referencesTimed < references_.size() && referencesTimed * due.size() / references_.size() <= position) {
        const double startS = c_.clock.seconds();
        timeReference(references_[referencesTimed++], pass);
        referenceS_ = c_.clock.seconds() - startS;
        applyDrift(c_.report, c_.base, c_.setup);
      }
      const double startS = c_.clock.seconds();
      const double predictedS = predictedRoundS(*due[position]);
      const CandidateResult& result = c_.report.candidates[due[position]->index];
      const bool wasFinished = result.status != CandidateStatus::Predicted;
      measureNextRound(*due[position]);
      const bool finished = !wasFinished && result.status != CandidateStatus::Predicted;
      if (reportPace_.due(c_.clock.seconds(), finished)) writeReportNow();
      pace_.record(c_.clock.seconds() - startS, predictedS);
    }
  }

  std::string roundLabel(const CandidateRounds& candidate, std::int64_t round) const {
    const CandidateResult& result = c_.report.candidates[candidate.index];
    const std::string label = result.candidate.label();
    if (candidate.runOffFrom >= 0 && round >= candidate.runOffFrom) {
      return fmt::format("{} (run-off round {}/{})", label, round - candidate.runOffFrom + 1, c_.config.rounds);
    }
    if (round >= c_.config.rounds) return fmt::format("{} (extra round {})", label, round - c_.config.rounds + 1);
    if (c_.config.rounds == 1 && !candidate.retrying) return label;
    return fmt::format("{} (round {}/{}{})", label, round + 1, c_.config.rounds, candidate.retrying ? " again" : "");
  }

  void measureNextRound(CandidateRounds& candidate) {
    CandidateResult& result = c_.report.candidates[candidate.index];
    const std::int64_t round = roundsKept(result);
    const std::string label = roundLabel(candidate, round);
    if (c_.stop.stopRequested()) throw interruption("before " + label, c_.config, c_.progress);
    if (candidate.retrying) quietWaitS_ += waitForQuietCpus(c_, kMaxQuietWaitS - quietWaitS_);
    c_.progress.begin(label);
    try {
      MeasureRequest request;
      request.warmupSteps = c_.config.warmupSteps;
      request.steps = roundSteps(c_.config, round);
      request.traced = round + 1 == c_.config.rounds;
      request.stop = c_.stop;
      TimedRun timed = timedRun(c_, result.candidate, request);
      if (timed.contended() && static_cast<std::int64_t>(candidate.discarded.size()) < c_.config.rounds) {
        discard(candidate, timed, label);
        return;
      }
      candidate.retrying = false;
      keepRound(candidate, round, timed);
    } catch (const TrainingStopped&) {
      // Ctrl-C during this round's steps: the round is dropped, the earlier ones are kept.
      throw interruption("during " + label, c_.config, c_.progress);
    } catch (const std::exception& failure) {
      recordFailure(result, firstLine(errorText(failure)));
      roundsToRun_ -= c_.config.rounds + candidate.extraRounds - round - 1;  // its later rounds leave the total
      c_.progress.setTotal(roundsToRun_);
      c_.progress.failed(result.candidate.label(), result.error);
    }
  }

  void discard(CandidateRounds& candidate, const TimedRun& timed, const std::string& label) {
    candidate.discarded.push_back(
        {timed.startS, medianNs(timed.run.measurement.stepNs), timed.cpuWait().value_or(0.0)});
    candidate.retrying = true;
    CandidateResult& result = c_.report.candidates[candidate.index];
    if (result.measurement) result.measurement->discardedRounds = candidate.discarded;
    c_.progress.setTotal(++roundsToRun_);
    c_.progress.phase(fmt::format("{}: another process competed for the CPUs (its threads waited {} of the round's "
                                  "time for one); measuring it again",
                                  label, percent(timed.cpuWait().value_or(0.0))));
  }

  /// Adds round `round` to the candidate's measurement. The last of config.rounds writes the
  /// measured trace and the predicted twin and marks the result Measured; after it, rounds that
  /// disagree earn one more round each, up to config.roundsAtMost().
  void keepRound(CandidateRounds& candidate, std::int64_t round, const TimedRun& timed) {
    const SweepConfig& config = c_.config;
    CandidateResult& result = c_.report.candidates[candidate.index];
    Measurement measurement = round > 0 && result.measurement ? *result.measurement : Measurement{};
    measurement.warmupSteps = config.warmupSteps;
    measurement.rounds = round + 1;
    measurement.addRound(timed.run.measurement.stepNs, timed.run.measurement.peakBytes, config.batch, timed.startS,
                         timed.run.measurement.stepCpuWaitNs);
    measurement.discardedRounds = candidate.discarded;
    if (candidate.runOffFrom >= 0) ++measurement.runOffRounds;
    const std::string label = result.candidate.label();
    if (round + 1 < config.rounds) {
      result.measurement = std::move(measurement);
      result.notMeasuredReason = fmt::format("measuring: {} of {} rounds done", round + 1, config.rounds);
      c_.progress.roundDone(roundLabel(candidate, round), result.measurement->stepNsMedian);
      return;
    }
    if (round + 1 == config.rounds) {
      const fs::path measuredPath = fs::path(config.tracesDir) / (candidateSlug(result.candidate) + ".measured.json");
      writeChromeTraceFile(timed.run.trace, measuredPath.string());
      writePredictedTwin(result, c_.setup, config.tracesDir, c_.reportDir);
      result.measuredAnalysis = toJson(analyzeTimeline(timed.run.trace));
      result.measuredBreakdown = breakDownSteps(c_.setup.scheduleOf(result.candidate), timed.run.trace);
      measurement.tracePath = fs::proximate(fs::absolute(measuredPath), c_.reportDir).generic_string();
      result.status = CandidateStatus::Measured;
      result.notMeasuredReason.clear();
    }
    result.measurement = std::move(measurement);
    const Measurement& kept = *result.measurement;
    if (candidate.runOffFrom < 0 && !kept.roundsAgree() && kept.rounds < config.roundsAtMost()) {
      ++candidate.extraRounds;
      c_.progress.setTotal(++roundsToRun_);
      const auto [fastest, slowest] = [&] {
        const std::vector<TimeNs> medians = kept.roundMediansNs();
        const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
        return std::pair(*low, *high);
      }();
      c_.progress.phase(fmt::format("{}: its rounds disagree by {} ({} to {}); measuring one more round", label,
                                    percent(kept.roundSpread()), formatDuration(fastest), formatDuration(slowest)));
    }
    c_.progress.measured(label, kept.stepNsMedian, result.prediction.iterationNs);
  }

  /// The drift correction in pass `pass`: trains the reference pipeline with `chunks` chunks
  /// once more (untraced, at most kReferenceStepsPerRound timed steps) and adds its steps to the
  /// drift. A run beside another busy process is timed once more after waiting for the CPUs to
  /// quieten, and kept if the machine stayed busy (the candidates around it are kept so too, once
  /// their retries are spent). A reference that fails is left out with a note; the others still
  /// correct the drift.
  void timeReference(std::int64_t chunks, std::int64_t pass) {
    constexpr std::int64_t kReferenceStepsPerRound = 5;
    const std::string label = fmt::format("reference x{} (pass {})", chunks, pass + 1);
    if (c_.stop.stopRequested()) throw interruption("before " + label, c_.config, c_.progress);
    c_.progress.begin(label);
    const Candidate reference = referenceCandidate(
        c_.setup.profile.layerCount(), static_cast<std::int64_t>(c_.config.devices.size()), chunks, c_.config.batch);
    try {
      MeasureRequest request;
      request.warmupSteps = std::max<std::int64_t>(1, c_.config.warmupSteps);
      request.steps = std::min(roundSteps(c_.config, std::min(pass, c_.config.rounds - 1)), kReferenceStepsPerRound);
      request.stop = c_.stop;
      TimedRun timed = timedRun(c_, reference, request);
      if (timed.contended()) {
        c_.progress.phase(fmt::format("{}: another process competed for the CPUs (its threads waited {} of its time "
                                      "for one); timing it again",
                                      label, percent(timed.cpuWait().value_or(0.0))));
        quietWaitS_ += waitForQuietCpus(c_, kMaxQuietWaitS - quietWaitS_);
        timed = timedRun(c_, reference, request);
        if (timed.contended()) {
          c_.progress.phase(fmt::format("{}: the CPUs stayed busy (its threads waited {}); kept", label,
                                        percent(timed.cpuWait().value_or(0.0))));
        }
      }
      c_.setup.drift.add(chunks, timed.startS, timed.run.measurement.stepNs);
    } catch (const TrainingStopped&) {
      throw interruption("during " + label, c_.config, c_.progress);
    } catch (const std::exception& failure) {
      c_.progress.phase(
          fmt::format("{} failed, left out of the drift correction: {}", label, firstLine(errorText(failure))));
    }
  }

  MeasuringContext& c_;
  std::vector<CandidateRounds> candidates_;
  std::vector<std::int64_t> references_;  ///< chunk counts of the reference pipelines
  std::int64_t roundsToRun_ = 0;
  double quietWaitS_ = 0.0;                   ///< spent waiting for other processes to leave the CPU
  RoundPace pace_{c_.setup.runSetupSeconds};  ///< the candidates' rounds so far
  ReportPace reportPace_;                     ///< when the report is next rewritten
  double referenceS_ = 0.0;                   ///< the last reference pipeline's seconds
  bool timeRanOut_ = false;
  std::int64_t passes_ = 0;  ///< passes measured so far, the run-off's included
};

/// Rewrites the predicted twins whose drift factor is not their final one: those written before
/// the last references were timed, before their last rounds, or before a --resume.
void refreshPredictedTwins(MeasuringContext& context) {
  for (CandidateResult& result : context.report.candidates) {
    if (result.status != CandidateStatus::Measured ||
        std::abs(twinDriftFactor(result) - driftFactorOf(result, context.setup.drift)) < 1e-9)
      continue;
    writePredictedTwin(result, context.setup, context.config.tracesDir, context.reportDir);
  }
}

}  // namespace

std::int64_t roundsDone(const CandidateResult& result, const SweepConfig& config) {
  if (result.status != CandidateStatus::Predicted || !result.measurement) return 0;
  const Measurement& partial = *result.measurement;
  std::int64_t expectedSteps = 0;
  for (std::int64_t round = 0; round < partial.rounds; ++round) expectedSteps += roundSteps(config, round);
  const bool continuable = partial.rounds < config.rounds && partial.warmupSteps == config.warmupSteps &&
                           static_cast<std::int64_t>(partial.stepNs.size()) == expectedSteps;
  return continuable ? partial.rounds : 0;
}

SweepInterrupted interruption(const std::string& when, const SweepConfig& config, SweepProgress& progress) {
  progress.finish();
  return SweepInterrupted(fmt::format("interrupted {}; {} holds what finished -- continue with the same command and "
                                      "--resume",
                                      when, config.reportPath));
}

bool measureInRounds(MeasuringContext& context, const std::vector<std::size_t>& selected) {
  MeasuringRounds rounds(context, selected);
  rounds.run();
  if (context.setup.timesReferences()) {
    context.progress.phase(describeCalibrationDrift(context.setup.drift));
    refreshPredictedTwins(context);
    applyDrift(context.report, context.base, context.setup);
  }
  return rounds.finished();
}

}  // namespace pipeprof::tuner
