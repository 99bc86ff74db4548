// Tests of tuner/sweep: a whole sweep through a fake measurer -- one prediction, the drift, the report.
#include <pipeprof/tuner/sweep.h>

#include <pipeprof/core/measuring_conditions.h>
#include <pipeprof/core/statistics.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/simulator/predictor.h>
#include <pipeprof/tuner/reference_calibration.h>
#include <pipeprof/tuner/sweep_predictions.h>

#include "four_layer_profile.h"
#include "support/scratch_dir.h"
#include "sweep_calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

using test::fourLayerProfile;

Calibration calibration() {
  Calibration result;
  result.scales[4] = {1.25, 1.5};
  result.deviceSpeeds = {1.0, 0.8};
  result.stepOverheadNs = {{1, 2000}, {4, 5000}};
  return result;
}

/// Measures every candidate at `slowdown` x its calibrated prediction (so the references' ratio is
/// `slowdown`, their runs agree exactly and the drift factor is the whole ratio), and records
/// what it was asked to run. A run of a candidate named in `script` takes the next of its
/// scripted runs instead: a slowdown and the share of each step its threads waited for a CPU.
class FakeMeasurer : public CandidateMeasurer {
 public:
  struct Run {
    double slowdown = 1.0;
    double cpuWait = 0.0;
  };

  FakeMeasurer(Predictor predictor, double slowdown) : predictor_(std::move(predictor)), slowdown_(slowdown) {}

  MeasuredRun measure(const Candidate& candidate, const MeasureRequest& request) override {
    requests.push_back(candidate);
    std::this_thread::sleep_for(sleep);
    if (failingCalls > 0) {
      --failingCalls;
      throw std::runtime_error("out of memory (a fake failure)");
    }
    if (candidate.label() == failing) throw std::runtime_error("a layer threw (a fake failure)");
    if (killAfterCalls && requests.size() > *killAfterCalls) throw Killed{};
    const Prediction predicted = predictor_.predict(candidate).prediction;
    Run scripted{slowdown_, 0.0};
    std::vector<Run>& runs = script[candidate.label()];
    if (!runs.empty()) {
      scripted = runs.front();
      runs.erase(runs.begin());
    }
    MeasuredRun run;
    const auto stepNs =
        static_cast<TimeNs>(std::llround(static_cast<double>(predicted.iterationNs) * scripted.slowdown));
    const auto steps = static_cast<std::size_t>(request.steps);
    run.measurement.addRound(std::vector<TimeNs>(steps, stepNs), predicted.peakBytes, candidate.batch, 0.0,
                             std::vector<TimeNs>(steps, static_cast<TimeNs>(scripted.cpuWait * stepNs)));
    if (request.traced) run.trace.metadata["source"] = "fake";
    if (afterRun) afterRun(requests.size());
    return run;
  }

  /// What a kill of the process looks like to the sweep: nothing it catches.
  struct Killed {};

  std::vector<Candidate> requests;
  std::map<std::string, std::vector<Run>> script;  ///< by candidate label
  std::string failing;                             ///< this candidate's every run throws
  std::int64_t failingCalls = 0;                   ///< the next runs that throw, whatever they run
  std::optional<std::size_t> killAfterCalls;       ///< runs after that many throw Killed
  std::chrono::milliseconds sleep{0};              ///< every run takes at least this long
  std::function<void(std::size_t runs)> afterRun;  ///< called after each run that returns

 private:
  Predictor predictor_;
  double slowdown_;
};

/// A machine whose other work never keeps a CPU busy: a contended round is measured again at once.
class QuietMachine : public MachineLoad {
 public:
  std::optional<TimeNs> busyNs() override { return 0; }
};

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.model.name = "fake";
    config_.model.threads = 1;
    config_.devices = {DeviceDesc{}, DeviceDesc{}};
    config_.batch = 8;
    config_.chunks = {1, 4};
    config_.modes = {Checkpoint::Never, Checkpoint::Always};
    config_.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};
    config_.measure.count = 4;
    config_.warmupSteps = 1;
    config_.steps = 2;
    config_.rounds = 2;
    config_.reportPath = (dir_ / "report.json").string();
    config_.tracesDir = (dir_ / "traces").string();
    config_.calibrationPath = "given.json";
    config_.runOffCandidates = 0;  // the fake's ties are exact: the run-off's test turns it on
    inputs_.cachedProfile = fourLayerProfile();
    inputs_.calibration = calibration();
  }

  /// The report a sweep leaves on disk when it is killed once `runs` candidates and references
  /// have run.
  Report reportOfAKilledSweep(std::size_t runs) {
    FakeMeasurer killed(calibratedPredictor(), 1.0);
    killed.killAfterCalls = runs;
    SilentProgress progress;
    EXPECT_THROW(runSweep(config_, inputs_, killed, progress, StopToken()), FakeMeasurer::Killed);
    return readReport(config_.reportPath);  // written atomically after every round
  }

  /// What the sweep predicts with: the four-layer profile, the sweep's devices, calibration().
  Predictor calibratedPredictor() const {
    return Predictor(fourLayerProfile(), sweepCluster(config_.devices, std::nullopt), calibration());
  }

  /// The label of the best predicted candidate that is not a reference pipeline of the drift
  /// correction (one of those runs under the same label): --measure top:4 measures it.
  std::string bestPredictedLabel() const {
    CalibratedSetup setup;
    setup.profile = fourLayerProfile();
    setup.cluster = sweepCluster(config_.devices, std::nullopt);
    setup.calibration = calibration();
    for (const CandidateResult& result : predictedReport(config_, setup).candidates) {
      const bool reference = std::any_of(config_.chunks.begin(), config_.chunks.end(), [&](std::int64_t chunks) {
        return result.candidate == referenceCandidate(4, 2, chunks, config_.batch);
      });
      if (!reference) return result.candidate.label();
    }
    return "";
  }

  test::ScratchDir scratch_{"tuner_sweep"};
  const fs::path dir_ = scratch_.path();
  SweepConfig config_;
  SweepInputs inputs_;
};

TEST_F(SweepTest, EveryPredictionIsThePredictorsAndTheDriftIsKeptApart) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.44);
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());

  ASSERT_TRUE(report.complete);
  std::int64_t measured = 0;
  for (const CandidateResult& result : report.candidates) {
    ASSERT_TRUE(result.predictionBeforeDrift) << result.candidate.label();
    EXPECT_EQ(result.predictionBeforeDrift->iterationNs, predictor.predict(result.candidate).prediction.iterationNs)
        << result.candidate.label();
    EXPECT_NEAR(static_cast<double>(result.prediction.iterationNs),
                1.44 * static_cast<double>(result.predictionBeforeDrift->iterationNs), 1.0);
    if (result.status != CandidateStatus::Measured) continue;
    ++measured;
    EXPECT_EQ(result.measurement->stepNs.size(), 2U);    // two rounds of one step each
    EXPECT_NEAR(*result.stepTimeErrorPct(), 0.0, 0.01);  // references that agree: the whole drift
    EXPECT_NEAR(*result.stepTimeErrorBeforeDriftPct(), 100.0 / 1.44 - 100.0, 0.01);
  }
  EXPECT_EQ(measured, 4);
  // The references of the drift correction (chunks 1 and 4, an even balance, never) went
  // through the same measurer, once per round each.
  std::int64_t references = 0;
  for (const Candidate& candidate : measurer.requests) {
    references += candidate.balance == std::vector<std::int64_t>{2, 2} && candidate.checkpoint == Checkpoint::Never &&
                  candidate.schedule == ScheduleKind::GPipe;
  }
  EXPECT_GE(references, 4);
  EXPECT_NEAR(calibrationDriftFromJson(report.calibrationDrift).referenceRatio(), 1.44, 1e-6);
  EXPECT_NEAR(calibrationDriftFromJson(report.calibrationDrift).factor(), 1.44, 1e-6);
  // The report holds the raw profile and the calibration: predicting from them again gives
  // the same numbers (what simulate --calibration and the GUI do).
  const Report reread = readReport(config_.reportPath);
  const Predictor again(*reread.profile, *reread.cluster, reportCalibration(reread, config_.reportPath));
  for (const CandidateResult& result : reread.candidates) {
    EXPECT_EQ(again.predict(result.candidate).prediction.iterationNs, result.predictionBeforeDrift->iterationNs);
  }
}

TEST_F(SweepTest, ACandidateWhoseRoundsDisagreeGetsMoreRoundsUpToTheMost) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  config_.steps = 4;
  config_.maxRounds = 5;
  const std::string unsteady = bestPredictedLabel();
  // Its rounds: 1.0x, 1.3x (30% apart), then 1.02x, 1.01x, 1.0x.
  measurer.script[unsteady] = {{1.0}, {1.3}, {1.02}, {1.01}, {1.0}};
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  std::int64_t measured = 0;
  for (const CandidateResult& result : report.candidates) {
    if (result.status != CandidateStatus::Measured) continue;
    ++measured;
    const Measurement& measurement = *result.measurement;
    EXPECT_EQ(measurement.roundStartS.size(), static_cast<std::size_t>(measurement.rounds));
    EXPECT_TRUE(std::is_sorted(measurement.roundStartS.begin(), measurement.roundStartS.end()));
    if (result.candidate.label() != unsteady) {
      EXPECT_EQ(measurement.rounds, 2) << "steady rounds get no more: " << result.candidate.label();
      continue;
    }
    EXPECT_EQ(measurement.rounds, 5) << "up to --max-rounds while they disagree";
    EXPECT_EQ(measurement.roundSteps, (std::vector<std::int64_t>{2, 2, 2, 2, 2})) << "extra rounds as long as the last";
    EXPECT_FALSE(measurement.roundsAgree()) << "the 30% round stays among them";
  }
  EXPECT_EQ(measured, 4);
}

TEST_F(SweepTest, ARoundOrReferenceWhoseThreadsWaitedForACpuIsMeasuredAgain) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  config_.maxRounds = 2;
  const Candidate reference = referenceCandidate(4, 2, 1, config_.batch);
  // The x1 reference's first drift run competed for the CPUs (40% of its steps waiting), and
  // ran 2x slow: it is timed again, and the drift stays 1.
  measurer.script[reference.label()] = {{2.0, 0.4}};
  // Its first round waited 30% of its time, and ran 1.5x slow: measured again.
  const std::string contended = bestPredictedLabel();
  measurer.script[contended] = {{1.5, 0.3}, {1.0, 0.02}, {1.0}};
  inputs_.machineLoad = std::make_shared<QuietMachine>();
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  bool found = false;
  for (const CandidateResult& result : report.candidates) {
    if (result.candidate.label() != contended) continue;
    found = true;
    ASSERT_EQ(result.status, CandidateStatus::Measured);
    const Measurement& measurement = *result.measurement;
    EXPECT_EQ(measurement.rounds, 2);
    ASSERT_EQ(measurement.discardedRounds.size(), 1u) << "the contended round, measured again";
    EXPECT_DOUBLE_EQ(measurement.discardedRounds[0].cpuWait, 0.3);
    EXPECT_EQ(measurement.stepNsMedian, predictor.predict(result.candidate).prediction.iterationNs)
        << "only the quiet rounds' steps";
    ASSERT_EQ(measurement.stepCpuWaitNs.size(), 2u);
    EXPECT_GT(measurement.stepCpuWaitNs[0], 0) << "a 2% wait is kept: below kContendedCpuWait";
  }
  EXPECT_TRUE(found) << contended << " was not measured";
  EXPECT_NEAR(calibrationDriftFromJson(report.calibrationDrift).referenceRatio(), 1.0, 1e-9);
  const CalibrationDrift drift = calibrationDriftFromJson(report.calibrationDrift);
  EXPECT_EQ(drift.timings.size(), 6u) << "three passes (the third for the round measured again) of two "
                                         "references, the contended run replaced";
}

TEST_F(SweepTest, AReferenceThatStaysContendedIsKept) {
  FakeMeasurer measurer(calibratedPredictor(), 1.0);
  config_.rounds = 1;
  config_.maxRounds = 1;
  const Candidate reference = referenceCandidate(4, 2, 1, config_.batch);
  // Both runs of the x1 reference waited 40% of their time for a CPU and ran 2x slow: the
  // machine stayed busy, so the second is kept and the drift sees it.
  measurer.script[reference.label()] = {{2.0, 0.4}, {2.0, 0.4}};
  inputs_.machineLoad = std::make_shared<QuietMachine>();
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  const CalibrationDrift drift = calibrationDriftFromJson(report.calibrationDrift);
  EXPECT_EQ(drift.timings.size(), 2u) << "one pass of two references";
  ASSERT_EQ(drift.measuredNs.count(1), 1u);
  EXPECT_EQ(medianNs(drift.measuredNs.at(1)), 2 * drift.predictedNs.at(1)) << "the busy run's 2x steps";
}

/// Records every phase line a sweep prints.
class RecordingProgress : public SilentProgress {
 public:
  void phase(const std::string& message) override { phases.push_back(message); }
  bool said(const std::string& text) const {
    return std::any_of(phases.begin(), phases.end(),
                       [&](const std::string& line) { return line.find(text) != std::string::npos; });
  }
  std::vector<std::string> phases;
};

std::vector<const CandidateResult*> withStatus(const Report& report, CandidateStatus status) {
  std::vector<const CandidateResult*> out;
  for (const CandidateResult& result : report.candidates) {
    if (result.status == status) out.push_back(&result);
  }
  return out;
}

TEST_F(SweepTest, TheBestMeasuredAndTheCandidatesItIsNotToldApartFromAreMeasuredAgainInARunOff) {
  const Predictor predictor = calibratedPredictor();
  SilentProgress progress;
  // Without a run-off, to learn the ties: the fixture predicts and measures GPipe and 1F1B of
  // [2,2] x4 never alike, so their rounds overlap exactly.
  FakeMeasurer plain(predictor, 1.0);
  const Report before = runSweep(config_, inputs_, plain, progress, StopToken());
  const MeasuringConditions tiedBefore = summarizeMeasuringConditions(before);
  ASSERT_TRUE(before.suggestion.bestMeasured);
  ASSERT_GE(tiedBefore.tiedWithBest.size(), 1U) << "the fixture ties the best with another";
  const std::string best = before.candidates[*before.suggestion.bestMeasured].candidate.label();
  const std::string tied = before.candidates[tiedBefore.tiedWithBest.front()].candidate.label();
  ASSERT_TRUE(std::none_of(
      config_.chunks.begin(), config_.chunks.end(),
      [&](std::int64_t chunks) { return tied == referenceCandidate(4, 2, chunks, config_.batch).label(); }))
      << tied << " runs under a reference's label too: the script below would not be its own";

  // With a run-off of one besides the best: the tied candidate's two run-off rounds run 0.7x
  // the time, so the suggestion goes to it.
  config_.runOffCandidates = 1;
  FakeMeasurer measurer(predictor, 1.0);
  measurer.script[tied] = {{1.0}, {1.0}, {0.7}, {0.7}};
  RecordingProgress said;
  const Report report = runSweep(config_, inputs_, measurer, said, StopToken());
  ASSERT_TRUE(report.complete);
  for (const CandidateResult* result : withStatus(report, CandidateStatus::Measured)) {
    const Measurement& measurement = *result->measurement;
    const bool inRunOff = result->candidate.label() == best || result->candidate.label() == tied;
    EXPECT_EQ(measurement.rounds, inRunOff ? 4 : 2) << result->candidate.label();
    EXPECT_EQ(measurement.runOffRounds, inRunOff ? 2 : 0) << result->candidate.label();
    if (inRunOff) {
      EXPECT_EQ(measurement.roundSteps, (std::vector<std::int64_t>{1, 1, 1, 1}))
          << "run-off rounds as long as the last";
    }
  }
  ASSERT_TRUE(report.suggestion.bestMeasured);
  EXPECT_EQ(report.candidates[*report.suggestion.bestMeasured].candidate.label(), tied);
  EXPECT_TRUE(said.said("run-off: the best measured, " + best + ", is not told apart from")) << said.phases.back();
  const MeasuringConditions conditions = summarizeMeasuringConditions(readReport(config_.reportPath));
  EXPECT_EQ(conditions.runOffCandidates, 2) << "the report on disk keeps the run-off's rounds";
  EXPECT_EQ(conditions.runOffRounds, 2);
}

TEST_F(SweepTest, TheRunOffWeighsTheBestPredictedAgainstTheBestMeasuredBeforeFasterOnes) {
  // The fixture measures [2,2] x4 never (the best predicted) and its 1f1b twin at 77 us, and two
  // others at 114 and 146 us. Scripted: the twin's rounds read 0.9x and 1.0x (the best
  // measured, overlapping the best predicted's 77 us), and [3,1] x1 always's 0.65x and 0.66x
  // (faster than the best predicted, overlapping the twin's rounds too).
  config_.runOffCandidates = 1;
  config_.maxRounds = config_.rounds;  // no extra rounds for the twin's disagreeing ones
  FakeMeasurer measurer(calibratedPredictor(), 1.0);
  measurer.script["[2,2] x4 never 1f1b"] = {{0.9}, {1.0}};
  measurer.script["[3,1] x1 always"] = {{0.65}, {0.66}};
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  std::map<std::string, std::int64_t> runOffRounds;
  for (const CandidateResult* result : withStatus(report, CandidateStatus::Measured)) {
    runOffRounds[result->candidate.label()] = result->measurement->runOffRounds;
  }
  ASSERT_EQ(runOffRounds.size(), 4U);
  ASSERT_EQ(report.candidates[*report.suggestion.bestPredicted].candidate.label(), "[2,2] x4 never");
  EXPECT_EQ(runOffRounds["[2,2] x4 never 1f1b"], 2) << "the best measured";
  EXPECT_EQ(runOffRounds["[2,2] x4 never"], 2) << "the best predicted, tied with it, goes first";
  EXPECT_EQ(runOffRounds["[3,1] x1 always"], 0) << "faster, but the one place went to the best predicted";
}

TEST_F(SweepTest, SaysWhatItWillDoBeforeItStarts) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  RecordingProgress progress;
  runSweep(config_, inputs_, measurer, progress, StopToken());
  ASSERT_FALSE(progress.phases.empty());
  EXPECT_EQ(progress.phases.front(),
            "plan: the profile given, the calibration of given.json, then measuring 4 of the best predicted in 2 "
            "rounds of 2 steps in all (about how long, once calibrated)");

  inputs_.cachedProfile.reset();
  inputs_.calibration.reset();
  config_.timeLimitSeconds = 60;
  config_.profileBudgetSeconds = 20;
  config_.calibrationBudgetSeconds = 20;
  config_.measure.kind = MeasureKind::All;
  EXPECT_EQ(describePlan(withinTime(config_), inputs_),
            "--time 60s: profiling within 12 s, calibrating within 9 s, then measuring every candidate predicted "
            "to fit in 2 rounds of 2 steps in all, those expected to end in the time left");
}

TEST_F(SweepTest, AFailingCandidateIsRecordedAndTheSweepCompletes) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  config_.modes = {Checkpoint::Always, Checkpoint::ExceptLast};  // no candidate runs as a reference (never)
  measurer.failing = bestPredictedLabel();
  SilentProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  EXPECT_TRUE(report.complete);
  const auto failed = withStatus(report, CandidateStatus::Failed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed.front()->candidate.label(), measurer.failing);
  EXPECT_EQ(failed.front()->error, "a layer threw (a fake failure)");
  EXPECT_FALSE(failed.front()->measurement.has_value());
  EXPECT_EQ(withStatus(report, CandidateStatus::Measured).size(), 3u);
  EXPECT_EQ(std::count_if(measurer.requests.begin(), measurer.requests.end(),
                          [&](const Candidate& candidate) { return candidate.label() == measurer.failing; }),
            1)
      << "a failed candidate is not measured again in later rounds";
}

TEST_F(SweepTest, AFailedCalibrationIsReportedAndTheSweepGoesOnUncalibrated) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  inputs_.calibration.reset();  // calibrate now: its first reference pipeline fails
  config_.calibrationPath.clear();
  measurer.failingCalls = 1;
  RecordingProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  EXPECT_TRUE(progress.said("calibration failed, predicting from the raw profile: out of memory (a fake failure)"));
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(report.calibrationError, "out of memory (a fake failure)");
  EXPECT_TRUE(report.calibration.is_null());
  EXPECT_EQ(withStatus(report, CandidateStatus::Measured).size(), 4u);
}

TEST_F(SweepTest, TheCalibrationTimesGPipeAndTheShapesOfTheCandidatesToMeasureOnly) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  inputs_.calibration.reset();
  config_.calibrationPath.clear();
  config_.calibrationRounds = 1;
  config_.measure.count = 2;
  RecordingProgress progress;
  const CalibratedSetup setup = calibrate(config_, inputs_, fourLayerProfile(), measurer, progress);
  ASSERT_TRUE(setup.calibrationError.empty()) << setup.calibrationError;
  EXPECT_TRUE(progress.said("calibration pass 1: ")) << progress.phases.front();

  std::set<std::string> timed;
  for (const Candidate& reference : measurer.requests) {
    timed.insert(reference.scheduleLabel() + " " + std::string(checkpointName(reference.checkpoint)) + " x" +
                 std::to_string(reference.chunks));
  }
  EXPECT_EQ(timed.count("gpipe never x1") + timed.count("gpipe never x4"), 2u) << "GPipe at every chunk count";
  // The candidates the calibrated sweep measures have their shapes timed at their chunk counts,
  // and nothing else is: the grid of 4 shapes at 2 chunk counts is not.
  for (const Candidate& candidate : candidatesToMeasure(config_, setup.profile, setup.cluster, setup.calibration)) {
    const std::string label = candidate.scheduleLabel() + " " + std::string(checkpointName(candidate.checkpoint)) +
                              " x" + std::to_string(candidate.chunks);
    EXPECT_EQ(timed.count(label), 1u) << label << " is measured but was not calibrated";
  }
  EXPECT_LT(timed.size(), referencePlan(4, config_.batch, config_.chunks, 2,
                                        referenceShapes(config_.schedules, {1}, config_.modes, 2, 4))
                              .size());
}

TEST_F(SweepTest, UnlessToldTheCalibrationTimesEachReferenceAsOftenAsACandidateIsMeasured) {
  const Predictor predictor = calibratedPredictor();
  inputs_.calibration.reset();
  config_.calibrationPath.clear();
  config_.steps = 3;
  config_.rounds = 3;
  ASSERT_FALSE(config_.calibrationRounds.has_value());
  auto gpipeX1Runs = [](const FakeMeasurer& measurer) {
    return std::count_if(measurer.requests.begin(), measurer.requests.end(), [](const Candidate& reference) {
      return reference.schedule == ScheduleKind::GPipe && reference.checkpoint == Checkpoint::Never &&
             reference.chunks == 1;
    });
  };
  FakeMeasurer measurer(predictor, 1.0);
  RecordingProgress progress;
  const CalibratedSetup setup = calibrate(config_, inputs_, fourLayerProfile(), measurer, progress);
  ASSERT_TRUE(setup.calibrationError.empty()) << setup.calibrationError;
  EXPECT_TRUE(progress.said("at their chunk counts, 3 round(s) each"));
  EXPECT_EQ(gpipeX1Runs(measurer), 3) << "GPipe x1 (not the probe) once in each of the 3 rounds";

  config_.calibrationRounds = 1;
  FakeMeasurer once(predictor, 1.0);
  calibrate(config_, inputs_, fourLayerProfile(), once, progress);
  EXPECT_EQ(gpipeX1Runs(once), 1) << "--calibration-rounds 1: once";
}

TEST_F(SweepTest, ACtrlCWhileCalibratingLeavesAReportThatResumeCalibratesAndMeasures) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  inputs_.calibration.reset();
  config_.calibrationPath.clear();
  config_.calibrationRounds = 1;  // the fake's references take no time: one round, not the whole budget
  StopSource stop;
  measurer.afterRun = [&](std::size_t runs) {
    if (runs == 2) stop.requestStop();  // during the calibration's second reference pipeline
  };
  SilentProgress progress;
  try {
    runSweep(config_, inputs_, measurer, progress, stop.token());
    ADD_FAILURE() << "the sweep was not interrupted";
  } catch (const SweepInterrupted& interrupted) {
    EXPECT_NE(std::string(interrupted.what()).find("--resume"), std::string::npos) << interrupted.what();
  }
  EXPECT_EQ(measurer.requests.size(), 2u);
  const Report onDisk = readReport(config_.reportPath);
  EXPECT_FALSE(onDisk.complete);
  EXPECT_TRUE(onDisk.calibrationPending);
  EXPECT_TRUE(onDisk.calibration.is_null());
  EXPECT_TRUE(onDisk.profile.has_value());
  EXPECT_FALSE(onDisk.candidates.empty());
  EXPECT_TRUE(withStatus(onDisk, CandidateStatus::Measured).empty());

  // --resume calibrates (with the report's profile) and measures.
  inputs_.resumedReport = onDisk;
  FakeMeasurer resumed(predictor, 1.0);
  const Report finished = runSweep(config_, inputs_, resumed, progress, StopToken());
  EXPECT_TRUE(finished.complete);
  EXPECT_FALSE(finished.calibrationPending);
  EXPECT_FALSE(finished.calibration.is_null());
  EXPECT_EQ(withStatus(finished, CandidateStatus::Measured).size(), 4u);
  EXPECT_FALSE(readReport(config_.reportPath).calibrationPending);
}

TEST_F(SweepTest, ResumeAfterAKilledSweepKeepsWhatFinishedAndMeasuresTheRest) {
  const Predictor predictor = calibratedPredictor();
  config_.rounds = 1;
  config_.steps = 1;
  config_.modes = {Checkpoint::Always, Checkpoint::ExceptLast};  // no candidate runs as a reference (never)
  const Report onDisk = reportOfAKilledSweep(2);  // the x1 reference, the first candidate; killed at the next run
  EXPECT_FALSE(onDisk.complete);
  const auto kept = withStatus(onDisk, CandidateStatus::Measured);
  ASSERT_EQ(kept.size(), 1u);
  const Candidate first = kept.front()->candidate;
  const std::vector<TimeNs> firstSteps = kept.front()->measurement->stepNs;

  FakeMeasurer resumed(predictor, 1.0);
  inputs_.resumedReport = onDisk;
  RecordingProgress again;
  const Report finished = runSweep(config_, inputs_, resumed, again, StopToken());
  EXPECT_TRUE(again.said("resuming: 1 finished candidate(s) kept, 3 to measure")) << again.phases.front();
  EXPECT_TRUE(finished.complete);
  const auto measured = withStatus(finished, CandidateStatus::Measured);
  ASSERT_EQ(measured.size(), 4u);
  for (const CandidateResult* result : measured) {
    if (result->candidate == first) {
      EXPECT_EQ(result->measurement->stepNs, firstSteps) << "re-measured";
    }
  }
  EXPECT_EQ(std::count(resumed.requests.begin(), resumed.requests.end(), first), 0) << "run again";
}

TEST_F(SweepTest, ResumeContinuesAPartlyMeasuredCandidateFromItsNextRound) {
  const Predictor predictor = calibratedPredictor();
  config_.steps = 4;
  config_.maxRounds = 2;
  config_.modes = {Checkpoint::Always, Checkpoint::ExceptLast};  // no candidate runs as a reference (never)
  const Report onDisk = reportOfAKilledSweep(2);                 // the x1 reference, the first candidate's round 1 of 2
  std::optional<CandidateResult> partly;
  for (const CandidateResult& result : onDisk.candidates) {
    if (result.measurement) partly = result;
  }
  ASSERT_TRUE(partly);
  EXPECT_EQ(partly->status, CandidateStatus::Predicted);
  EXPECT_EQ(partly->notMeasuredReason, "measuring: 1 of 2 rounds done");
  EXPECT_EQ(partly->measurement->stepNs.size(), 2u) << "round 1 of 2 takes half of the 4 steps";

  FakeMeasurer resumed(predictor, 1.0);
  inputs_.resumedReport = onDisk;
  RecordingProgress again;
  const Report finished = runSweep(config_, inputs_, resumed, again, StopToken());
  EXPECT_TRUE(again.said("resuming: 0 finished candidate(s) kept, 4 to measure (1 partly measured)"));
  EXPECT_EQ(std::count(resumed.requests.begin(), resumed.requests.end(), partly->candidate), 1)
      << "only its second round";
  for (const CandidateResult* result : withStatus(finished, CandidateStatus::Measured)) {
    EXPECT_EQ(result->measurement->rounds, 2);
    if (result->candidate != partly->candidate) continue;
    const std::vector<TimeNs> firstRound(result->measurement->stepNs.begin(), result->measurement->stepNs.begin() + 2);
    EXPECT_EQ(firstRound, partly->measurement->stepNs) << "the kept round was measured again";
  }
}

TEST_F(SweepTest, ATimeLimitMeasuresWhatFitsAndLeavesTheRestToResume) {
  // Every run takes 40 ms or more: 4 candidates x 2 rounds and 2 references a pass need 480 ms
  // or more, and a --time of 1.3 s leaves 0.3 s after its 1 s margin.
  const Predictor predictor = calibratedPredictor();
  config_.modes = {Checkpoint::Always, Checkpoint::ExceptLast};  // no candidate runs as a reference (never)
  config_.timeLimitSeconds = 1.3;
  FakeMeasurer measurer(predictor, 1.0);
  measurer.sleep = std::chrono::milliseconds(40);
  RecordingProgress progress;
  const Report report = runSweep(config_, inputs_, measurer, progress, StopToken());
  EXPECT_FALSE(report.complete);
  std::int64_t leftShort = 0;
  for (const CandidateResult& result : report.candidates) {
    if (result.status != CandidateStatus::Predicted || result.predictedRank == 0) continue;
    if (result.notMeasuredReason.find("--time 1.3s ran out") != std::string::npos) ++leftShort;
  }
  EXPECT_GE(leftShort, 1);
  EXPECT_TRUE(progress.said("candidates left short: continue with --resume"));
  EXPECT_EQ(readReport(config_.reportPath).complete, false);

  // --resume without a limit measures the rest.
  config_.timeLimitSeconds = 0;
  inputs_.resumedReport = readReport(config_.reportPath);
  FakeMeasurer resumed(predictor, 1.0);
  SilentProgress quiet;
  const Report finished = runSweep(config_, inputs_, resumed, quiet, StopToken());
  EXPECT_TRUE(finished.complete);
  EXPECT_EQ(withStatus(finished, CandidateStatus::Measured).size(), 4u);
}

TEST_F(SweepTest, ATimeLimitCutsTheProfilesAndTheCalibrationsBudgets) {
  config_.profileBudgetSeconds = 20;
  config_.calibrationBudgetSeconds = 4;
  EXPECT_EQ(withinTime(config_).profileBudgetSeconds, 20) << "no limit: as given";
  config_.timeLimitSeconds = 60;
  EXPECT_DOUBLE_EQ(withinTime(config_).profileBudgetSeconds, 12);
  EXPECT_DOUBLE_EQ(withinTime(config_).calibrationBudgetSeconds, 4);
  config_.timeLimitSeconds = 10;
  EXPECT_DOUBLE_EQ(withinTime(config_).profileBudgetSeconds, 2);
  EXPECT_DOUBLE_EQ(withinTime(config_).calibrationBudgetSeconds, 1.5);
}

TEST_F(SweepTest, StopsBetweenCandidatesWithTheReportOnDisk) {
  const Predictor predictor = calibratedPredictor();
  FakeMeasurer measurer(predictor, 1.0);
  SilentProgress progress;
  StopSource stop;
  stop.requestStop();
  EXPECT_THROW(runSweep(config_, inputs_, measurer, progress, stop.token()), SweepInterrupted);
  const Report onDisk = readReport(config_.reportPath);
  EXPECT_FALSE(onDisk.complete);
  EXPECT_FALSE(onDisk.candidates.empty());
  EXPECT_TRUE(measurer.requests.empty());
}

}  // namespace
}  // namespace pipeprof::tuner
