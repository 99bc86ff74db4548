// Tests for report.cpp: errors per candidate, the suggestion, exact JSON round trips and validation.
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/report.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>

namespace pipeprof {
namespace {

using ::testing::StrEq;
using ::testing::ThrowsMessage;

CandidateResult result(std::vector<std::int64_t> balance, std::int64_t chunks, std::int64_t rank, TimeNs predictedNs,
                       std::optional<double> measuredSamplesPerS) {
  CandidateResult item;
  item.candidate.balance = std::move(balance);
  item.candidate.chunks = chunks;
  item.candidate.batch = 8;
  item.prediction.iterationNs = predictedNs;
  item.prediction.samplesPerS = 8e9 / static_cast<double>(predictedNs);
  item.prediction.bubbleFraction = 0.25;
  item.prediction.busyNs = std::vector<TimeNs>(item.candidate.balance.size(), predictedNs / 2);
  item.prediction.peakBytes = std::vector<Bytes>(item.candidate.balance.size(), 1000);
  item.prediction.peakOp = std::vector<std::string>(item.candidate.balance.size(), "forward(1,0)");
  item.predictedRank = rank;
  if (measuredSamplesPerS) {
    item.status = CandidateStatus::Measured;
    Measurement measurement;
    measurement.warmupSteps = 1;
    measurement.stepNsMedian = static_cast<TimeNs>(8e9 / *measuredSamplesPerS);
    measurement.stepNs = {measurement.stepNsMedian - 5, measurement.stepNsMedian, measurement.stepNsMedian + 9};
    measurement.stepNsMin = measurement.stepNsMedian - 5;
    measurement.stepNsMax = measurement.stepNsMedian + 9;
    measurement.samplesPerS = *measuredSamplesPerS;
    measurement.peakBytes = std::vector<Bytes>(item.candidate.balance.size(), 800);
    measurement.tracePath = "traces/c.json";
    item.measurement = measurement;
  } else {
    item.notMeasuredReason = "not in top 2";
  }
  return item;
}

Report exampleReport() {
  Report report;
  OptimizerSpec momentum;
  momentum.kind = OptimizerKind::Momentum;
  report.environment = {"mlp_tiny", 8, {"cpu", "cpu"}, 2, "1.13.1", "abc123", "2026-11-22T03:00:00Z", Precision::Bf16,
                        momentum,   ""};
  report.profilePath = "profile.json";
  Profile profile;
  profile.inputBytesPerSample = 16;
  LayerProfile layer;
  layer.name = "fc";
  layer.paramBytes = 64;
  layer.gradBytes = 64;
  CostSample cost;
  cost.microBatch = 1;
  cost.forwardNs = 10;
  layer.costs = {cost};
  profile.layers = {layer, layer};
  report.profile = profile;
  report.cluster = Cluster::uniform(2, 1 << 20, 1e9, 100, "cpu");
  report.calibration = {{"schema", "pipeprof.calibration/v1"}, {"device_speeds", {1.0, 0.9}}};
  report.calibrationDrift = {{"factor", 1.1}, {"references", nlohmann::json::array()}};
  report.processLayout = {{"procs", 2}, {"transport", "gloo"}};
  report.candidates = {result({1, 1}, 2, 1, 1000, 6e6), result({1, 1}, 4, 2, 1100, 8e6),
                       result({1, 1}, 8, 3, 1300, std::nullopt), result({2}, 1, 0, 900, std::nullopt)};
  report.candidates[1].predictedAnalysis = {{"bubble", 0.5}};
  Prediction beforeDrift = report.candidates[1].prediction;  // the drift factor 1.1 undone
  beforeDrift.iterationNs = 1000;
  beforeDrift.samplesPerS = 8e6;
  beforeDrift.busyNs = {500, 500};
  report.candidates[1].predictionBeforeDrift = beforeDrift;
  report.candidates[1].measuredAnalysis = {{"bubble", 0.4}};
  StepBreakdown breakdown;
  breakdown.source = "measured";
  breakdown.steps = 3;
  breakdown.devices.resize(2);
  breakdown.devices[1].device = 1;
  breakdown.devices[1].traceDevice = "cpu:1";
  breakdown.devices[1].at(StepCategory::Forward) = 400;
  breakdown.devices[1].at(StepCategory::Bubble) = 100;
  report.candidates[1].measuredBreakdown = breakdown;
  report.candidates[3].prediction.fits = false;
  report.candidates[3].prediction.overflowDevices = {0};
  report.candidates[3].notMeasuredReason = "predicted not to fit";
  CandidateResult failed = result({1, 1}, 1, 4, 2000, std::nullopt);
  failed.status = CandidateStatus::Failed;
  failed.error = "out of memory";
  report.candidates.push_back(failed);
  report.updateSuggestion();
  report.complete = true;
  return report;
}

TEST(CandidateResult, ErrorsAgainstMeasurement) {
  CandidateResult measured = result({1, 1}, 2, 1, 1100, 8e6);  // measured median 1000 ns
  ASSERT_TRUE(measured.stepTimeErrorPct().has_value());
  EXPECT_DOUBLE_EQ(*measured.stepTimeErrorPct(), 10.0);
  measured.prediction.peakBytes = {900, 1200};
  measured.measurement->peakBytes = {1000, 700};
  EXPECT_DOUBLE_EQ(*measured.peakBytesErrorPct(), 20.0);  // max 1200 against max 1000
  EXPECT_FALSE(measured.stepTimeErrorBeforeDriftPct().has_value());
  measured.predictionBeforeDrift = measured.prediction;
  measured.predictionBeforeDrift->iterationNs = 950;
  EXPECT_DOUBLE_EQ(*measured.stepTimeErrorBeforeDriftPct(), -5.0);
  CandidateResult predicted = result({1, 1}, 2, 1, 1100, std::nullopt);
  EXPECT_FALSE(predicted.stepTimeErrorPct().has_value());
  EXPECT_FALSE(predicted.peakBytesErrorPct().has_value());
  EXPECT_EQ(candidateStatusName(CandidateStatus::Failed), "failed");
}

TEST(Report, SuggestionPicksBestMeasuredAndRankOne) {
  Report report = exampleReport();
  EXPECT_EQ(report.suggestion.bestMeasured, 1u);
  EXPECT_EQ(report.suggestion.bestPredicted, 0u);
  EXPECT_FALSE(report.suggestion.agree);
  report.candidates[0].measurement->samplesPerS = 9e6;
  report.updateSuggestion();
  EXPECT_EQ(report.suggestion.bestMeasured, 0u);
  EXPECT_TRUE(report.suggestion.agree);
  Report empty;
  empty.updateSuggestion();
  EXPECT_FALSE(empty.suggestion.bestMeasured.has_value());
  EXPECT_FALSE(empty.suggestion.bestPredicted.has_value());
  EXPECT_FALSE(empty.suggestion.agree);
}

TEST(Measurement, RoundsPoolTheirStepsAndKeepTheLargestPeaks) {
  Measurement measurement;
  measurement.addRound({30, 10, 20}, {100, 700}, 8);
  EXPECT_EQ(measurement.stepNsMedian, 20);
  measurement.addRound({50, 40}, {300, 200}, 8);
  EXPECT_EQ(measurement.stepNs, (std::vector<TimeNs>{30, 10, 20, 50, 40}));
  EXPECT_EQ(measurement.stepNsMedian, 30);
  EXPECT_EQ(measurement.stepNsMin, 10);
  EXPECT_EQ(measurement.stepNsMax, 50);
  EXPECT_DOUBLE_EQ(measurement.samplesPerS, 8e9 / 30);
  EXPECT_EQ(measurement.peakBytes, (std::vector<Bytes>{300, 700}));
  measurement.addRound({60}, {}, 8);
  EXPECT_EQ(measurement.stepNsMedian, 35) << "an even count takes the mean of the middle two";
}

TEST(Measurement, KeepsEachRoundsStepsAndStartAndTellsWhetherTheRoundsAgree) {
  Measurement measurement;
  measurement.addRound({100, 104, 102}, {}, 8, 12.5);
  EXPECT_EQ(measurement.roundMediansNs(), (std::vector<TimeNs>{102}));
  EXPECT_DOUBLE_EQ(measurement.roundSpread(), 0.0) << "one round cannot disagree with itself";
  measurement.addRound({110, 108}, {}, 8, 20.0);
  EXPECT_EQ(measurement.roundSteps, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(measurement.roundStartS, (std::vector<double>{12.5, 20.0}));
  EXPECT_EQ(measurement.roundMediansNs(), (std::vector<TimeNs>{102, 109}));
  EXPECT_DOUBLE_EQ(measurement.roundSpread(), 109.0 / 102.0 - 1.0);
  EXPECT_TRUE(measurement.roundsAgree()) << "6.9% apart, within kRoundsAgreeSpread";
  measurement.addRound({153, 150, 151}, {}, 8, 31.0);
  EXPECT_DOUBLE_EQ(measurement.roundSpread(), 151.0 / 102.0 - 1.0);
  EXPECT_FALSE(measurement.roundsAgree()) << "a round 48% slower than another";
}

TEST(Measurement, KeepsEachStepsCpuWaitWhileEveryRoundHasThem) {
  Measurement measurement;
  measurement.addRound({100, 100}, {}, 8, 1.0, {2, 8});
  measurement.addRound({200, 200}, {}, 8, 2.0, {60, 100});
  EXPECT_EQ(measurement.stepCpuWaitNs, (std::vector<TimeNs>{2, 8, 60, 100}));
  const std::vector<std::optional<double>> waits = measurement.roundCpuWait();
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_DOUBLE_EQ(*waits[0], 10.0 / 200.0);
  EXPECT_DOUBLE_EQ(*waits[1], 160.0 / 400.0);
  measurement.addRound({100}, {}, 8, 3.0);
  EXPECT_TRUE(measurement.stepCpuWaitNs.empty()) << "a round without them leaves the measurement without";
  EXPECT_FALSE(measurement.roundCpuWait()[0].has_value());
  EXPECT_FALSE(cpuWaitShare({100, 100}, {5}).has_value()) << "one wait per step, or none";
}

TEST(Measurement, StepsWithoutRoundsAreOneRound) {
  Measurement measurement;  // as `pipeprof run` and older reports have it
  measurement.stepNs = {40, 10, 30};
  EXPECT_EQ(measurement.roundMediansNs(), (std::vector<TimeNs>{30}));
  EXPECT_DOUBLE_EQ(measurement.roundSpread(), 0.0);
  measurement.addRound({90}, {}, 8, 5.0);
  EXPECT_EQ(measurement.roundSteps, (std::vector<std::int64_t>{3, 1})) << "the earlier steps become one round";
  EXPECT_EQ(measurement.roundStartS, (std::vector<double>{0.0, 5.0}));
  EXPECT_EQ(measurement.roundMediansNs(), (std::vector<TimeNs>{30, 90}));
  EXPECT_TRUE(measurement.stepCpuWaitNs.empty());
}

TEST(ReportJson, RoundTripIsExact) {
  Report report = exampleReport();
  report.candidates[1].prediction.latePeakBytes = {1200, 1000};
  nlohmann::json json = toJson(report);
  EXPECT_EQ(json["candidates"][1]["prediction"]["late_peak_bytes"], nlohmann::json::array({1200, 1000}));
  EXPECT_FALSE(json["candidates"][0]["prediction"].contains("late_peak_bytes")) << "written only where computed";
  EXPECT_EQ(json["schema"], "pipeprof.report/v1");
  EXPECT_EQ(json["suggestion"],
            nlohmann::json::parse(R"J({"best_measured": 1, "best_predicted": 0, "agree": false})J"));
  EXPECT_EQ(json["candidates"][1]["measurement"]["samples_per_s"], 8e6);
  EXPECT_EQ(json["candidates"][0]["prediction"]["peak_op"][1], "forward(1,0)");
  EXPECT_EQ(json["candidates"][4]["status"], "failed");
  EXPECT_FALSE(json["candidates"][2].contains("measurement"));
  Report back = reportFromJson(json, "r.json");
  EXPECT_EQ(toJson(back), json);
  EXPECT_EQ(back.candidates[4].error, "out of memory");
  EXPECT_EQ(back.candidates[1].measuredAnalysis["bubble"], 0.4);
  EXPECT_TRUE(back.candidates[0].predictedAnalysis.is_null());
  ASSERT_TRUE(back.candidates[1].measuredBreakdown.has_value());
  EXPECT_EQ(back.candidates[1].measuredBreakdown->devices[1].stepNs(), 500);
  EXPECT_EQ(json["candidates"][1]["measured_breakdown"]["devices"][1]["bubble_ns"], 100);
  EXPECT_FALSE(back.candidates[1].predictedBreakdown.has_value());
  EXPECT_EQ(back.environment.devices, (std::vector<std::string>{"cpu", "cpu"}));
  EXPECT_EQ(json["environment"]["precision"], "bf16");
  EXPECT_EQ(back.environment.precision, Precision::Bf16);
  EXPECT_EQ(back.environment.optimizer.kind, OptimizerKind::Momentum);
  ASSERT_TRUE(back.cluster.has_value());
  EXPECT_EQ(back.cluster->link(0, 1).latencyNs, 100);
  EXPECT_EQ(back.calibration["device_speeds"][1], 0.9);
  EXPECT_EQ(back.calibrationDrift["factor"], 1.1);
  EXPECT_EQ(back.processLayout["procs"], 2);
  EXPECT_EQ(back.processLayout["transport"], "gloo");
  EXPECT_TRUE(back.calibrationError.empty());
  ASSERT_TRUE(back.candidates[1].predictionBeforeDrift.has_value());
  EXPECT_EQ(back.candidates[1].predictionBeforeDrift->iterationNs, 1000);
  EXPECT_EQ(back.candidates[1].predictionBeforeDrift->peakBytes, back.candidates[1].prediction.peakBytes);
  EXPECT_FALSE(back.candidates[0].predictionBeforeDrift.has_value());
  EXPECT_FALSE(json["candidates"][1]["prediction_before_drift"].contains("peak_bytes"));  // drift keeps memory
  EXPECT_EQ(json["candidates"][1]["measurement"]["rounds"], 1);
  EXPECT_EQ(json["candidates"][1]["measurement"]["round_steps"], nlohmann::json::array());

  std::string path = ::testing::TempDir() + "pipeprof_core_report_" + std::to_string(::getpid()) + ".json";
  writeReport(report, path);
  EXPECT_EQ(toJson(readReport(path)), json);
  ::unlink(path.c_str());
}

TEST(ReportJson, KeepsTheCpuBindingOfItsMeasuredRunsWhereItIsKnown) {
  Report report = exampleReport();
  EXPECT_FALSE(toJson(report)["environment"].contains("cpu_binding")) << "older reports: not known";
  report.environment.cpuBinding = "cores";
  const nlohmann::json json = toJson(report);
  EXPECT_EQ(json["environment"]["cpu_binding"], "cores");
  EXPECT_EQ(reportFromJson(json, "r.json").environment.cpuBinding, "cores");
}

TEST(ReportJson, KeepsTheMachinesSlowdownAndTheRunOffsRoundsWhereTheSweepHadThem) {
  Report report = exampleReport();
  const nlohmann::json plain = toJson(report)["candidates"][1]["measurement"];
  EXPECT_FALSE(plain.contains("machine_slowdown"));
  EXPECT_FALSE(plain.contains("run_off_rounds"));
  report.candidates[1].measurement->machineSlowdown = 1.125;
  report.candidates[1].measurement->runOffRounds = 1;
  const nlohmann::json json = toJson(report);
  EXPECT_EQ(json["candidates"][1]["measurement"]["machine_slowdown"], 1.125);
  EXPECT_EQ(json["candidates"][1]["measurement"]["run_off_rounds"], 1);
  const Report back = reportFromJson(json, "r.json");
  EXPECT_EQ(back.candidates[1].measurement->machineSlowdown, 1.125);
  EXPECT_EQ(back.candidates[1].measurement->runOffRounds, 1);
  EXPECT_FALSE(back.candidates[0].measurement->machineSlowdown.has_value());
  EXPECT_EQ(back.candidates[0].measurement->runOffRounds, 0);
}

TEST(ReportJson, ACalibrationLeftPendingIsWrittenOnlyThen) {
  Report report = exampleReport();
  EXPECT_FALSE(toJson(report).contains("calibration_pending"));
  report.calibrationPending = true;
  const nlohmann::json json = toJson(report);
  EXPECT_EQ(json["calibration_pending"], true);
  EXPECT_TRUE(reportFromJson(json, "r.json").calibrationPending);
}

TEST(ReportJson, InterleavedCandidatesHaveOneEntryPerPipelineDevice) {
  Report report = exampleReport();
  CandidateResult interleaved = result({1, 1, 1, 1}, 4, 3, 900, 7e6);
  interleaved.candidate.schedule = ScheduleKind::Interleaved;
  interleaved.candidate.stagesPerDevice = 2;
  for (auto* perDevice : {&interleaved.prediction.peakBytes, &interleaved.measurement->peakBytes}) perDevice->resize(2);
  interleaved.prediction.busyNs.resize(2);
  interleaved.prediction.peakOp.resize(2);
  report.candidates.push_back(interleaved);
  nlohmann::json json = toJson(report);
  EXPECT_EQ(json["candidates"][5]["candidate"]["stages_per_device"], 2);
  Report back = reportFromJson(json, "r.json");
  EXPECT_EQ(back.candidates[5].candidate, interleaved.candidate);
  EXPECT_EQ(back.candidates[5].prediction.peakBytes.size(), 2u);
  json["candidates"][5]["prediction"]["busy_ns"] = {1, 2, 3, 4};
  EXPECT_THAT([&] { reportFromJson(json, "r.json"); },
              ThrowsMessage<FormatError>(StrEq(
                  "r.json: $.candidates[5].prediction.busy_ns: expected one entry per pipeline device (2), got 4")));
}

std::string reportErrorAfter(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json json = toJson(exampleReport());
  edit(json);
  try {
    reportFromJson(json, "r.json");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ReportJson, RejectsMalformedInputNamingThePlace) {
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["schema"] = "pipeprof.report/v0"; }),
            "r.json: $.schema: expected schema 'pipeprof.report/v1', got 'pipeprof.report/v0'");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][1]["prediction"]["iteration_ns"] = -5; }),
            "r.json: $.candidates[1].prediction.iteration_ns: expected a non-negative integer, got -5");
  EXPECT_EQ(reportErrorAfter([](auto& j) {
              j["candidates"][1]["prediction"]["peak_bytes"] = {1, 2, 3};
            }),
            "r.json: $.candidates[1].prediction.peak_bytes: expected one entry per pipeline device (2), got 3");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][1]["prediction"]["late_peak_bytes"] = {1}; }),
            "r.json: $.candidates[1].prediction.late_peak_bytes: expected one entry per pipeline device (2), got 1");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][1]["prediction"]["bubble_fraction"] = 1.5; }),
            "r.json: $.candidates[1].prediction.bubble_fraction: expected a fraction between 0 and 1, got 1.5");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["status"] = "skipped"; }),
            "r.json: $.candidates[0].status: expected one of predicted, measured, failed, got 'skipped'");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0].erase("measurement"); }),
            "r.json: $.candidates[0]: missing required field 'measurement' (status is measured)");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["step_ns_min"] = 1e9; }),
            "r.json: $.candidates[0].measurement.step_ns_min: expected a non-negative integer, got 1000000000.0");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["step_ns_min"] = 999999999; }),
            "r.json: $.candidates[0].measurement.step_ns_median: expected step_ns_min <= step_ns_median <= "
            "step_ns_max, got 999999999, 1333, 1342");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["rounds"] = 0; }),
            "r.json: $.candidates[0].measurement.rounds: expected at least 1 round, got 0");
  EXPECT_EQ(reportErrorAfter([](auto& j) {
              j["candidates"][0]["measurement"]["round_steps"] = {2, 2};
            }),
            "r.json: $.candidates[0].measurement.round_steps: expected round step counts summing to the 3 steps of "
            "step_ns, got 4");
  EXPECT_EQ(reportErrorAfter([](auto& j) {
              j["candidates"][0]["measurement"]["round_steps"] = {2, 1};
              j["candidates"][0]["measurement"]["round_start_s"] = {3.5};
            }),
            "r.json: $.candidates[0].measurement.round_start_s: expected one start per round of round_steps (2), got "
            "1");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["machine_slowdown"] = 0.0; }),
            "r.json: $.candidates[0].measurement.machine_slowdown: expected a positive ratio");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["run_off_rounds"] = 2; }),
            "r.json: $.candidates[0].measurement.run_off_rounds: expected at most the measurement's 1 rounds, got 2");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][0]["measurement"]["step_cpu_wait_ns"] = {5}; }),
            "r.json: $.candidates[0].measurement.step_cpu_wait_ns: expected one entry per step of step_ns (3), got 1");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][2]["candidate"]["chunks"] = 0; }),
            "r.json: $.candidates[2].candidate.chunks: expected a positive integer, got 0");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["candidates"][2].erase("predicted_rank"); }),
            "r.json: $.candidates[2]: missing required field 'predicted_rank'");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["suggestion"]["best_measured"] = 5; }),
            "r.json: $.suggestion.best_measured: expected a candidate index below 5, got 5");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["profile"]["layers"][1]["costs"][0]["forward_ns"] = -1; }),
            "r.json: $.profile.layers[1].costs[0].forward_ns: expected a non-negative integer, got -1");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["cluster"]["schema"] = "x"; }),
            "r.json: $.cluster.schema: expected schema 'pipeprof.cluster/v1', got 'x'");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["calibration"] = 3; }),
            "r.json: $.calibration: expected an object, got 3");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["environment"].erase("model"); }),
            "r.json: $.environment: missing required field 'model'");
  EXPECT_EQ(reportErrorAfter([](auto& j) { j["complete"] = "yes"; }),
            "r.json: $.complete: expected true or false, got \"yes\"");
}

TEST(ReportJson, ReadReportNamesTheFile) {
  EXPECT_THAT(
      [] { readReport("/nonexistent/report.json"); },
      ThrowsMessage<FormatError>(StrEq("/nonexistent/report.json: cannot open file: No such file or directory")));
}

}  // namespace
}  // namespace pipeprof
