// Tests of simulator/calibration: its application to a profile and cluster, and its file format.
#include <pipeprof/simulator/calibration.h>

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/simulator/calibration_fit.h>
#include <pipeprof/simulator/simulator.h>

#include "two_layer_profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

namespace pipeprof {
namespace {

using test::twoLayerProfile;

Calibration sampleCalibration() {
  Calibration calibration;
  calibration.scales[16] = {1.25, 1.5};
  calibration.scales[32] = {1.0, 0.75};
  calibration.stepOverheadNs = {{1, 1000}, {2, 1500}};
  calibration.deviceSpeeds = {1.25, 0.8};
  calibration.provenance.model = "mlp";
  calibration.provenance.batch = 64;
  calibration.provenance.devices = {"cpu", "cpu"};
  calibration.provenance.threads = 1;
  calibration.provenance.rounds = 3;
  for (const auto& [schedule, chunks, medianNs] :
       {std::tuple{"gpipe", 1, 5000}, {"gpipe", 2, 6500}, {"1f1b", 2, 6000}}) {
    CalibrationReference reference;
    reference.shape.schedule = schedule;
    reference.chunks = chunks;
    reference.balance = {4, 4};
    reference.steps = 12;
    reference.stepNsMedian = medianNs;
    calibration.provenance.references.push_back(reference);
  }
  calibration.byShape[{"1f1b", Checkpoint::Never}].scales[16] = {1.0, 1.25};
  calibration.byShape[{"1f1b", Checkpoint::Never}].stepOverheadNs = {{2, 900}};
  return calibration;
}

/// The FormatError message of reading `json`, or "" when it loads.
std::string formatError(const nlohmann::json& json) {
  try {
    calibrationFromJson(json, "cal.json");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "";
}

/// Checks a cold-op scale of micro-batch 16 set to `value` (micro-batch 32 left at 1): it is
/// written under `jsonKey` (and left out at 1), read back, described by a calibration line
/// containing `description`, and handed to the profile's `profileScales` by calibratedProfile.
void expectColdOpScaleRoundTripsAndIsDescribed(double MicroBatchScale::*scale, const char* jsonKey, double value,
                                               const std::string& description,
                                               std::map<std::int64_t, double> Profile::*profileScales) {
  Calibration calibration = sampleCalibration();
  calibration.scales[16].*scale = value;
  const nlohmann::json json = toJson(calibration);
  EXPECT_EQ(json["micro_batch_scales"][0][jsonKey], value);
  EXPECT_FALSE(json["micro_batch_scales"][1].contains(jsonKey));  // 1: not written
  EXPECT_EQ(calibrationFromJson(json, "cal.json").scales.at(16).*scale, value);
  EXPECT_EQ(calibrationFromJson(json, "cal.json").scales.at(32).*scale, 1.0);
  EXPECT_NE(describeCalibration(calibration).find(description), std::string::npos) << describeCalibration(calibration);
  EXPECT_EQ(calibratedProfile(Profile{}, calibration).*profileScales, (std::map<std::int64_t, double>{{16, value}}));
}

TEST(Calibration, StepOverheadFallsBackToTheNearestMeasuredChunkCount) {
  Calibration calibration;
  EXPECT_EQ(calibration.stepOverheadNsFor(4), 0);
  EXPECT_TRUE(calibration.empty());
  calibration.stepOverheadNs = {{2, 200}, {8, 800}};
  EXPECT_FALSE(calibration.empty());
  EXPECT_EQ(calibration.stepOverheadNsFor(1), 200);
  EXPECT_EQ(calibration.stepOverheadNsFor(2), 200);
  EXPECT_EQ(calibration.stepOverheadNsFor(4), 200);
  EXPECT_EQ(calibration.stepOverheadNsFor(8), 800);
  EXPECT_EQ(calibration.stepOverheadNsFor(16), 800);
}

TEST(Calibration, CalibratedProfileScalesOnlyTheCalibratedSizes) {
  Calibration calibration;
  calibration.scales[4] = {1.5, 0.5};
  const Profile profile = calibratedProfile(twoLayerProfile(), calibration);
  for (const LayerProfile& layer : profile.layers) {
    EXPECT_EQ(layer.costAt(4).forwardNs, 6);
    EXPECT_EQ(layer.costAt(4).backwardNs, 4);
    EXPECT_EQ(layer.costAt(8).forwardNs, 8);
    EXPECT_EQ(layer.costAt(8).backwardNs, 16);
  }
}

TEST(Calibration, TheLossScaleScalesTheForwardOfTheLossAtTheCalibratedSizes) {
  Profile profile = twoLayerProfile();
  for (std::int64_t size : {4, 8}) {
    CostSample loss;
    loss.microBatch = size;
    loss.forwardNs = 10;
    loss.backwardNs = 20;
    profile.loss.costs.push_back(loss);
  }
  Calibration calibration;
  calibration.scales[4] = {1.0, 1.0, 6.0};
  const Profile calibrated = calibratedProfile(profile, calibration);
  EXPECT_EQ(calibrated.loss.costAt(4).forwardNs, 60);
  EXPECT_EQ(calibrated.loss.costAt(4).backwardNs, 20);  // its backward runs inside the last stage's B or I
  EXPECT_EQ(calibrated.loss.costAt(8).forwardNs, 10);
  EXPECT_EQ(calibrated.layers[0].costAt(4).forwardNs, 4);
}

TEST(Calibration, CalibratedClusterTakesTheSpeedsOfTheDevicesItHas) {
  Calibration calibration;
  calibration.deviceSpeeds = {1.25, 0.8, 2.0};
  const Cluster cluster = calibratedCluster(Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu"), calibration);
  ASSERT_EQ(cluster.devices.size(), 2U);
  EXPECT_EQ(cluster.devices[0].relativeSpeed, 1.25);
  EXPECT_EQ(cluster.devices[1].relativeSpeed, 0.8);
}

TEST(Calibration, MessageLatencyReplacesTheLatencyOfCostlyLinksWithinAHost) {
  Calibration calibration;
  calibration.messageLatencyNs = 90'000;
  // Three devices on two hosts: a and b share one, c is alone; the free link stays free.
  Cluster cluster = Cluster::withHosts({"a", "a", "b"}, std::nullopt, {40'000, 3e9}, {200'000, 1e9}, "cpu");
  cluster.links[1][0] = Link{};
  const Cluster calibrated = calibratedCluster(cluster, calibration);
  EXPECT_EQ(calibrated.link(0, 1).latencyNs, 90'000);
  EXPECT_EQ(calibrated.link(0, 1).bandwidthBytesPerS, 3e9);
  EXPECT_EQ(calibrated.link(1, 0).latencyNs, 0);
  EXPECT_EQ(calibrated.link(1, 0).bandwidthBytesPerS, 0.0);
  EXPECT_EQ(calibrated.link(0, 2).latencyNs, 200'000);
  EXPECT_EQ(calibrated.link(2, 1).latencyNs, 200'000);
  // A cluster without hosts is one host.
  const Cluster uniform = calibratedCluster(Cluster::uniform(2, std::nullopt, 1e9, 5'000, "cpu"), calibration);
  EXPECT_EQ(uniform.link(0, 1).latencyNs, 90'000);
  EXPECT_EQ(uniform.link(1, 0).latencyNs, 90'000);
  EXPECT_EQ(calibratedCluster(cluster, Calibration{}).link(0, 1).latencyNs, 40'000);
}

/// A calibration with only `field` set to `ns`: it corrects something, writes it as `key` and
/// reads it back, leaves it out (and reads none back) when unset, refuses it negative, and its
/// description says `described`. Returns it.
Calibration expectTimeRoundTrips(std::optional<TimeNs> Calibration::*field, const char* key, TimeNs ns,
                                 const std::string& described) {
  Calibration calibration;
  EXPECT_TRUE(calibration.empty());
  calibration.*field = ns;
  EXPECT_FALSE(calibration.empty());
  const nlohmann::json json = toJson(calibration);
  EXPECT_EQ(json[key], ns);
  EXPECT_EQ(calibrationFromJson(json, "cal.json").*field, ns);
  EXPECT_FALSE(toJson(Calibration{}).contains(key));
  EXPECT_FALSE((calibrationFromJson(toJson(Calibration{}), "cal.json").*field).has_value());
  EXPECT_NE(describeCalibration(calibration).find(described), std::string::npos) << describeCalibration(calibration);
  nlohmann::json negative = json;
  negative[key] = -1;
  EXPECT_THROW(calibrationFromJson(negative, "cal.json"), FormatError);
  return calibration;
}

TEST(Calibration, MessageLatencyRoundTripsAndIsDescribed) {
  expectTimeRoundTrips(&Calibration::messageLatencyNs, "message_latency_ns", 85'000,
                       "; messages between ranks 85.0 us latency");
}

TEST(Calibration, WakeLatencyRoundTripsIsDescribedAndSetsTheClusters) {
  const Calibration calibration = expectTimeRoundTrips(&Calibration::wakeLatencyNs, "wake_latency_ns", 61'000,
                                                       "; a waiting worker wakes 61.0 us after its data");
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu");
  EXPECT_EQ(calibratedCluster(cluster, calibration).wakeLatencyNs, 61'000);
  EXPECT_EQ(calibratedCluster(cluster, Calibration{}).wakeLatencyNs, 0);
}

TEST(Calibration, TheLossColdStartRoundTripsIsDescribedAndSetsTheProfiles) {
  const Calibration calibration = expectTimeRoundTrips(&Calibration::lossColdStartNs, "loss_cold_start_ns", 45'000,
                                                       "; a step's first loss takes 45.0 us more than its later ones");
  // Applied with no scales as well.
  EXPECT_EQ(calibratedProfile(Profile{}, calibration).loss.coldStartNs, 45'000);
  // A shape's own: written per shape, and a shape's calibration takes it.
  Calibration byShape = calibration;
  byShape.lossColdStartByShape[{"1f1b", Checkpoint::Always}] = 30'000;
  const nlohmann::json shapes = toJson(byShape);
  EXPECT_EQ(shapes["loss_cold_starts"][0]["schedule"], "1f1b");
  EXPECT_EQ(shapes["loss_cold_starts"][0]["checkpoint"], "always");
  EXPECT_EQ(shapes["loss_cold_starts"][0]["ns"], 30'000);
  EXPECT_EQ(calibrationFromJson(shapes, "cal.json").lossColdStartByShape, byShape.lossColdStartByShape);
  EXPECT_EQ(byShape.forShape({"1f1b", Checkpoint::Always}).lossColdStartNs, 30'000);
  EXPECT_TRUE(byShape.forShape({"1f1b", Checkpoint::Always}).lossColdStartByShape.empty());
  EXPECT_EQ(byShape.forShape({"1f1b", Checkpoint::Never}).lossColdStartNs, 45'000);
  byShape.lossColdStartByShape[{"gpipe", Checkpoint::Never}] = 60'000;
  EXPECT_NE(
      describeCalibration(byShape).find(
          "; a step's first loss takes 30.0 us-60.0 us more than its later ones, by schedule (45.0 us for the others)"),
      std::string::npos)
      << describeCalibration(byShape);
  nlohmann::json twice = shapes;
  twice["loss_cold_starts"].push_back(twice["loss_cold_starts"][0]);
  EXPECT_THROW(calibrationFromJson(twice, "cal.json"), FormatError);
  EXPECT_EQ(calibratedProfile(Profile{}, Calibration{}).loss.coldStartNs, 0);
}

TEST(Calibration, FileRoundTripAndDescription) {
  const Calibration calibration = sampleCalibration();
  const nlohmann::json json = toJson(calibration);
  EXPECT_EQ(json["schema"], kCalibrationSchema);
  EXPECT_EQ(json["micro_batch_scales"][0]["micro_batch"], 16);
  EXPECT_EQ(json["step_overhead_ns"][1]["ns"], 1500);
  EXPECT_EQ(json["measured"]["references"][1]["step_ns_median"], 6500);
  const std::string path = (std::filesystem::temp_directory_path() / "pipeprof_test_calibration.json").string();
  writeCalibration(calibration, path);
  EXPECT_EQ(toJson(readCalibration(path)), json);
  std::remove(path.c_str());
  EXPECT_EQ(describeCalibration(calibration),
            "calibration: layers chained in the pipeline take 1.00-1.25 (forward) and 0.75-1.50 (backward) x their "
            "profiled time at micro-batches 16-32; device speeds 1.25, 0.80; step overhead 1.00 us-1.50 us (grad "
            "zeroing, waking the workers, what the simulated ops miss); 1f1b never: scales 1.00-1.00 forward, "
            "1.25-1.25 backward, speeds 1, overhead 900 ns-900 ns");
  EXPECT_EQ(describeCalibration(Calibration{}), "calibration: none (predicting from the raw profile)");
}

TEST(Calibration, LossScalesRoundTripAreDescribedAndDefaultToOne) {
  Calibration calibration = sampleCalibration();
  calibration.scales[16].loss = 5.5;
  calibration.byShape[{"1f1b", Checkpoint::Never}].scales[16].loss = 4.25;
  const nlohmann::json json = toJson(calibration);
  EXPECT_EQ(json["micro_batch_scales"][0]["loss"], 5.5);
  EXPECT_EQ(json["micro_batch_scales"][1]["loss"], 1.0);
  const Calibration read = calibrationFromJson(json, "cal.json");
  EXPECT_EQ(read.scales.at(16).loss, 5.5);
  EXPECT_EQ(read.byShape.at({"1f1b", Checkpoint::Never}).scales.at(16).loss, 4.25);
  EXPECT_EQ(describeCalibration(calibration),
            "calibration: layers chained in the pipeline take 1.00-1.25 (forward) and 0.75-1.50 (backward), the loss "
            "1.00-5.50, x their profiled time at micro-batches 16-32; device speeds 1.25, 0.80; step overhead 1.00 "
            "us-1.50 us (grad zeroing, waking the workers, what the simulated ops miss); 1f1b never: scales 1.00-1.00 "
            "forward, 1.25-1.25 backward, 4.25-4.25 loss, speeds 1, overhead 900 ns-900 ns");

  // A calibration fitted before the loss was has no loss scale: the loss keeps its profiled time.
  nlohmann::json older = toJson(sampleCalibration());
  for (nlohmann::json& scale : older["micro_batch_scales"]) scale.erase("loss");
  EXPECT_EQ(calibrationFromJson(older, "cal.json").scales.at(16).loss, 1.0);
  older["micro_batch_scales"][0]["loss"] = 0;
  EXPECT_EQ(formatError(older), "cal.json: $.micro_batch_scales[0].loss: expected a positive number, got 0");
}

TEST(Calibration, TheStageSwitchScaleRoundTripsIsDescribedAndChargesTheOpsAfterAnotherStagesOp) {
  expectColdOpScaleRoundTripsAndIsDescribed(
      &MicroBatchScale::afterStageSwitch, "after_stage_switch", 1.5,
      "at micro-batches 16-32; an op after another stage's op on its device runs 1.00-1.50x one on a device of "
      "one stage; device speeds",
      &Profile::stageSwitchScales);

  // Four layers of 2 ns forward and 4 backward at micro-batch 2, chunks 4 of batch 8,
  // a layer a stage over two devices: interleaved v2 charges each op that follows another
  // stage's op on its device half its time more, busy time and all; GPipe switches no stage.
  const Profile profile = test::fourLayerProfile();
  Profile switching = profile;
  switching.stageSwitchScales[2] = 1.5;
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu");
  const Candidate interleaved = referenceCandidate(4, 2, 4, 8, ScheduleKind::Interleaved, 2);
  const Schedule schedule = Schedule::build(interleaved.scheduleSpec({}));
  std::vector<TimeNs> extraNs(2, 0);
  for (std::int64_t d = 0; d < 2; ++d) {
    const std::vector<OpIndex>& order = schedule.deviceOrder(d);
    for (std::size_t k = 1; k < order.size(); ++k) {
      const Op& op = schedule.ops()[order[k]];
      if (schedule.ops()[order[k - 1]].j == op.j) continue;
      if (op.kind == OpKind::Forward) extraNs[static_cast<std::size_t>(d)] += 1;   // half of 2
      if (op.kind == OpKind::Backward) extraNs[static_cast<std::size_t>(d)] += 2;  // half of 4 (the loss: 0)
    }
  }
  EXPECT_GT(extraNs[0], 0);
  const Prediction plain = simulate(profile, cluster, interleaved).prediction;
  const Prediction switched = simulate(switching, cluster, interleaved).prediction;
  EXPECT_EQ(switched.busyNs[0] - plain.busyNs[0], extraNs[0]);
  EXPECT_EQ(switched.busyNs[1] - plain.busyNs[1], extraNs[1]);
  EXPECT_GT(switched.iterationNs, plain.iterationNs);
  const Candidate gpipe = referenceCandidate(4, 2, 4, 8);
  EXPECT_EQ(simulate(switching, cluster, gpipe).prediction.iterationNs,
            simulate(profile, cluster, gpipe).prediction.iterationNs);
}

TEST(Calibration, TheFirstInStepScaleRoundTripsIsDescribedAndChargesEachStagesFirstOpOfAKind) {
  expectColdOpScaleRoundTripsAndIsDescribed(
      &MicroBatchScale::firstInStep, "first_in_step", 1.25,
      "at micro-batches 16-32; a stage's first op of a kind in a step runs 1.00-1.25x a later one; device speeds",
      &Profile::firstInStepScales);

  // Four layers of 2 ns forward and 4 backward at micro-batch 2 (x1000), chunks 4 of batch 8,
  // two stages of two layers on two devices, GPipe: each stage's first forward and first
  // backward take a quarter more -- 1 us and 2 us of a stage's 4 and 8. Device 0's busy time
  // grows by 3 us, device 1's likewise, and the step by the forward's 1 us at device 0's fill,
  // device 1's 1 us forward and 2 us backward on the path, and device 0's 2 us backward at the end.
  const Profile profile = test::fourLayerProfileInMicroseconds();
  Profile cold = profile;
  cold.firstInStepScales[2] = 1.25;
  const Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu");
  const Candidate gpipe = referenceCandidate(4, 2, 4, 8);
  const Prediction plain = simulate(profile, cluster, gpipe).prediction;
  const Prediction charged = simulate(cold, cluster, gpipe).prediction;
  EXPECT_EQ(charged.busyNs[0] - plain.busyNs[0], 3000);
  EXPECT_EQ(charged.busyNs[1] - plain.busyNs[1], 3000);
  EXPECT_EQ(charged.iterationNs - plain.iterationNs, 6000);
}

TEST(Calibration, AShapeIsPredictedWithItsOwnCorrectionsElseItsSchedulesInAnotherModeElseTheCalibrations) {
  Calibration calibration = sampleCalibration();
  calibration.messageLatencyNs = 70'000;
  calibration.byShape[{"1f1b", Checkpoint::Always}].stepOverheadNs = {{2, 400}};
  const Calibration always = calibration.forShape({"1f1b", Checkpoint::Always});
  EXPECT_TRUE(always.byShape.empty());
  EXPECT_TRUE(always.scales.empty());  // its own corrections whole, not merged
  EXPECT_EQ(always.stepOverheadNsFor(2), 400);
  EXPECT_EQ(always.messageLatencyNs, 70'000);
  EXPECT_EQ(always.provenance.references.size(), 3U);
  const Calibration exceptLast = calibration.forShape({"1f1b", Checkpoint::ExceptLast});  // 1f1b's without checkpoints
  EXPECT_EQ(exceptLast.scales.at(16).backward, 1.25);
  EXPECT_TRUE(exceptLast.deviceSpeeds.empty());
  EXPECT_EQ(exceptLast.stepOverheadNsFor(4), 900);
  const Calibration interleaved = calibration.forShape({"interleaved v2", Checkpoint::Always});
  EXPECT_TRUE(interleaved.byShape.empty());
  EXPECT_EQ(interleaved.scales.at(16).forward, 1.25);
  EXPECT_EQ(interleaved.deviceSpeeds, (std::vector<double>{1.25, 0.8}));
  EXPECT_EQ(interleaved.stepOverheadNsFor(2), 1500);
  EXPECT_EQ(&calibration.correctionsFor({"gpipe", Checkpoint::Always}),
            &static_cast<const ScheduleCorrections&>(calibration));
  EXPECT_EQ(calibration.correctingShape({"gpipe", Checkpoint::Always}), nullptr);
  ASSERT_NE(calibration.correctingShape({"1f1b", Checkpoint::ExceptLast}), nullptr);
  EXPECT_EQ(calibration.correctingShape({"1f1b", Checkpoint::ExceptLast})->label(), "1f1b never");
  EXPECT_EQ(ReferenceShape({"interleaved v2", Checkpoint::ExceptLast}).label(), "interleaved v2 except_last");
  // Without its schedule's `never`: its schedule in another mode, except_last before always.
  calibration.byShape[{"zb1p", Checkpoint::Always}] = {};
  EXPECT_EQ(calibration.correctingShape({"zb1p", Checkpoint::ExceptLast})->label(), "zb1p always");
  calibration.byShape[{"zb1p", Checkpoint::ExceptLast}] = {};
  EXPECT_EQ(calibration.correctingShape({"zb1p", Checkpoint::Never})->label(), "zb1p except_last");
  EXPECT_EQ(calibration.correctingShape({"zbv", Checkpoint::Never}), nullptr);

  Calibration onlyShapes;
  onlyShapes.byShape[{"1f1b", Checkpoint::Never}] = {};
  EXPECT_FALSE(onlyShapes.empty());
}

TEST(Calibration, ShapeCorrectionsRoundTrip) {
  const nlohmann::json json = toJson(sampleCalibration());
  ASSERT_EQ(json["shapes"].size(), 1U);
  EXPECT_EQ(json["shapes"][0]["schedule"], "1f1b");
  EXPECT_EQ(json["shapes"][0]["checkpoint"], "never");
  EXPECT_EQ(json["shapes"][0]["micro_batch_scales"][0]["backward"], 1.25);
  EXPECT_EQ(json["shapes"][0]["step_overhead_ns"][0]["ns"], 900);
  EXPECT_EQ(json["measured"]["references"][2]["schedule"], "1f1b");
  EXPECT_EQ(json["measured"]["references"][2]["checkpoint"], "never");
  const Calibration read = calibrationFromJson(json, "cal.json");
  const ReferenceShape oneFOneB{"1f1b", Checkpoint::Never};
  EXPECT_EQ(read.byShape.at(oneFOneB).stepOverheadNs, (std::map<std::int64_t, TimeNs>{{2, 900}}));
  EXPECT_EQ(read.provenance.references[2].shape, oneFOneB);
  EXPECT_FALSE(toJson(Calibration{}).contains("shapes"));
  nlohmann::json older = json;  // a calibration of before shapes: its references were GPipe's, never
  older.erase("shapes");
  older["measured"]["references"][0].erase("schedule");
  older["measured"]["references"][0].erase("checkpoint");
  EXPECT_EQ(calibrationFromJson(older, "cal.json").provenance.references[0].shape, ReferenceShape{});
}

TEST(Calibration, MissingListsAreEmpty) {
  const Calibration calibration = calibrationFromJson({{"schema", kCalibrationSchema}}, "cal.json");
  EXPECT_TRUE(calibration.empty());
  EXPECT_TRUE(calibration.provenance.model.empty());
}

TEST(Calibration, ReaderNamesTheFileThePathAndWhatWasExpected) {
  EXPECT_EQ(formatError({{"schema", "pipeprof.profile/v1"}}),
            "cal.json: $.schema: expected schema 'pipeprof.calibration/v1', got 'pipeprof.profile/v1'");
  nlohmann::json json = toJson(sampleCalibration());
  json["micro_batch_scales"][1]["forward"] = 0;
  EXPECT_EQ(formatError(json), "cal.json: $.micro_batch_scales[1].forward: expected a positive number, got 0");
  json = toJson(sampleCalibration());
  json["micro_batch_scales"][1]["micro_batch"] = 16;
  EXPECT_EQ(formatError(json), "cal.json: $.micro_batch_scales[1].micro_batch: micro-batch 16 given twice");
  json = toJson(sampleCalibration());
  json["device_speeds"][0] = -1.0;
  EXPECT_EQ(formatError(json), "cal.json: $.device_speeds[0]: expected a positive number, got -1.0");
  json = toJson(sampleCalibration());
  json["step_overhead_ns"][0]["ns"] = -5;
  EXPECT_NE(formatError(json).find("cal.json: $.step_overhead_ns[0].ns: expected a non-negative integer"),
            std::string::npos);
  json = toJson(sampleCalibration());
  json["step_overhead_ns"][1]["chunks"] = 1;
  EXPECT_EQ(formatError(json), "cal.json: $.step_overhead_ns[1].chunks: chunk count 1 given twice");
  json = toJson(sampleCalibration());
  json["message_latency_ns"] = -1;
  EXPECT_NE(formatError(json).find("cal.json: $.message_latency_ns: expected a non-negative integer"),
            std::string::npos);
  json = toJson(sampleCalibration());
  json["shapes"][0]["schedule"] = "interleaved v1";
  EXPECT_EQ(
      formatError(json),
      "cal.json: $.shapes[0].schedule: expected a schedule (gpipe, 1f1b, zb1p, zbv, interleaved vN or interleaved-zb "
      "vN), got 'interleaved v1'");
  json = toJson(sampleCalibration());
  json["shapes"][0]["checkpoint"] = "sometimes";
  EXPECT_EQ(formatError(json),
            "cal.json: $.shapes[0].checkpoint: expected always, except_last or never, got 'sometimes'");
  json = toJson(sampleCalibration());
  json["shapes"].push_back(json["shapes"][0]);
  EXPECT_EQ(formatError(json), "cal.json: $.shapes[1]: shape '1f1b never' given twice");
  json = toJson(sampleCalibration());
  json["shapes"][0].erase("schedule");
  EXPECT_NE(formatError(json).find("cal.json: $.shapes[0]"), std::string::npos);
  json = toJson(sampleCalibration());
  json["shapes"][0]["step_overhead_ns"][0]["ns"] = "x";
  EXPECT_NE(formatError(json).find("cal.json: $.shapes[0].step_overhead_ns[0].ns"), std::string::npos);
  json = toJson(sampleCalibration());
  json["measured"]["references"][0]["schedule"] = "zigzag";
  EXPECT_NE(formatError(json).find("cal.json: $.measured.references[0].schedule: expected a schedule"),
            std::string::npos);
  json = toJson(sampleCalibration());
  json["measured"]["devices"] = "cpu";
  EXPECT_NE(formatError(json).find("cal.json: $.measured.devices"), std::string::npos);
}

TEST(Calibration, AReportHoldsItsCalibrationOrTheOverheadsOfAnOlderOne) {
  Report report;
  EXPECT_TRUE(reportCalibration(report, "r.json").empty());
  report.calibration = toJson(sampleCalibration());
  EXPECT_EQ(toJson(reportCalibration(report, "r.json")), report.calibration);
  // Before calibration files: the profile and cluster are already calibrated; the overheads stay.
  report.calibration = nlohmann::json::parse(R"({"chained": {"micro_batch_scales": [{"micro_batch": 4, "forward": 2.0,
      "backward": 2.0}], "device_speeds": [0.9, 1.1], "step_overhead_ns": [{"chunks": 2, "ns": 700}]},
      "drift": {"factor": 1.1, "references": []}})");
  const Calibration legacy = reportCalibration(report, "r.json");
  EXPECT_TRUE(legacy.scales.empty());
  EXPECT_TRUE(legacy.deviceSpeeds.empty());
  EXPECT_EQ(legacy.stepOverheadNs, (std::map<std::int64_t, TimeNs>{{2, 700}}));
  report.calibration = {{"schema", kCalibrationSchema}, {"device_speeds", {0}}};
  try {
    reportCalibration(report, "r.json");
    FAIL() << "a zero speed loaded";
  } catch (const FormatError& error) {
    EXPECT_STREQ(error.what(), "r.json: $.calibration.device_speeds[0]: expected a positive number, got 0");
  }
}

// `--calibration REPORT`: a sweep's report file stands for the calibration its predictions used.
TEST(Calibration, AReportFileReadsAsItsCalibration) {
  const std::string path = (std::filesystem::temp_directory_path() / "pipeprof_test_calibration_report.json").string();
  const auto readWritten = [&](const nlohmann::json& json) {
    writeFileAtomically(path, json.dump());
    return readCalibration(path);
  };
  const auto failure = [&](const nlohmann::json& json) -> std::string {
    try {
      readWritten(json);
    } catch (const FormatError& error) {
      return error.what();
    }
    return "no error";
  };
  nlohmann::json report = {{"schema", kReportSchema}, {"candidates", nlohmann::json::array()}};
  report["calibration"] = toJson(sampleCalibration());
  EXPECT_EQ(toJson(readWritten(report)), report["calibration"]);
  report["calibration"]["device_speeds"] = {0};
  EXPECT_EQ(failure(report), path + ": $.calibration.device_speeds[0]: expected a positive number, got 0");
  report["calibration"] = 3;
  EXPECT_EQ(failure(report), path + ": $.calibration: expected an object, got 3");
  report.erase("calibration");
  EXPECT_NE(failure(report).find(path + ": $.calibration: a sweep report without a calibration (its sweep predicted "
                                        "from the raw profile); give a calibration file from `pipeprof calibrate`"),
            std::string::npos);
  report["calibration_error"] = "every reference pipeline failed";
  EXPECT_NE(failure(report).find("(its calibration failed: every reference pipeline failed)"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pipeprof
