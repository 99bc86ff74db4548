// Tests of tuner/sweep_setup: the devices and model resolved, the config checked, the inputs loaded.
#include <pipeprof/tuner/sweep_setup.h>

#include <pipeprof/core/json_file.h>
#include <pipeprof/runtime/torch_environment.h>
#include <pipeprof/simulator/calibration.h>
#include <pipeprof/tuner/environment_info.h>

#include "support/scratch_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

/// The ConfigError `call` throws, as "field|rest|value", or "" when it throws none.
std::string configError(const std::function<void()>& call) {
  try {
    call();
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), error.field() + error.rest());
    return error.field() + "|" + error.rest() + "|" + error.value();
  }
  return "";
}

std::vector<DeviceDesc> cpus(int count) {
  return std::vector<DeviceDesc>(static_cast<std::size_t>(count), DeviceDesc{});
}

/// mlp of width 8 and depth 2 (3 layers) on two CPUs, one thread.
SweepModel tinyModel() {
  ModelSpec spec;
  spec.name = "mlp";
  spec.options.width = 8;
  spec.options.depth = 2;
  spec.threads = 1;
  return resolveSweepModel(spec, cpus(2), 8);
}

TEST(ResolveSweepModel, CountsTheLayersAndTakesTheDefaults) {
  const SweepModel model = tinyModel();
  EXPECT_EQ(model.layers, 3);
  EXPECT_EQ(model.batch, 8);
  EXPECT_EQ(model.spec.threads, 1);
  ModelSpec spec = model.spec;
  spec.threads = 0;
  const SweepModel defaults = resolveSweepModel(spec, cpus(2));
  EXPECT_EQ(defaults.batch, buildModel(spec).defaultBatch);
  EXPECT_EQ(defaults.spec.threads, sweepThreads(0, 2, hardwareThreads()));
}

TEST(ResolveSweepModel, RefusesDevicesThatCannotRunIt) {
  const ModelSpec spec = tinyModel().spec;
  EXPECT_EQ(configError([&] { resolveSweepModel(spec, {}); }), "devices|: give at least one device, e.g. cpu,cpu|");
  EXPECT_EQ(configError([&] {
              resolveSweepModel(spec, {DeviceDesc::parse("cpu"), DeviceDesc::parse("cuda:0")});
            }),
            "devices| 'cpu,cuda:0': mix of device types; use all cpu or all cuda|");
  EXPECT_EQ(configError([&] { resolveSweepModel(spec, cpus(4)); }),
            "devices|: 4 devices need at least one layer each but model 'mlp' has only 3 layers|");
}

/// A valid config of the tiny model: balances 1,2 and 2,1 under gpipe.
SweepConfig tinyConfig() {
  const SweepModel model = tinyModel();
  SweepConfig config;
  config.model = model.spec;
  config.devices = model.devices;
  config.batch = model.batch;
  config.schedules = {ScheduleKind::GPipe, ScheduleKind::Interleaved};
  config.stagesPerDevice = {1, 2};
  config.enumeration = BalanceEnumeration::Given;
  config.balances = {{1, 2}, {2, 1}};
  config.steps = 4;
  config.rounds = 2;
  return config;
}

TEST(CheckSweepConfig, NamesTheFirstFieldThatCannotRun) {
  EXPECT_EQ(configError([] { checkSweepConfig(tinyConfig(), 3); }), "");
  struct Case {
    std::function<void(SweepConfig&)> change;
    std::string error;
  };
  const Case cases[] = {
      {[](SweepConfig& c) {
         c.balances.push_back({1, 1, 1});
       },
       "balances|: '1,1,1' must have 2 or 4 positive parts (2 devices x the stages per device of the schedules) "
       "summing to 3 (the layers of 'mlp')|1,1,1"},
      {[](SweepConfig& c) {
         c.balances = {{2, 2}};
       },
       "balances|: '2,2' must have 2 or 4 positive parts (2 devices "
       "x the stages per device of the schedules) summing to 3 (the "
       "layers of 'mlp')|2,2"},
      {[](SweepConfig& c) {
         c.balances = {{3, 0}};
       },
       "balances|: '3,0' must have 2 or 4 positive parts (2 devices "
       "x the stages per device of the schedules) summing to 3 (the "
       "layers of 'mlp')|3,0"},
      {[](SweepConfig& c) { c.steps = 0; }, "steps| 0: must be at least 1|"},
      {[](SweepConfig& c) { c.warmupSteps = -1; }, "warmupSteps| -1: must be at least 0|"},
      {[](SweepConfig& c) { c.rounds = 0; }, "rounds| 0: must be at least 1|"},
      {[](SweepConfig& c) { c.rounds = 5; }, "rounds| 5: must be at most the steps (4)|"},
      {[](SweepConfig& c) { c.profileBudgetSeconds = 0; },
       "profileBudgetSeconds| 0: must be a positive number of seconds|"},
      {[](SweepConfig& c) { c.calibrationBudgetSeconds = -1; }, "calibrationBudgetSeconds| -1: must not be negative|"},
  };
  for (const Case& c : cases) {
    SweepConfig config = tinyConfig();
    c.change(config);
    EXPECT_EQ(configError([&] { checkSweepConfig(config, 3); }), c.error);
  }
}

TEST(SweepSearchSpace, IsTheConfigsCandidates) {
  const SweepConfig config = tinyConfig();
  const SearchSpace space = sweepSearchSpace(config);
  EXPECT_EQ(space.devices, 2);
  EXPECT_EQ(space.batch, 8);
  EXPECT_EQ(space.balances, config.balances);
  EXPECT_EQ(space.enumeration, BalanceEnumeration::Given);
  EXPECT_EQ(stageCounts(space, 2), (std::vector<std::int64_t>{2, 4}));
}

TEST(DefaultTracesDir, IsBesideTheReport) {
  EXPECT_EQ(defaultTracesDir("out/report.json"), "out/report.traces");
  EXPECT_EQ(defaultTracesDir("sweep.json"), "sweep.traces");
}

class SweepInputsTest : public ::testing::Test {
 protected:
  /// A profile that fits tinyModel() (its environment; three layers).
  Profile fittingProfile() const {
    Profile profile;
    profile.environment.model = "mlp";
    profile.environment.deviceType = "cpu";
    profile.environment.threads = 1;
    profile.environment.torchVersion = torchVersion();
    for (const char* name : {"fc0", "relu0", "fc1"}) {
      LayerProfile layer;
      layer.name = name;
      layer.costs = {{1, 1000, 2000, 64, 64, 0, 0}};
      profile.layers.push_back(layer);
    }
    return profile;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// The SweepInputError `call` throws, as "input|path|reason", or "" when it throws none.
  static std::string inputError(const std::function<void()>& call) {
    try {
      call();
    } catch (const SweepInputError& error) {
      return std::to_string(static_cast<int>(error.input())) + "|" + error.path() + "|" + error.reason();
    }
    return "";
  }

  test::ScratchDir scratch_{"sweep_setup"};
  const fs::path dir_ = scratch_.path();
};

TEST_F(SweepInputsTest, ACachedProfileIsReadWhenItFits) {
  const SweepModel model = tinyModel();
  EXPECT_FALSE(readCachedProfile("", model));
  EXPECT_FALSE(readCachedProfile(path("missing.json"), model));
  writeProfile(fittingProfile(), path("profile.json"));
  ASSERT_TRUE(readCachedProfile(path("profile.json"), model));
  EXPECT_EQ(readCachedProfile(path("profile.json"), model)->layerCount(), 3);

  Profile other = fittingProfile();
  other.environment.threads = 3;
  writeProfile(other, path("other.json"));
  const std::string error = inputError([&] { readCachedProfile(path("other.json"), model); });
  EXPECT_EQ(error.substr(0, 2 + path("other.json").size() + 1), "2|" + path("other.json") + "|") << error;
  EXPECT_NE(error.find("3 intra-op thread(s)"), std::string::npos) << error;

  // Another optimizer kind: refused unless the profile measured its steps, then re-stated for it.
  TrainingStepOptions adamw;
  adamw.optimizer.kind = OptimizerKind::AdamW;
  Profile trained = fittingProfile();
  trained.layers[0].paramBytes = trained.layers[0].gradBytes = 256;
  writeProfile(trained, path("trained.json"));
  const std::string noSteps = inputError([&] { readCachedProfile(path("trained.json"), model, adamw); });
  EXPECT_NE(noSteps.find("has no adamw steps, this sweep trains with adamw"), std::string::npos) << noSteps;
  Profile stepped = trained;
  for (LayerProfile& layer : stepped.layers) {
    if (layer.gradBytes > 0) layer.optimizerSteps[OptimizerKind::AdamW] = {7, 0};
  }
  writeProfile(stepped, path("stepped.json"));
  const std::optional<Profile> asAdamW = readCachedProfile(path("stepped.json"), model, adamw);
  ASSERT_TRUE(asAdamW);
  EXPECT_EQ(asAdamW->environment.optimizer.kind, OptimizerKind::AdamW);
  for (const LayerProfile& layer : asAdamW->layers) EXPECT_EQ(layer.optimizerBytes, 2 * layer.gradBytes);
}

TEST_F(SweepInputsTest, AResumedReportMustBeThisSweeps) {
  SweepConfig config = tinyConfig();
  config.reportPath = path("report.json");
  config.profilePath = path("profile.json");
  writeProfile(fittingProfile(), config.profilePath);
  // No report yet: resuming starts afresh, from the cached profile.
  SweepInputs fresh = loadSweepInputs(config, 3, /*resume=*/true);
  EXPECT_FALSE(fresh.resumedReport);
  ASSERT_TRUE(fresh.cachedProfile);

  Report report;
  report.environment.model = "mlp";
  report.environment.batch = 8;
  report.environment.devices = {"cpu", "cpu"};
  report.environment.threads = 1;
  report.profile = fittingProfile();
  writeReport(report, config.reportPath);
  const SweepInputs resumed = loadSweepInputs(config, 3, /*resume=*/true);
  ASSERT_TRUE(resumed.resumedReport);
  EXPECT_EQ(resumed.cachedProfile->layerCount(), 3);
  EXPECT_FALSE(loadSweepInputs(config, 3, /*resume=*/false).resumedReport);

  config.batch = 4;
  EXPECT_EQ(inputError([&] { loadSweepInputs(config, 3, true); }), "0|" + config.reportPath + "|batch 8 there, 4 here");
  config.batch = 8;
  report.profile->environment.deviceType = "cuda";
  writeReport(report, config.reportPath);
  EXPECT_EQ(inputError([&] { loadSweepInputs(config, 3, true); }).substr(0, 2), "1|");
}

TEST_F(SweepInputsTest, ACalibrationFileIsReadUnlessResuming) {
  SweepConfig config = tinyConfig();
  config.reportPath = path("report.json");
  config.calibrationPath = path("calibration.json");
  Calibration calibration;
  calibration.scales[4] = {1.25, 1.5};
  writeCalibration(calibration, config.calibrationPath);
  const SweepInputs inputs = loadSweepInputs(config, 3, /*resume=*/false);
  ASSERT_TRUE(inputs.calibration);
  EXPECT_EQ(inputs.calibration->scales.at(4).forward, 1.25);
  EXPECT_EQ(inputError([&] { loadSweepInputs(config, 3, /*resume=*/true); }),
            "3|" + config.calibrationPath + "|a resumed sweep keeps its report's calibration");
}

}  // namespace
}  // namespace pipeprof::tuner
