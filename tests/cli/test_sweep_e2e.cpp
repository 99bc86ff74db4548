// End-to-end tests of `pipeprof sweep`, `compare` and `models` on a tiny CPU model.
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/report.h>

#include "support/run_process.h"
#include "support/scratch_dir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace pipeprof {
namespace {

namespace fs = std::filesystem;

using test::BackgroundProcess;
using test::contains;
using test::Environment;
using test::ProcessResult;
using test::waitFor;

std::string slurp(const fs::path& path) { return test::readFile(path.string()); }

std::string quote(const std::string& text) { return "'" + text + "'"; }

class SweepE2E : public ::testing::Test {
 protected:
  /// Runs pipeprof with the arguments (already shell-quoted where needed).
  ProcessResult pipeprof(const std::string& args, const Environment& environment = {}) const {
    return test::pipeprof(args, environment);
  }

  /// Starts pipeprof with the arguments in the background, in a process group of its own.
  std::unique_ptr<BackgroundProcess> start(const std::string& args, const Environment& environment = {}) const {
    return std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/bin/sh", "-c", "exec " + quote(test::kPipeprof) + " " + args},
        (dir_ / "background.out").string(), (dir_ / "background.err").string(), environment);
  }

  /// The tiny sweep every test starts from: a 4-layer mlp, batch 8, chunks 1 and 2.
  std::string tinySweep(const std::string& report, const std::string& measure = "top:3",
                        const std::string& steps = "--steps 1") const {
    return "sweep --model mlp --width 16 --depth 2 --devices cpu,cpu --batch 8 --chunks 1,2 --measure " + measure +
           " " + steps + " --warmup 1 --profile-budget 1 --calibration-budget 600 --calibration-rounds 1 -o " +
           quote(report);
  }

  test::ScratchDir scratch_{"sweep_e2e"};
  const fs::path dir_ = scratch_.path();
};

std::size_t countLines(const std::string& text, const std::string& prefix) {
  std::size_t count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) ++count;
  }
  return count;
}

std::vector<const CandidateResult*> withStatus(const Report& report, CandidateStatus status) {
  std::vector<const CandidateResult*> found;
  for (const CandidateResult& result : report.candidates) {
    if (result.status == status) found.push_back(&result);
  }
  return found;
}

TEST_F(SweepE2E, WritesAValidReportWhoseMeasuredCandidatesHaveTraces) {
  const fs::path report = dir_ / "out" / "report.json";
  const ProcessResult run = pipeprof(tinySweep(report.string()));
  ASSERT_EQ(run.code, 0) << run.err;
  const Report parsed = readReport(report.string());
  EXPECT_TRUE(parsed.complete);
  EXPECT_EQ(parsed.environment.model, "mlp");
  EXPECT_EQ(parsed.environment.batch, 8);
  EXPECT_EQ(parsed.environment.devices, (std::vector<std::string>{"cpu", "cpu"}));
  // The default: the cores shared among the 2 partitions, at least one thread each.
  const auto cores = static_cast<std::int64_t>(std::max(1U, std::thread::hardware_concurrency()));
  EXPECT_EQ(parsed.environment.threads, std::max<std::int64_t>(1, cores / 2));
  EXPECT_FALSE(parsed.environment.pipeprofRevision.empty());
  ASSERT_TRUE(parsed.profile.has_value());
  // One reference pipeline per chunk count calibrated every micro-batch size (8 and 4).
  const nlohmann::json& calibration = parsed.calibration;
  EXPECT_EQ(calibration.at("schema"), "pipeprof.calibration/v1");
  ASSERT_EQ(calibration.at("micro_batch_scales").size(), 2u) << calibration;
  EXPECT_EQ(calibration.at("micro_batch_scales")[0].at("micro_batch"), 4);
  EXPECT_EQ(calibration.at("step_overhead_ns")[1].at("chunks"), 2);
  EXPECT_EQ(calibration.at("measured").at("model"), "mlp");
  // GPipe without checkpoints at every chunk count, and the shape (schedule and mode) of each
  // measured candidate at its chunk count -- not every shape the sweep tries at every chunk count.
  std::set<std::tuple<std::string, std::string, std::int64_t>> references;
  for (const nlohmann::json& reference : calibration.at("measured").at("references")) {
    references.insert({reference.at("schedule").get<std::string>(), reference.at("checkpoint").get<std::string>(),
                       reference.at("chunks").get<std::int64_t>()});
  }
  EXPECT_EQ(references.count({"gpipe", "never", 1}) + references.count({"gpipe", "never", 2}), 2u) << calibration;
  // One set of corrections, every shape's references its samples: no shape has its own.
  EXPECT_FALSE(calibration.contains("shapes")) << calibration;
  // Three passes at most: a measured candidate the last pass moved into the selection may be
  // left untimed (a tiny model's candidates are all but tied, and its ranks move with every
  // pass), but every schedule measured has references.
  std::size_t calibratedShapes = 0;
  for (const CandidateResult* measured : withStatus(parsed, CandidateStatus::Measured)) {
    const Candidate& candidate = measured->candidate;
    const std::string mode(checkpointName(candidate.checkpoint));
    calibratedShapes += references.count({candidate.scheduleLabel(), mode, candidate.chunks});
    const bool schedule = std::any_of(references.begin(), references.end(), [&](const auto& reference) {
      return std::get<0>(reference) == candidate.scheduleLabel();
    });
    EXPECT_TRUE(schedule) << candidate.label() << " was measured but its schedule not timed: " << calibration;
  }
  EXPECT_GE(calibratedShapes, 1u) << "no measured candidate was timed at its own shape and chunk count";
  EXPECT_LT(references.size(), 2u * 9u) << "gpipe, 1f1b and zb1p in each mode at chunks 1 and 2: " << calibration;
  // Each measuring pass timed each reference once more (--steps 1): the drift correction. A
  // round measured again because another process took the CPUs (a loaded test machine) made
  // another pass.
  std::size_t passes = 1;
  for (const CandidateResult& result : parsed.candidates) {
    if (result.measurement) passes = std::max(passes, 1 + result.measurement->discardedRounds.size());
  }
  const nlohmann::json& drift = parsed.calibrationDrift;
  ASSERT_EQ(drift.at("references").size(), 2u) << drift;
  for (const nlohmann::json& reference : drift.at("references")) {
    EXPECT_GT(reference.at("predicted_ns").get<TimeNs>(), 0) << reference;
    EXPECT_EQ(reference.at("step_ns").size(), passes) << reference;
  }
  const double factor = drift.at("factor").get<double>();
  EXPECT_NE(run.err.find("calibration drift: "), std::string::npos) << run.err;
  const auto measured = withStatus(parsed, CandidateStatus::Measured);
  ASSERT_EQ(measured.size(), 3u);
  for (const CandidateResult* result : measured) {
    ASSERT_TRUE(result->measurement.has_value());
    EXPECT_EQ(result->measurement->stepNs.size(), 1u);
    EXPECT_EQ(result->measurement->peakBytes.size(), 2u);
    EXPECT_TRUE(fs::is_regular_file(report.parent_path() / result->measurement->tracePath))
        << result->measurement->tracePath;
    EXPECT_TRUE(fs::is_regular_file(report.parent_path() / result->prediction.tracePath))
        << result->prediction.tracePath;
    EXPECT_TRUE(result->stepTimeErrorPct().has_value());
    EXPECT_TRUE(result->stepTimeErrorBeforeDriftPct().has_value());
    // Its own factor, at the machine's speed during its rounds: the one its prediction took.
    ASSERT_TRUE(result->predictionBeforeDrift.has_value());
    const double own = result->predictedAnalysis.at("calibration_drift_factor").get<double>();
    EXPECT_NEAR(own,
                static_cast<double>(result->prediction.iterationNs) /
                    static_cast<double>(result->predictionBeforeDrift->iterationNs),
                1e-5);
  }
  for (const CandidateResult* result : withStatus(parsed, CandidateStatus::Predicted)) {
    ASSERT_TRUE(result->predictionBeforeDrift.has_value()) << result->candidate.label();
    EXPECT_NEAR(static_cast<double>(result->prediction.iterationNs),
                factor * static_cast<double>(result->predictionBeforeDrift->iterationNs), 1.0)
        << "a candidate not measured takes the sweep's factor";
  }
  EXPECT_TRUE(parsed.suggestion.bestMeasured.has_value());
  EXPECT_TRUE(parsed.suggestion.bestPredicted.has_value());
  EXPECT_NE(run.out.find("step-time MAPE:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("before the drift factor"), std::string::npos) << run.out;
  EXPECT_EQ(countLines(run.err, "measured "), 3u) << run.err;  // plain progress lines: not a terminal
}

TEST_F(SweepE2E, SimulateAndSuggestWithTheReportsProfileAndCalibrationPredictWhatTheReportDoes) {
  const fs::path report = dir_ / "report.json";
  ASSERT_EQ(pipeprof(tinySweep(report.string(), "none")).code, 0);
  const Report parsed = readReport(report.string());
  ASSERT_TRUE(parsed.profile.has_value());
  const fs::path profile = dir_ / "profile.json";
  const fs::path calibration = dir_ / "calibration.json";
  writeProfile(*parsed.profile, profile.string());
  std::ofstream(calibration) << parsed.calibration.dump(2);
  const std::string inputs =
      " --profile " + quote(profile.string()) + " --calibration " + quote(calibration.string()) + " --batch 8 --json";
  const ProcessResult suggest = pipeprof("suggest --devices 2 --chunks 1,2 --top 100" + inputs);
  ASSERT_EQ(suggest.code, 0) << suggest.err;
  const nlohmann::json suggested = nlohmann::json::parse(suggest.out);
  std::size_t compared = 0;
  for (const CandidateResult& result : parsed.candidates) {
    if (result.predictedRank < 1 || result.predictedRank > 3) continue;
    ASSERT_TRUE(result.predictionBeforeDrift.has_value());
    const Candidate& candidate = result.candidate;
    const ProcessResult simulate = pipeprof(
        "simulate --devices 2 --balance " + formatBalance(candidate.balance) + " --chunks " +
        std::to_string(candidate.chunks) + " --checkpoint " + std::string(checkpointName(candidate.checkpoint)) +
        " --schedule " + std::string(scheduleKindName(candidate.schedule)) +
        (candidate.deferredWeights.empty() ? std::string()
                                           : " --deferred-weights " + formatBalance(candidate.deferredWeights)) +
        inputs);
    ASSERT_EQ(simulate.code, 0) << simulate.err;
    EXPECT_EQ(nlohmann::json::parse(simulate.out).at("iteration_ns").get<TimeNs>(),
              result.predictionBeforeDrift->iterationNs)
        << candidate.label();
    for (const nlohmann::json& ranked : suggested.at("ranked")) {
      if (ranked.at("label") != candidate.label()) continue;
      EXPECT_EQ(ranked.at("prediction").at("iteration_ns").get<TimeNs>(), result.predictionBeforeDrift->iterationNs)
          << candidate.label();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 3u);

  // The sweep kept its reference pipelines' traces: fitted again, they give the same calibration.
  const fs::path refitted = dir_ / "refitted.json";
  const ProcessResult refit =
      pipeprof("calibrate --refit " + quote(report.string()) + " -o " + quote(refitted.string()));
  ASSERT_EQ(refit.code, 0) << refit.err;
  EXPECT_EQ(readJsonFile(refitted.string()), parsed.calibration);
  EXPECT_NE(refit.out.find("reference gpipe never x2"), std::string::npos) << refit.out;
  const ProcessResult elsewhere = pipeprof("calibrate --refit " + quote(report.string()) + " --traces-dir " +
                                           quote((dir_ / "nowhere").string()) + " -o " + quote(refitted.string()));
  EXPECT_NE(elsewhere.code, 0);
  EXPECT_NE(elsewhere.err.find("no such directory of reference traces"), std::string::npos) << elsewhere.err;
}

TEST_F(SweepE2E, MeasuresEveryScheduleWithValidTracesAndCompareShowsTheSchedule) {
  // mlp --depth 3: 5 layers. One balance per schedule: gpipe, 1f1b and zb1p [2,3] (2 stages),
  // interleaved, interleaved-zb v2 and zbv [1,1,1,2] (4 stages on the 2 devices).
  const fs::path report = dir_ / "report.json";
  const ProcessResult run =
      pipeprof("sweep --model mlp --width 16 --depth 3 --devices cpu,cpu --batch 8 --chunks 2 --checkpoint never "
               "--balances '2,3;1,1,1,2' --measure all --steps 1 --warmup 1 --profile-budget 1 --calibration-budget "
               "600 --calibration-rounds 1 -o " +
               quote(report.string()));
  ASSERT_EQ(run.code, 0) << run.err;
  const Report parsed = readReport(report.string());
  ASSERT_EQ(parsed.candidates.size(), 6u);
  std::vector<std::string> labels;
  for (const CandidateResult& result : parsed.candidates) {
    labels.push_back(result.candidate.label());
    EXPECT_EQ(result.status, CandidateStatus::Measured) << result.candidate.label() << ": " << result.error;
    ASSERT_TRUE(result.measurement.has_value()) << result.candidate.label();
    // One peak per pipeline device, measured and predicted.
    EXPECT_EQ(result.measurement->peakBytes.size(), 2u) << result.candidate.label();
    EXPECT_EQ(result.prediction.peakBytes.size(), 2u) << result.candidate.label();
    const fs::path measured = report.parent_path() / result.measurement->tracePath;
    const fs::path predicted = report.parent_path() / result.prediction.tracePath;
    EXPECT_TRUE(fs::is_regular_file(measured)) << measured;
    EXPECT_TRUE(fs::is_regular_file(predicted)) << predicted;
    EXPECT_EQ(measured.filename().string().find(' '), std::string::npos) << measured;
    // The measured trace parses and holds the candidate's loss ops.
    const std::string trace = slurp(measured);
    EXPECT_NE(trace.find("\"loss(0)\""), std::string::npos) << measured;
  }
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels,
            (std::vector<std::string>{"[1,1,1,2] x2 never interleaved v2", "[1,1,1,2] x2 never interleaved-zb v2",
                                      "[1,1,1,2] x2 never zbv", "[2,3] x2 never", "[2,3] x2 never 1f1b",
                                      // the mlp's W keeps twice its forward: no W deferred
                                      "[2,3] x2 never zb1p deferred-weights 0,0"}));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "report.traces" / "b1-1-1-2_m2_never_interleaved-v2.measured.json"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "report.traces" / "b2-3_m2_never_1f1b.predicted.json"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "report.traces" / "b2-3_m2_never.measured.json"));
  // A zero-bubble candidate's traces, measured and predicted, show its backward as I and W.
  for (const char* suffix : {".measured.json", ".predicted.json"}) {
    const std::string zb = slurp(dir_ / "report.traces" / (std::string("b2-3_m2_never_zb1p-deferred-0-0") + suffix));
    EXPECT_NE(zb.find("\"backward-input(1,1)\""), std::string::npos) << suffix;
    EXPECT_NE(zb.find("\"backward-weight(0,0)\""), std::string::npos) << suffix;
    // zbv's last stage (3) runs on device 0: its spans are on device 0's track.
    const std::string zbv = slurp(dir_ / "report.traces" / (std::string("b1-1-1-2_m2_never_zbv") + suffix));
    EXPECT_NE(zbv.find("\"backward-input(1,3)\""), std::string::npos) << suffix;
  }
  // Every measured candidate carries its step breakdown per device, measured and predicted:
  // the measured one over the traced step, the predicted one over the predicted step.
  for (const CandidateResult& result : parsed.candidates) {
    SCOPED_TRACE(result.candidate.label());
    ASSERT_TRUE(result.measuredBreakdown.has_value());
    ASSERT_TRUE(result.predictedBreakdown.has_value());
    ASSERT_EQ(result.measuredBreakdown->devices.size(), 2u);
    ASSERT_EQ(result.predictedBreakdown->devices.size(), 2u);
    for (std::size_t d = 0; d < 2; ++d) {
      const DeviceStepBreakdown& measured = result.measuredBreakdown->devices[d];
      const DeviceStepBreakdown& predicted = result.predictedBreakdown->devices[d];
      EXPECT_GT(measured.at(StepCategory::Forward), 0);
      EXPECT_GT(predicted.at(StepCategory::Forward), 0);
      EXPECT_GE(measured.stepNs(), result.measurement->stepNsMin);
      EXPECT_LE(measured.stepNs(), result.measurement->stepNsMax);
      EXPECT_NEAR(static_cast<double>(predicted.stepNs()), static_cast<double>(result.prediction.iterationNs),
                  0.005 * static_cast<double>(result.prediction.iterationNs) + 1000.0);
    }
  }
  const ProcessResult explain = pipeprof("explain " + quote(report.string()));
  ASSERT_EQ(explain.code, 0) << explain.err;
  for (const char* text : {"device 0 (cpu:0)", "device 1 (cpu:1)", "measured: mean of 1 step", "forward", "bubble",
                           "step", "where prediction and measurement differ most:"}) {
    EXPECT_NE(explain.out.find(text), std::string::npos) << text << "\n" << explain.out;
  }
  const ProcessResult json = pipeprof("explain --json --candidate 1 " + quote(report.string()));
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json explained = nlohmann::json::parse(json.out);
  EXPECT_EQ(explained.at("predicted_rank"), 1);
  EXPECT_EQ(explained.at("measured").at("devices").size(), 2u);
  const ProcessResult missing = pipeprof("explain --candidate 99 " + quote(report.string()));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--candidate: no candidate of predicted rank 99"), std::string::npos) << missing.err;

  const ProcessResult compare = pipeprof("compare " + quote(report.string()));
  ASSERT_EQ(compare.code, 0) << compare.err;
  EXPECT_NE(compare.out.find("schedule"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("[1,1,1,2] x2 never       interleaved v2"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("[2,3] x2 never           1f1b"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("[2,3] x2 never           gpipe"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("[2,3] x2 never           zb1p"), std::string::npos) << compare.out;
}

TEST_F(SweepE2E, CompareReproducesTheSweepsOutput) {
  const fs::path report = dir_ / "report.json";
  const ProcessResult sweep = pipeprof(tinySweep(report.string(), "top:2"));
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  const ProcessResult compare = pipeprof("compare " + quote(report.string()));
  ASSERT_EQ(compare.code, 0) << compare.err;
  EXPECT_EQ(compare.out, sweep.out);
  EXPECT_TRUE(compare.err.empty()) << compare.err;
}

TEST_F(SweepE2E, ResumeKeepsTheReportsFinishedCandidatesAndMeasuresTheRest) {
  // What a kill in the middle leaves, without killing: a report whose first candidate is
  // measured (the sweep's own tests kill one through a fake measurer: tests/tuner/test_sweep.cpp).
  const fs::path report = dir_ / "report.json";
  ASSERT_EQ(pipeprof(tinySweep(report.string(), "top:1")).code, 0);
  const Report first = readReport(report.string());
  const auto kept = withStatus(first, CandidateStatus::Measured);
  ASSERT_EQ(kept.size(), 1u);
  const std::string firstLabel = kept.front()->candidate.label();
  const std::vector<TimeNs> firstSteps = kept.front()->measurement->stepNs;

  const ProcessResult resumed = pipeprof(tinySweep(report.string(), "top:3") + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: 1 finished candidate(s) kept, 2 to measure"), std::string::npos) << resumed.err;
  EXPECT_EQ(countLines(resumed.err, "profiling "), 0u) << "the report's profile is reused";
  EXPECT_EQ(resumed.err.find("measuring " + firstLabel), std::string::npos) << resumed.err;
  const Report finished = readReport(report.string());
  EXPECT_TRUE(finished.complete);
  const auto measured = withStatus(finished, CandidateStatus::Measured);
  ASSERT_EQ(measured.size(), 3u);
  for (const CandidateResult* result : measured) {
    ASSERT_TRUE(result->predictionBeforeDrift.has_value());
    if (result->candidate.label() == firstLabel) {
      EXPECT_EQ(result->measurement->stepNs, firstSteps) << "re-measured";
    }
    EXPECT_NEAR(result->predictedAnalysis.at("calibration_drift_factor").get<double>(),
                static_cast<double>(result->prediction.iterationNs) /
                    static_cast<double>(result->predictionBeforeDrift->iterationNs),
                1e-5)
        << "every predicted twin scaled by the final drift";
  }
}

TEST_F(SweepE2E, CtrlCStopsAfterTheCurrentStepAndLeavesAValidReport) {
  // So many steps that the first candidate is still measuring when Ctrl-C arrives.
  const fs::path report = dir_ / "report.json";
  const std::string sweep = "sweep --model mlp --width 16 --depth 2 --devices cpu,cpu --batch 8 --chunks 1,2 "
                            "--measure top:3 --steps 1000000 --warmup 1 --profile-budget 1 --calibration-budget 600 "
                            "--calibration-rounds 1 -o " +
                            quote(report.string());
  const auto running = start(sweep);
  // The candidate's start line ("measuring [...] ...") follows the reference pipelines' ones.
  ASSERT_TRUE(waitFor([&] { return contains(running->err(), "measuring ["); }, std::chrono::seconds(60)))
      << running->err();
  running->signal(SIGINT);
  const std::optional<ProcessResult> ended = running->wait(std::chrono::seconds(30));
  ASSERT_TRUE(ended.has_value()) << "the sweep did not stop within 30 s of Ctrl-C";
  EXPECT_EQ(ended->code, 130);
  const std::string err = ended->err;
  EXPECT_NE(err.find("interrupted during ["), std::string::npos) << err;
  EXPECT_NE(err.find("holds what finished -- continue with the same command and --resume"), std::string::npos) << err;
  const Report interrupted = readReport(report.string());
  EXPECT_FALSE(interrupted.complete);
  EXPECT_TRUE(withStatus(interrupted, CandidateStatus::Measured).empty());
  EXPECT_TRUE(withStatus(interrupted, CandidateStatus::Failed).empty()) << "an interrupted candidate is not a failure";
}

TEST_F(SweepE2E, MalformedInputsExitTwoAndCreateNothing) {
  const fs::path malformed = dir_ / "malformed.json";
  std::ofstream(malformed) << "{\"schema\": \"pipeprof.profile/v1\", \"layers\": [";
  const fs::path report = dir_ / "sub" / "report.json";
  const std::string base = "sweep --batch 8 --steps 1 -o " + quote(report.string());
  const std::vector<std::string> cases = {
      "--model mlp --chunks 1,x",
      "--model mlp --chunks 0,2",
      "--model no_such_model",
      "--model mlp --profile " + quote(malformed.string()),
      "--model mlp --device-memory 12XB",
      "--model mlp --measure top:0",
      "--model mlp --checkpoint sometimes",
      "--model mlp --calibration-budget -1",
      "--model mlp --calibration-rounds -1",
      "--model mlp --time 600",
      "--model mlp --time 0s",
      "--model mlp --time soon",
      "--model mlp --rounds 0",
      "--model mlp --balances 1,1,1",
      "--model mlp --devices cpu,gpu",
      "--model mlp --steps 0",
      "--model mlp --no-such-flag",
      "--model mlp --schedules gpipe,zigzag",
      "--model mlp --stages-per-device 0,2",
      "--model mlp --schedules interleaved --stages-per-device 1",
      "--model mlp --balances 7,8 --schedules interleaved",
      "--model mlp --procs 0",
      "--model mlp --procs 3",
  };
  for (const std::string& extra : cases) {
    const ProcessResult run = pipeprof(base + " " + extra);
    EXPECT_EQ(run.code, 2) << extra << "\n" << run.err;
    EXPECT_FALSE(run.err.empty()) << extra;
    EXPECT_TRUE(run.out.empty()) << extra << ": " << run.out;
    EXPECT_FALSE(fs::exists(report.parent_path())) << extra << " created " << report.parent_path();
  }
  const ProcessResult compare = pipeprof("compare " + quote(malformed.string()));
  EXPECT_EQ(compare.code, 2) << compare.err;
  EXPECT_EQ(pipeprof("compare " + quote((dir_ / "missing.json").string())).code, 2);
}

TEST_F(SweepE2E, CpuBindCoresRunsTheWorkersOnCpusOfTheirOwnAndTheReportSaysSo) {
  const fs::path bound = dir_ / "bound.json";
  const ProcessResult run = pipeprof(tinySweep(bound.string(), "top:2") + " --cpu-bind cores");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(readJsonFile(bound.string())["environment"]["cpu_binding"], "cores");
  const fs::path plain = dir_ / "plain.json";
  ASSERT_EQ(pipeprof(tinySweep(plain.string(), "none")).code, 0);
  EXPECT_EQ(readJsonFile(plain.string())["environment"]["cpu_binding"], "none") << "threads: unbound by default";

  const ProcessResult bad = pipeprof(tinySweep((dir_ / "bad.json").string(), "none") + " --cpu-bind numa");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--cpu-bind: unknown CPU binding 'numa': expected cores or none"), std::string::npos)
      << bad.err;
}

TEST_F(SweepE2E, ResumeOfAnotherSweepIsRefused) {
  const fs::path report = dir_ / "report.json";
  ASSERT_EQ(pipeprof(tinySweep(report.string(), "none")).code, 0);
  const std::string before = slurp(report);
  const ProcessResult run = pipeprof("sweep --model mlp --width 16 --depth 2 --devices cpu,cpu --batch 4 --chunks 1,2 "
                                     "--measure none -o " +
                                     quote(report.string()) + " --resume");
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("batch 8 there, 4 here"), std::string::npos) << run.err;
  EXPECT_EQ(slurp(report), before);
}

TEST_F(SweepE2E, ACachedProfileIsReusedAndOneFromAnotherEnvironmentRefused) {
  const fs::path profile = dir_ / "cache" / "profile.json";
  const fs::path first = dir_ / "first.json";
  const ProcessResult written = pipeprof(tinySweep(first.string(), "none") + " --profile " + quote(profile.string()));
  ASSERT_EQ(written.code, 0) << written.err;
  ASSERT_TRUE(fs::is_regular_file(profile));
  EXPECT_EQ(countLines(written.err, "profiling "), 1u);

  const fs::path second = dir_ / "second.json";
  const ProcessResult reused = pipeprof(tinySweep(second.string(), "none") + " --profile " + quote(profile.string()));
  ASSERT_EQ(reused.code, 0) << reused.err;
  EXPECT_EQ(countLines(reused.err, "profiling "), 0u) << reused.err;

  const fs::path third = dir_ / "third.json";
  const ProcessResult threads =
      pipeprof(tinySweep(third.string(), "none") + " --threads 3 --profile " + quote(profile.string()));
  EXPECT_EQ(threads.code, 2) << threads.err;
  EXPECT_NE(threads.err.find("intra-op thread"), std::string::npos) << threads.err;
  EXPECT_FALSE(fs::exists(third));

  nlohmann::json edited = readJsonFile(profile.string());
  edited["environment"]["torch_version"] = "0.0.1";
  const fs::path foreign = dir_ / "foreign.json";
  std::ofstream(foreign) << edited.dump();
  const ProcessResult version = pipeprof(tinySweep(third.string(), "none") + " --profile " + quote(foreign.string()));
  EXPECT_EQ(version.code, 2) << version.err;
  EXPECT_NE(version.err.find("LibTorch 0.0.1"), std::string::npos) << version.err;
  EXPECT_FALSE(fs::exists(third));
}

TEST_F(SweepE2E, JsonPrintsTheReportOnStdout) {
  const fs::path report = dir_ / "report.json";
  const ProcessResult run = pipeprof(tinySweep(report.string(), "top:1") + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const Report printed = reportFromJson(nlohmann::json::parse(run.out), "stdout");
  EXPECT_TRUE(printed.complete);
  EXPECT_EQ(printed.candidates.size(), readReport(report.string()).candidates.size());
}

TEST_F(SweepE2E, ModelsListsTheZooAsJson) {
  const ProcessResult run = pipeprof("models --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json list = nlohmann::json::parse(run.out);
  ASSERT_TRUE(list.is_array());
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0]["name"], "mlp");
  for (const nlohmann::json& model : list) {
    EXPECT_TRUE(model["name"].is_string());
    EXPECT_GT(model["layers"].get<std::int64_t>(), 1) << model.dump();
    EXPECT_GT(model["param_bytes"].get<std::int64_t>(), 0) << model.dump();
  }
}

TEST_F(SweepE2E, HelpShowsExamples) {
  for (const std::string command : {"--help", "sweep --help", "compare --help", "explain --help", "models --help"}) {
    const ProcessResult run = pipeprof(command);
    EXPECT_EQ(run.code, 0) << command;
    EXPECT_NE(run.out.find("Examples:"), std::string::npos) << command << "\n" << run.out;
  }
}

}  // namespace
}  // namespace pipeprof
