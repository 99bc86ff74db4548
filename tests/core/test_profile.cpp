// Tests for profile.cpp: cost interpolation, JSON round trip and every kind of malformed input;
// and allocator_rounding.h, the CUDA caching allocator's block sizes.
#include <pipeprof/core/allocator_rounding.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/profile.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <optional>
#include <string>

namespace pipeprof {
namespace {

using ::testing::StrEq;
using ::testing::ThrowsMessage;

CostSample sample(std::int64_t microBatch, TimeNs forwardNs, TimeNs backwardNs, Bytes outputBytes, Bytes savedBytes,
                  Bytes workspaceBytes) {
  CostSample cost;
  cost.microBatch = microBatch;
  cost.forwardNs = forwardNs;
  cost.backwardNs = backwardNs;
  cost.outputBytes = outputBytes;
  cost.savedBytes = savedBytes;
  cost.forwardWorkspaceBytes = workspaceBytes;
  cost.backwardWorkspaceBytes = workspaceBytes;
  return cost;
}

void expectCost(const CostSample& cost, std::int64_t microBatch, TimeNs forwardNs, TimeNs backwardNs, Bytes outputBytes,
                Bytes savedBytes, Bytes workspaceBytes) {
  EXPECT_EQ(cost.microBatch, microBatch);
  EXPECT_EQ(cost.forwardNs, forwardNs);
  EXPECT_EQ(cost.backwardNs, backwardNs);
  EXPECT_EQ(cost.outputBytes, outputBytes);
  EXPECT_EQ(cost.savedBytes, savedBytes);
  EXPECT_EQ(cost.forwardWorkspaceBytes, workspaceBytes);
  EXPECT_EQ(cost.backwardWorkspaceBytes, workspaceBytes);
}

TEST(CostAt, SamplesInterpolationAndExtrapolation) {
  LayerProfile layer;
  layer.name = "conv";
  layer.costs = {sample(2, 100, 200, 64, 32, 10), sample(4, 180, 400, 128, 64, 10), sample(8, 300, 801, 256, 128, 20)};
  expectCost(layer.costAt(2), 2, 100, 200, 64, 32, 10);
  expectCost(layer.costAt(4), 4, 180, 400, 128, 64, 10);
  expectCost(layer.costAt(8), 8, 300, 801, 256, 128, 20);
  expectCost(layer.costAt(3), 3, 140, 300, 96, 48, 10);
  expectCost(layer.costAt(6), 6, 240, 601, 192, 96, 15);  // 600.5 rounds to 601
  expectCost(layer.costAt(5), 5, 210, 500, 160, 80, 13);  // 12.5 rounds away from zero
  expectCost(layer.costAt(16), 16, 540, 1603, 512, 256, 40);
  expectCost(layer.costAt(1), 1, 60, 100, 32, 16, 10);
}

TEST(CostAt, ExtrapolationClampsAtZero) {
  LayerProfile layer;
  layer.costs = {sample(4, 100, 100, 0, 10, 0), sample(8, 500, 120, 0, 10, 0)};
  expectCost(layer.costAt(1), 1, 0, 85, 0, 10, 0);  // forward -200 clamps to 0
}

TEST(CostAt, SingleSampleIsProportional) {
  LayerProfile layer;
  layer.costs = {sample(4, 1000, 2001, 400, 40, 3)};
  expectCost(layer.costAt(2), 2, 500, 1001, 200, 20, 2);  // 1000.5 -> 1001, 1.5 -> 2
  expectCost(layer.costAt(8), 8, 2000, 4002, 800, 80, 6);
}

// What of a layer's output its graph keeps is interpolated like the other bytes, within the
// output; where a sample lacks it the estimate from the saved bytes stands (nullopt).
TEST(CostAt, TheOutputsSavedPartIsInterpolatedWithinTheOutput) {
  LayerProfile layer;
  layer.costs = {sample(2, 1, 1, 64, 200, 0), sample(4, 1, 1, 128, 200, 0)};
  layer.costs[0].outputSavedBytes = 0;
  layer.costs[1].outputSavedBytes = 128;
  EXPECT_EQ(layer.costAt(3).outputSavedBytes, 64);
  EXPECT_EQ(layer.costAt(8).outputSavedBytes, 256) << "as large as the extrapolated output";
  EXPECT_EQ(layer.costAt(1).outputSavedBytes, 0) << "-64 clamps at zero";
  layer.costs = {sample(4, 1, 1, 100, 40, 0)};
  layer.costs[0].outputSavedBytes = 100;
  EXPECT_EQ(layer.costAt(2).outputSavedBytes, 50) << "a single sample is proportional";
  layer.costs[0].outputSavedBytes.reset();
  EXPECT_FALSE(layer.costAt(2).outputSavedBytes.has_value());
}

// The backward's workspace inside a stage is interpolated like the other bytes; where a sample
// lacks it the simulator takes the workspace held (nullopt).
TEST(CostAt, TheInnerBackwardWorkspaceIsInterpolated) {
  LayerProfile layer;
  layer.costs = {sample(2, 1, 1, 64, 200, 0), sample(4, 1, 1, 128, 200, 0)};
  layer.costs[0].innerBackwardWorkspaceBytes = 100;
  layer.costs[1].innerBackwardWorkspaceBytes = 180;
  EXPECT_EQ(layer.costAt(3).innerBackwardWorkspaceBytes, 140);
  EXPECT_EQ(layer.costAt(1).innerBackwardWorkspaceBytes, 60);
  layer.costs = {sample(4, 1, 1, 100, 40, 0)};
  layer.costs[0].innerBackwardWorkspaceBytes = 100;
  EXPECT_EQ(layer.costAt(2).innerBackwardWorkspaceBytes, 50) << "a single sample is proportional";
  layer.costs[0].innerBackwardWorkspaceBytes.reset();
  EXPECT_FALSE(layer.costAt(2).innerBackwardWorkspaceBytes.has_value());
}

// How far a backward's last allocation lifts its peak is interpolated like its workspace; a
// sample without it stays without it (the simulator then reads 0).
TEST(CostAt, ThePeaksRiseAtTheBackwardsEndIsInterpolated) {
  LayerProfile layer;
  layer.costs = {sample(2, 1, 1, 64, 200, 0), sample(4, 1, 1, 128, 200, 0)};
  layer.costs[0].backwardEndRiseBytes = 100;
  layer.costs[1].backwardEndRiseBytes = 180;
  layer.costs[0].inputEndRiseBytes = 40;
  layer.costs[1].inputEndRiseBytes = 80;
  EXPECT_EQ(layer.costAt(3).backwardEndRiseBytes, 140);
  EXPECT_EQ(layer.costAt(3).inputEndRiseBytes, 60);
  EXPECT_EQ(layer.costAt(1).inputEndRiseBytes, 20);
  layer.costs = {sample(4, 1, 1, 100, 40, 0)};
  layer.costs[0].inputEndRiseBytes = 100;
  EXPECT_EQ(layer.costAt(2).inputEndRiseBytes, 50) << "a single sample is proportional";
  EXPECT_FALSE(layer.costAt(2).backwardEndRiseBytes.has_value());
}

// What the next layer's backward frees of a layer's saved bytes is interpolated alike, and a
// profile without it reads without it (the simulator then frees everything with the layer's own).
TEST(CostAt, WhatTheNextLayersBackwardFreesIsInterpolated) {
  LayerProfile layer;
  layer.costs = {sample(2, 1, 1, 64, 200, 0), sample(4, 1, 1, 128, 200, 0)};
  layer.costs[0].savedFreedByNextBytes = 64;
  layer.costs[1].savedFreedByNextBytes = 128;
  EXPECT_EQ(layer.costAt(3).savedFreedByNextBytes, 96);
  EXPECT_EQ(layer.costAt(8).savedFreedByNextBytes, 256);
  layer.costs[1].savedFreedByNextBytes.reset();
  EXPECT_FALSE(layer.costAt(3).savedFreedByNextBytes.has_value());
}

// The forward without a graph is interpolated like the forward; where a sample lacks it (older
// profiles) the forward stands for it.
TEST(CostAt, TheForwardWithoutAGraphIsInterpolatedAndFallsBackToTheForward) {
  LayerProfile layer;
  layer.costs = {sample(2, 100, 1, 64, 0, 0), sample(4, 180, 1, 128, 0, 0)};
  layer.costs[0].forwardNoGradNs = 80;
  layer.costs[1].forwardNoGradNs = 150;
  EXPECT_EQ(layer.costAt(3).forwardNoGradNs, 115);
  EXPECT_EQ(layer.costAt(8).forwardWithoutGraphNs(), 290);
  layer.costs[1].forwardNoGradNs.reset();
  EXPECT_FALSE(layer.costAt(3).forwardNoGradNs.has_value()) << "both samples carry it, or it is unknown";
  EXPECT_EQ(layer.costAt(3).forwardWithoutGraphNs(), 140) << "the forward's";
  layer.costs = {sample(4, 1000, 1, 100, 0, 0)};
  layer.costs[0].forwardNoGradNs = 900;
  EXPECT_EQ(layer.costAt(2).forwardNoGradNs, 450) << "a single sample is proportional";
}

TEST(CostAt, RejectsEmptyAndNonPositive) {
  LayerProfile layer;
  layer.name = "fc";
  EXPECT_THAT([&] { layer.costAt(1); }, ThrowsMessage<std::invalid_argument>(StrEq("layer 'fc' has no cost samples")));
  layer.costs = {sample(1, 1, 1, 1, 1, 1)};
  EXPECT_THAT([&] { layer.costAt(0); },
              ThrowsMessage<std::invalid_argument>(StrEq("layer 'fc': micro-batch size must be positive (got 0)")));
}

Profile exampleProfile() {
  Profile profile;
  OptimizerSpec adamw;
  adamw.kind = OptimizerKind::AdamW;
  adamw.learningRate = 3e-4;
  const ProfilingTime profiling{10.0, 3, {{"memory", 1.5}, {"timed runs", 7.25}}, 5};
  profile.environment = {"resnet_tiny", "cpu", "Intel Xeon", 2, "1.13.1", Precision::Bf16, adamw, profiling};
  profile.inputBytesPerSample = 3072;
  LayerProfile a;
  a.name = "conv1";
  a.paramBytes = 1000;
  a.gradBytes = 1000;
  a.optimizerBytes = 2000;
  a.optimizerStepNs = 700;
  a.optimizerStepBytes = 1000;
  a.castCacheBytes = 500;
  a.costs = {sample(1, 10, 20, 30, 40, 50), sample(4, 11, 21, 31, 41, 51)};
  a.costs[0].outputSavedBytes = 0;
  a.costs[1].outputSavedBytes = 31;
  a.costs[0].innerBackwardWorkspaceBytes = 12;
  a.costs[1].innerBackwardWorkspaceBytes = 13;
  a.costs[0].backwardEndRiseBytes = 4;
  a.costs[1].backwardEndRiseBytes = 5;
  a.costs[0].inputEndRiseBytes = 2;
  a.costs[1].inputEndRiseBytes = 3;
  LayerProfile b;
  b.name = "fc";
  b.paramBytes = 7;
  b.gradBytes = 3;
  b.costs = {sample(2, 5, 6, 7, 8, 0)};
  b.costs[0].backwardWorkspaceBytes = 9;
  profile.layers = {a, b, b};
  profile.skips = {{"enc1", 0, 2, 123, 100, true, true, true}};
  return profile;
}

void expectEqual(const Profile& a, const Profile& b) { EXPECT_EQ(toJson(a), toJson(b)); }

TEST(ProfileJson, RoundTripIsExact) {
  Profile profile = exampleProfile();
  nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["schema"], "pipeprof.profile/v1");
  EXPECT_EQ(json["layers"][0]["costs"][1]["saved_bytes"], 41);
  EXPECT_EQ(json["layers"][1]["costs"][0]["forward_workspace_bytes"], 0);
  EXPECT_EQ(json["layers"][1]["costs"][0]["backward_workspace_bytes"], 9);
  EXPECT_EQ(json["environment"]["torch_version"], "1.13.1");
  Profile back = profileFromJson(json, "p.json");
  EXPECT_EQ(back.environment.model, "resnet_tiny");
  EXPECT_EQ(back.environment.threads, 2);
  EXPECT_EQ(back.layers.size(), 3u);
  EXPECT_EQ(back.layers[1].gradBytes, 3);
  EXPECT_EQ(back.skips[0].bytesPerSample, 123);
  EXPECT_EQ(back.skips[0].unsavedBytesPerSample, 100);
  EXPECT_TRUE(back.skips[0].gradientSharedWithInput);
  EXPECT_TRUE(back.skips[0].gradientSharedInBackward);
  EXPECT_TRUE(back.skips[0].gradientSliceOfOutput);
  EXPECT_EQ(json["environment"]["precision"], "bf16");
  EXPECT_EQ(back.environment.precision, Precision::Bf16);
  EXPECT_EQ(back.environment.optimizer, profile.environment.optimizer);
  EXPECT_EQ(json["environment"]["profiling"]["passes"][1]["name"], "timed runs");
  EXPECT_DOUBLE_EQ(back.environment.profiling.seconds(), 8.75);
  EXPECT_EQ(back.environment.profiling.fewestTimedRuns, 3);
  EXPECT_EQ(back.environment.profiling.layersFromIdentical, 5);
  EXPECT_DOUBLE_EQ(back.environment.profiling.budgetSeconds, 10.0);
  EXPECT_EQ(back.layers[0].optimizerStepNs, 700);
  EXPECT_EQ(back.layers[0].optimizerStepBytes, 1000);
  EXPECT_EQ(back.layers[0].castCacheBytes, 500);
  EXPECT_FALSE(json["layers"][1].contains("cast_cache_bytes")) << "written only when measured";
  EXPECT_EQ(back.layers[0].costs[1].outputSavedBytes, 31);
  EXPECT_FALSE(json["layers"][1]["costs"][0].contains("output_saved_bytes")) << "written only when measured";
  EXPECT_EQ(back.layers[0].costs[1].innerBackwardWorkspaceBytes, 13);
  EXPECT_FALSE(json["layers"][1]["costs"][0].contains("inner_backward_workspace_bytes")) << "only when measured";
  expectEqual(back, profile);

  std::string path = ::testing::TempDir() + "pipeprof_core_profile_" + std::to_string(::getpid()) + ".json";
  writeProfile(profile, path);
  expectEqual(readProfile(path), profile);
  ::unlink(path.c_str());
  ASSERT_EQ(profile.skipRoutes().size(), 1u);
  EXPECT_EQ(profile.skipRoutes()[0].name, "enc1");
  EXPECT_EQ(profile.skipRoutes()[0].popLayer, 2);
}

TEST(ProfileJson, OptionalFieldsTakeDefaults) {
  nlohmann::json json = nlohmann::json::parse(R"J({"schema": "pipeprof.profile/v1", "input_bytes_per_sample": 4,
      "layers": [{"name": "l0", "param_bytes": 16,
                  "costs": [{"micro_batch": 1, "forward_ns": 1, "backward_ns": 2, "output_bytes": 3,
                             "saved_bytes": 4}]}]})J");
  Profile profile = profileFromJson(json, "p.json");
  EXPECT_EQ(profile.layers[0].gradBytes, 16);
  EXPECT_EQ(profile.layers[0].optimizerBytes, 0);
  EXPECT_EQ(profile.layers[0].optimizerStepNs, 0);
  EXPECT_EQ(profile.layers[0].castCacheBytes, 0);
  EXPECT_EQ(profile.environment.precision, Precision::Fp32) << "older profiles were measured in fp32";
  EXPECT_EQ(profile.environment.optimizer, OptimizerSpec{}) << "and with plain SGD";
  EXPECT_EQ(profile.layers[0].costs[0].forwardWorkspaceBytes, 0);
  EXPECT_EQ(profile.layers[0].costs[0].backwardWorkspaceBytes, 0);
  EXPECT_FALSE(profile.layers[0].costs[0].outputSavedBytes.has_value()) << "estimated from the saved bytes";
  EXPECT_FALSE(profile.layers[0].costs[0].innerBackwardWorkspaceBytes.has_value()) << "the workspace held stands";
  EXPECT_EQ(profile.environment.threads, 1);
  EXPECT_EQ(profile.environment.model, "");
  EXPECT_TRUE(profile.skips.empty());

  // A profile from before unsaved bytes were measured: the skip is assumed unsaved throughout.
  nlohmann::json old = toJson(exampleProfile());
  old["skips"][0].erase("unsaved_bytes_per_sample");
  old["skips"][0].erase("gradient_shared_with_input");
  old["skips"][0].erase("gradient_shared_in_backward");
  old["skips"][0].erase("gradient_slice_of_output");
  EXPECT_EQ(profileFromJson(old, "p.json").skips[0].unsavedBytesPerSample, 123);
  EXPECT_FALSE(profileFromJson(old, "p.json").skips[0].gradientSharedWithInput);
  EXPECT_FALSE(profileFromJson(old, "p.json").skips[0].gradientSharedInBackward);
  EXPECT_FALSE(profileFromJson(old, "p.json").skips[0].gradientSliceOfOutput);
}

TEST(ProfileJson, OneWorkspaceFigureFromBeforeTheSplitServesBothPasses) {
  nlohmann::json json = toJson(exampleProfile());
  nlohmann::json& cost = json["layers"][1]["costs"][0];
  cost.erase("forward_workspace_bytes");
  cost.erase("backward_workspace_bytes");
  cost["workspace_bytes"] = 12;
  CostSample read = profileFromJson(json, "p.json").layers[1].costs[0];
  EXPECT_EQ(read.forwardWorkspaceBytes, 12);
  EXPECT_EQ(read.backwardWorkspaceBytes, 12);

  cost["backward_workspace_bytes"] = 30;  // a split figure wins over the shared one
  read = profileFromJson(json, "p.json").layers[1].costs[0];
  EXPECT_EQ(read.forwardWorkspaceBytes, 12);
  EXPECT_EQ(read.backwardWorkspaceBytes, 30);
}

/// The message profileFromJson throws for `profile` (the example one by default) after `edit`.
std::string errorAfter(const std::function<void(nlohmann::json&)>& edit, const Profile& profile = exampleProfile()) {
  nlohmann::json json = toJson(profile);
  edit(json);
  try {
    profileFromJson(json, "p.json");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ProfileJson, RejectsMalformedInputNamingThePlace) {
  EXPECT_EQ(errorAfter([](auto& j) { j["schema"] = "foo"; }),
            "p.json: $.schema: expected schema 'pipeprof.profile/v1', got 'foo'");
  EXPECT_EQ(errorAfter([](auto& j) { j = nlohmann::json::array(); }),
            "p.json: $: expected an object with schema 'pipeprof.profile/v1'");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][1]["costs"][0]["forward_ns"] = -5; }),
            "p.json: $.layers[1].costs[0].forward_ns: expected a non-negative integer, got -5");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0].erase("param_bytes"); }),
            "p.json: $.layers[0]: missing required field 'param_bytes'");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["costs"][1]["micro_batch"] = 1; }),
            "p.json: $.layers[0].costs[1].micro_batch: costs must be sorted by micro_batch with distinct sizes "
            "(1 after 1)");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["costs"][1]["micro_batch"] = 0; }),
            "p.json: $.layers[0].costs[1].micro_batch: expected a positive integer, got 0");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][2]["costs"] = nlohmann::json::array(); }),
            "p.json: $.layers[2].costs: expected at least one cost sample");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"] = nlohmann::json::array(); }),
            "p.json: $.layers: expected at least one layer");
  EXPECT_EQ(errorAfter([](auto& j) { j["skips"][0]["unsaved_bytes_per_sample"] = 124; }),
            "p.json: $.skips[0].unsaved_bytes_per_sample: expected at most bytes_per_sample (123), got 124");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["costs"][1]["output_saved_bytes"] = 32; }),
            "p.json: $.layers[0].costs[1].output_saved_bytes: expected at most output_bytes (31), got 32");
  EXPECT_EQ(errorAfter([](auto& j) { j["skips"][0]["pop_layer"] = 3; }),
            "p.json: $.skips[0].pop_layer: pop layer 3 is out of range (the model has layers 0..2)");
  EXPECT_EQ(errorAfter([](auto& j) { j["skips"][0]["stash_layer"] = 5; }),
            "p.json: $.skips[0].stash_layer: stash layer 5 is out of range (the model has layers 0..2)");
  EXPECT_EQ(errorAfter([](auto& j) { j["skips"][0]["stash_layer"] = 2; }),
            "p.json: $.skips[0].pop_layer: pop layer 2 must come after stash layer 2");
  EXPECT_EQ(errorAfter([](auto& j) { j["skips"].push_back(j["skips"][0]); }),
            "p.json: $.skips[1].name: duplicate skip name 'enc1'");
  EXPECT_EQ(errorAfter([](auto& j) { j["environment"]["threads"] = "two"; }),
            "p.json: $.environment.threads: expected a positive integer, got \"two\"");
  EXPECT_EQ(errorAfter([](auto& j) { j["input_bytes_per_sample"] = 1.5; }),
            "p.json: $.input_bytes_per_sample: expected a non-negative integer, got 1.5");
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["name"] = nullptr; }),
            "p.json: $.layers[0].name: expected a string, got null");
}

TEST(ProfileJson, SharedParametersRoundTripAndAreValidated) {
  Profile profile = exampleProfile();
  EXPECT_FALSE(toJson(profile).contains("shared_parameters"));  // none: not written, old files read none
  profile.sharedParameters.push_back({"embed.weight", {0, 2}, 4096});
  const nlohmann::json json = toJson(profile);
  const Profile back = profileFromJson(json, "p.json");
  ASSERT_EQ(back.sharedParameters.size(), 1u);
  EXPECT_EQ(back.sharedParameters[0].name, "embed.weight");
  EXPECT_EQ(back.sharedParameters[0].layers, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(back.sharedParameters[0].bytes, 4096);
  EXPECT_EQ(toJson(back), json);
  const auto errorIn = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json broken = json;
    edit(broken["shared_parameters"][0]);
    try {
      profileFromJson(broken, "p.json");
    } catch (const FormatError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(errorIn([](auto& j) {
              j["layers"] = {0, 3};
            }),
            "p.json: $.shared_parameters[0].layers[1]: layer 3 is out of range (the model has layers 0..2)");
  EXPECT_EQ(errorIn([](auto& j) {
              j["layers"] = {2, 0};
            }),
            "p.json: $.shared_parameters[0].layers[1]: expected layers in ascending order, each once; got 0 after 2");
  EXPECT_EQ(errorIn([](auto& j) { j["layers"] = {1}; }),
            "p.json: $.shared_parameters[0].layers: expected at least two layers sharing the parameter");
  EXPECT_EQ(errorIn([](auto& j) { j["bytes"] = -1; }),
            "p.json: $.shared_parameters[0].bytes: expected a non-negative integer, got -1");
}

TEST(ProfileJson, LibraryWorkspaceRoundTripsOnCudaAndOldFilesReadZero) {
  Profile profile = exampleProfile();
  EXPECT_FALSE(toJson(profile).contains("library_workspace_bytes"));  // 0 is not written
  EXPECT_EQ(profileFromJson(toJson(profile), "p.json").libraryWorkspaceBytes, 0);
  EXPECT_FALSE(profile.onCuda());

  profile.environment.deviceType = "cuda";
  profile.libraryWorkspaceBytes = 33554432 + 1048576;
  EXPECT_TRUE(profile.onCuda());
  nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["library_workspace_bytes"], 34603008);
  EXPECT_EQ(profileFromJson(json, "p.json").libraryWorkspaceBytes, 34603008);
  expectEqual(profileFromJson(json, "p.json"), profile);

  std::string path = ::testing::TempDir() + "pipeprof_core_profile_cuda_" + std::to_string(::getpid()) + ".json";
  writeProfile(profile, path);
  expectEqual(readProfile(path), profile);
  ::unlink(path.c_str());
}

TEST(ProfileJson, LibraryWorkspaceIsValidated) {
  EXPECT_EQ(errorAfter([](auto& j) {
              j["environment"]["device_type"] = "cuda";
              j["library_workspace_bytes"] = -1;
            }),
            "p.json: $.library_workspace_bytes: expected a non-negative integer, got -1");
  EXPECT_EQ(errorAfter([](auto& j) {
              j["environment"]["device_type"] = "cuda";
              j["library_workspace_bytes"] = "32MiB";
            }),
            "p.json: $.library_workspace_bytes: expected a non-negative integer, got \"32MiB\"");
  EXPECT_EQ(errorAfter([](auto& j) { j["library_workspace_bytes"] = 4096; }),
            "p.json: $.library_workspace_bytes: expected 0 on a profile whose environment.device_type is 'cpu' "
            "(library workspaces are a CUDA device's), got 4096");
  EXPECT_EQ(errorAfter([](auto& j) { j["library_workspace_bytes"] = 0; }), "no error");
}

TEST(ProfileJson, TheOptimizerAtOnceRoundTripsOnCpuAndOldFilesStepAlone) {
  Profile profile = exampleProfile();
  EXPECT_FALSE(toJson(profile).contains("optimizer_at_once"));  // not measured: not written
  EXPECT_FALSE(profileFromJson(toJson(profile), "p.json").optimizerAtOnce.measured());
  profile.optimizerAtOnce = OptimizerAtOnce{2, {{OptimizerKind::Sgd, 1.25}, {OptimizerKind::AdamW, 1.5}}};
  const nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["optimizer_at_once"],
            nlohmann::json::parse(R"({"devices": 2, "slowdown": {"adamw": 1.5, "sgd": 1.25}})"));
  const Profile read = profileFromJson(json, "p.json");
  expectEqual(read, profile);
  EXPECT_DOUBLE_EQ(read.optimizerAtOnce.factor(OptimizerKind::AdamW, 2), 1.5);
  EXPECT_DOUBLE_EQ(read.optimizerAtOnce.factor(OptimizerKind::AdamW, 3), 2.0) << "linear in the other devices";
  EXPECT_DOUBLE_EQ(read.optimizerAtOnce.factor(OptimizerKind::AdamW, 1), 1.0) << "alone";
  EXPECT_DOUBLE_EQ(read.optimizerAtOnce.factor(OptimizerKind::Adam, 2), 1.0) << "not measured";
}

TEST(ProfileJson, TheOptimizerAtOnceIsValidated) {
  const auto atOnce = [](nlohmann::json value) {
    return [value](nlohmann::json& j) { j["optimizer_at_once"] = value; };
  };
  EXPECT_EQ(errorAfter(atOnce(R"({"devices": 2, "slowdown": {"sgd": 1.2}})"_json)), "no error");
  EXPECT_EQ(errorAfter(atOnce(R"({"devices": 1, "slowdown": {"sgd": 1.2}})"_json)),
            "p.json: $.optimizer_at_once.devices: expected at least 2, got 1");
  EXPECT_EQ(errorAfter(atOnce(R"({"devices": 2, "slowdown": {}})"_json)),
            "p.json: $.optimizer_at_once.slowdown: expected an object keyed by optimizer kind, e.g. {\"sgd\": 1.2}");
  EXPECT_EQ(errorAfter(atOnce(R"({"devices": 2, "slowdown": {"sgd": 0}})"_json)),
            "p.json: $.optimizer_at_once.slowdown.sgd: expected a positive ratio, got 0");
  EXPECT_EQ(errorAfter(atOnce(R"({"devices": 2, "slowdown": {"lion": 1.1}})"_json)),
            "p.json: $.optimizer_at_once.slowdown.lion: invalid optimizer 'lion': expected one of sgd, momentum, adam, "
            "adamw");
  EXPECT_EQ(errorAfter(atOnce(R"([2, 1.2])"_json)),
            "p.json: $.optimizer_at_once: expected an object with 'devices' and 'slowdown'");
  EXPECT_EQ(errorAfter([](auto& j) {
              j["environment"]["device_type"] = "cuda";
              j["optimizer_at_once"] = R"({"devices": 2, "slowdown": {"sgd": 1.2}})"_json;
            }),
            "p.json: $.optimizer_at_once: expected none on a profile whose environment.device_type is 'cuda' (CUDA "
            "devices step in memories of their own)");
}

TEST(ProfileJson, TheBackwardSplitRoundTripsWithOrWithoutItsOwnMemory) {
  Profile profile = exampleProfile();
  profile.layers[0].costs[0].backwardSplit = BackwardSplit{8, 12, 100, 10, 300, 40};
  profile.layers[0].costs[1].backwardSplit = BackwardSplit{9, 13, 400, 10, 900, 160};
  const nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["layers"][0]["costs"][1]["input_workspace_bytes"], 900);
  EXPECT_EQ(json["layers"][0]["costs"][1]["input_kept_bytes"], 160);
  const Profile back = profileFromJson(json, "p.json");
  expectEqual(back, profile);
  const BackwardSplit between = *back.layers[0].costAt(2).backwardSplit;  // a third of the way
  EXPECT_EQ(between.inputWorkspaceBytes, 500);
  EXPECT_EQ(between.inputKeptBytes, 80);
  // One size measured: the others in proportion, as every other field.
  profile.layers[1].costs[0].backwardSplit = BackwardSplit{8, 12, 100, 10, 300, 40};
  EXPECT_EQ(profile.layers[1].costAt(4).backwardSplit->inputKeptBytes, 80);
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["costs"][0].erase("input_kept_bytes"); }, profile),
            "p.json: $.layers[0].costs[0]: missing field 'input_kept_bytes' (input_workspace_bytes and "
            "input_kept_bytes come together)");
  // A profile from before I's own fields: the split without them, which stay unknown.
  Profile older = profile;
  for (CostSample& cost : older.layers[0].costs) {
    cost.backwardSplit->inputWorkspaceBytes.reset();
    cost.backwardSplit->inputKeptBytes.reset();
  }
  const nlohmann::json olderJson = toJson(older);
  EXPECT_FALSE(olderJson["layers"][0]["costs"][0].contains("input_workspace_bytes"));
  const Profile olderBack = profileFromJson(olderJson, "p.json");
  EXPECT_FALSE(olderBack.layers[0].costAt(2).backwardSplit->inputWorkspaceBytes.has_value());
  EXPECT_EQ(olderBack.layers[0].costAt(2).backwardSplit->weightSavedBytes, 200);
}

// c10/cuda/CUDACachingAllocator.cpp: round_size to 512, small requests split from 2 MiB
// segments, 1-10 MiB from 20 MiB ones, 10 MiB and more get a segment rounded to 2 MiB that is
// split only when more than 1 MiB remains.
TEST(ProfileJson, TheForwardWithoutAGraphRoundTripsAndOldFilesReadTheForward) {
  Profile profile = exampleProfile();
  EXPECT_FALSE(toJson(profile)["layers"][0]["costs"][0].contains("forward_no_grad_ns")) << "written only when measured";
  EXPECT_EQ(profileFromJson(toJson(profile), "p.json").layers[0].costs[0].forwardWithoutGraphNs(),
            profile.layers[0].costs[0].forwardNs);
  profile.layers[0].costs[0].forwardNoGradNs = 7;
  const nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["layers"][0]["costs"][0]["forward_no_grad_ns"], 7);
  expectEqual(profileFromJson(json, "p.json"), profile);
  EXPECT_EQ(errorAfter([](auto& j) { j["layers"][0]["costs"][0]["forward_no_grad_ns"] = -1; }, profile),
            "p.json: $.layers[0].costs[0].forward_no_grad_ns: expected a non-negative integer, got -1");
}

TEST(ProfileJson, TheLossRoundTripsAndOldFilesCostNothing) {
  Profile profile = exampleProfile();
  EXPECT_FALSE(toJson(profile).contains("loss")) << "written only when measured";
  EXPECT_EQ(profile.loss.costAt(7).savedBytes, 0);
  EXPECT_EQ(profile.loss.costAt(7).forwardNs, 0);
  profile.loss.costs = {CostSample{2, 10, 20, 4, 64, 8, 16}, CostSample{4, 18, 40, 4, 128, 16, 32}};
  profile.loss.keepsOutput = false;
  const nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["loss"]["keeps_output"], false);
  EXPECT_EQ(json["loss"]["costs"][1]["saved_bytes"], 128);
  const Profile back = profileFromJson(json, "p.json");
  EXPECT_FALSE(back.loss.keepsOutput);
  EXPECT_EQ(back.loss.costAt(3).savedBytes, 96);  // interpolated like a layer's
  EXPECT_EQ(back.loss.costAt(3).forwardNs, 14);
  expectEqual(back, profile);
  EXPECT_EQ(errorAfter([](auto& j) { j["loss"]["costs"][0]["forward_host_ns"] = 1; }, profile),
            "p.json: $.loss.costs[0]: missing field 'forward_device_ns' (forward_host_ns, forward_device_ns and "
            "forward_kernels come together)");
  EXPECT_EQ(errorAfter(
                [](auto& j) {
                  j["loss"]["costs"][0]["forward_host_ns"] = 1;
                  j["loss"]["costs"][0]["forward_device_ns"] = 1;
                  j["loss"]["costs"][0]["forward_kernels"] = 1;
                  j["loss"]["costs"][0]["backward_host_ns"] = 1;
                  j["loss"]["costs"][0]["backward_device_ns"] = 1;
                  j["loss"]["costs"][0]["backward_kernels"] = 1;
                },
                profile),
            "p.json: $.loss.costs[0]: unexpected launch data (the loss carries none)");
  EXPECT_EQ(errorAfter([](auto& j) { j["loss"]["costs"] = nlohmann::json::array(); }, profile),
            "p.json: $.loss.costs: expected at least one cost sample");
}

TEST(Profile, StandsForAnotherOptimizerWhoseStepsItMeasured) {
  Profile profile = exampleProfile();
  profile.environment.optimizer = OptimizerSpec{};  // sgd
  for (LayerProfile& layer : profile.layers) layer.optimizerBytes = 0;
  EXPECT_TRUE(profile.predictsOptimizer(OptimizerKind::Sgd));
  EXPECT_FALSE(profile.predictsOptimizer(OptimizerKind::AdamW));
  OptimizerSpec adamw;
  adamw.kind = OptimizerKind::AdamW;
  EXPECT_THROW(withOptimizer(profile, adamw), std::invalid_argument);
  for (LayerProfile& layer : profile.layers) {
    if (layer.gradBytes > 0) layer.optimizerSteps[OptimizerKind::AdamW] = {900, 64};
  }
  ASSERT_TRUE(profile.predictsOptimizer(OptimizerKind::AdamW));
  adamw.learningRate = 3e-4;
  const Profile as = withOptimizer(profile, adamw);
  EXPECT_EQ(as.environment.optimizer, adamw);
  for (std::size_t l = 0; l < as.layers.size(); ++l) {
    EXPECT_EQ(as.layers[l].optimizerBytes, 2 * as.layers[l].gradBytes) << l;
    EXPECT_EQ(as.layers[l].optimizerStepNs, as.layers[l].gradBytes > 0 ? 900 : 0) << l;
    EXPECT_EQ(as.layers[l].optimizerStepBytes, as.layers[l].gradBytes > 0 ? 64 : 0) << l;
    EXPECT_EQ(toJson(as)["layers"][l]["costs"], toJson(profile)["layers"][l]["costs"]) << "times do not change";
  }
  // The steps round-trip, written only when measured.
  EXPECT_FALSE(toJson(exampleProfile())["layers"][0].contains("optimizer_steps"));
  const nlohmann::json json = toJson(profile);
  EXPECT_EQ(json["layers"][0]["optimizer_steps"]["adamw"]["ns"], 900);
  expectEqual(profileFromJson(json, "p.json"), profile);
  EXPECT_EQ(errorAfter([](auto& j) {
              j["layers"][0]["optimizer_steps"] = {{"lion", {{"ns", 1}, {"bytes", 0}}}};
            }),
            "p.json: $.layers[0].optimizer_steps.lion: invalid optimizer 'lion': expected one of sgd, momentum, "
            "adam, adamw");
}

TEST(AllocatorRounding, BlockOfOneRequest) {
  constexpr Bytes kKiB = 1024;
  constexpr Bytes kMiB = 1024 * kKiB;
  EXPECT_EQ(roundToAllocatorBlock(0), 0);
  EXPECT_EQ(roundToAllocatorBlock(1), 512);
  EXPECT_EQ(roundToAllocatorBlock(512), 512);
  EXPECT_EQ(roundToAllocatorBlock(513), 1024);
  EXPECT_EQ(roundToAllocatorBlock(1 * kMiB), 1 * kMiB);            // largest small request
  EXPECT_EQ(roundToAllocatorBlock(1 * kMiB + 1), 1 * kMiB + 512);  // large pool, 20 MiB segment
  EXPECT_EQ(roundToAllocatorBlock(9 * kMiB + 1), 9 * kMiB + 512);
  EXPECT_EQ(roundToAllocatorBlock(10 * kMiB - 1), 10 * kMiB);          // its own 10 MiB segment
  EXPECT_EQ(roundToAllocatorBlock(10 * kMiB + 1), 10 * kMiB + 512);    // 12 MiB segment, split
  EXPECT_EQ(roundToAllocatorBlock(11 * kMiB - 512), 11 * kMiB - 512);  // 1 MiB + 512 remain: split
  EXPECT_EQ(roundToAllocatorBlock(11 * kMiB), 12 * kMiB);              // exactly 1 MiB remains: not
  EXPECT_EQ(roundToAllocatorBlock(11 * kMiB + 1), 12 * kMiB);
  EXPECT_EQ(roundToAllocatorBlock(32 * kMiB), 32 * kMiB);
  EXPECT_EQ(roundUpToMultiple(1025, kAllocatorMinBlockBytes), 1536);
  static_assert(roundToAllocatorBlock(700) == 1024, "usable in constant expressions");
}

LaunchCost launch(TimeNs hostNs, TimeNs deviceNs, std::int64_t kernels) {
  LaunchCost cost;
  cost.hostNs = hostNs;
  cost.deviceNs = deviceNs;
  cost.kernels = kernels;
  return cost;
}

void expectLaunch(const std::optional<LaunchCost>& cost, TimeNs hostNs, TimeNs deviceNs, std::int64_t kernels) {
  ASSERT_TRUE(cost.has_value());
  EXPECT_EQ(cost->hostNs, hostNs);
  EXPECT_EQ(cost->deviceNs, deviceNs);
  EXPECT_EQ(cost->kernels, kernels);
}

TEST(CostAt, LaunchDataIsInterpolatedLikeTheOtherFields) {
  LayerProfile layer;
  layer.costs = {sample(2, 100, 200, 0, 0, 0), sample(4, 180, 400, 0, 0, 0)};
  layer.costs[0].forwardLaunch = launch(50, 10, 3);
  layer.costs[0].backwardLaunch = launch(90, 21, 6);
  layer.costs[1].forwardLaunch = launch(54, 30, 3);
  layer.costs[1].backwardLaunch = launch(100, 60, 8);
  expectLaunch(layer.costAt(2).forwardLaunch, 50, 10, 3);
  expectLaunch(layer.costAt(3).forwardLaunch, 52, 20, 3);
  expectLaunch(layer.costAt(3).backwardLaunch, 95, 41, 7);  // 40.5 -> 41
  expectLaunch(layer.costAt(8).backwardLaunch, 120, 138, 12);
  expectLaunch(layer.costAt(1).backwardLaunch, 85, 2, 5);  // 1.5 -> 2
  // Extrapolated below one kernel while the device still has work: one kernel.
  layer.costs[0].backwardLaunch = launch(90, 30, 1);
  layer.costs[1].backwardLaunch = launch(100, 40, 7);
  expectLaunch(layer.costAt(1).backwardLaunch, 85, 25, 1);  // -2 kernels -> 1

  // A sample without launch data (a CPU profile): none at any size.
  layer.costs[0].forwardLaunch.reset();
  EXPECT_FALSE(layer.costAt(3).forwardLaunch.has_value());
  EXPECT_FALSE(layer.costAt(8).forwardLaunch.has_value());
}

TEST(CostAt, SingleSampleScalesOnlyTheDeviceTimeOfALaunch) {
  LayerProfile layer;
  layer.costs = {sample(4, 1000, 2000, 0, 0, 0)};
  layer.costs[0].forwardLaunch = launch(300, 101, 5);
  layer.costs[0].backwardLaunch = launch(600, 400, 9);
  expectLaunch(layer.costAt(2).forwardLaunch, 300, 51, 5);  // 50.5 -> 51
  expectLaunch(layer.costAt(8).backwardLaunch, 600, 800, 9);
  EXPECT_EQ(layer.costAt(8).forwardNs, 2000);
}

Profile launchProfile() {
  Profile profile = exampleProfile();
  profile.environment.deviceType = "cuda";
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) {
      cost.forwardLaunch = launch(4000 + cost.microBatch, 900 * cost.microBatch, 3);
      cost.backwardLaunch = launch(9000, 0, 0);
    }
  }
  return profile;
}

TEST(ProfileJson, LaunchDataRoundTripsAndOldFilesHaveNone) {
  Profile old = exampleProfile();
  EXPECT_FALSE(old.hasLaunchData());
  nlohmann::json oldJson = toJson(old);
  EXPECT_FALSE(oldJson["layers"][0]["costs"][0].contains("forward_host_ns"));  // absent is not written
  EXPECT_FALSE(profileFromJson(oldJson, "p.json").hasLaunchData());

  Profile profile = launchProfile();
  EXPECT_TRUE(profile.hasLaunchData());
  nlohmann::json json = toJson(profile);
  const nlohmann::json& cost = json["layers"][0]["costs"][1];
  EXPECT_EQ(cost["forward_host_ns"], 4004);
  EXPECT_EQ(cost["forward_device_ns"], 3600);
  EXPECT_EQ(cost["forward_kernels"], 3);
  EXPECT_EQ(cost["backward_host_ns"], 9000);
  EXPECT_EQ(cost["backward_device_ns"], 0);
  EXPECT_EQ(cost["backward_kernels"], 0);
  Profile back = profileFromJson(json, "p.json");
  EXPECT_TRUE(back.hasLaunchData());
  expectLaunch(back.layers[0].costs[1].forwardLaunch, 4004, 3600, 3);
  expectLaunch(back.layers[2].costs[0].backwardLaunch, 9000, 0, 0);
  expectEqual(back, profile);

  std::string path = ::testing::TempDir() + "pipeprof_core_profile_launch_" + std::to_string(::getpid()) + ".json";
  writeProfile(profile, path);
  expectEqual(readProfile(path), profile);
  ::unlink(path.c_str());

  profile.layers[1].costs[0].backwardLaunch.reset();  // in memory a partial profile has no launch data
  EXPECT_FALSE(profile.hasLaunchData());
}

/// The message profileFromJson throws for the launch profile after `edit`.
std::string launchErrorAfter(const std::function<void(nlohmann::json&)>& edit) {
  return errorAfter(edit, launchProfile());
}

TEST(ProfileJson, LaunchDataIsValidated) {
  EXPECT_EQ(launchErrorAfter([](auto&) {}), "no error");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["layers"][0]["costs"][1]["forward_host_ns"] = -1; }),
            "p.json: $.layers[0].costs[1].forward_host_ns: expected a non-negative integer, got -1");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["layers"][1]["costs"][0]["backward_device_ns"] = 2.5; }),
            "p.json: $.layers[1].costs[0].backward_device_ns: expected a non-negative integer, got 2.5");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["layers"][0]["costs"][0]["forward_kernels"] = "3"; }),
            "p.json: $.layers[0].costs[0].forward_kernels: expected a non-negative integer, got \"3\"");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["layers"][0]["costs"][0].erase("forward_kernels"); }),
            "p.json: $.layers[0].costs[0]: missing field 'forward_kernels' (forward_host_ns, forward_device_ns "
            "and forward_kernels come together)");
  EXPECT_EQ(launchErrorAfter([](auto& j) {
              for (const char* field : {"backward_host_ns", "backward_device_ns", "backward_kernels"}) {
                j["layers"][2]["costs"][0].erase(field);
              }
            }),
            "p.json: $.layers[2].costs[0]: missing backward_host_ns, backward_device_ns and backward_kernels (a "
            "sample carries the launch data of both passes or of neither)");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["layers"][0]["costs"][1]["forward_kernels"] = 0; }),
            "p.json: $.layers[0].costs[1].forward_kernels: expected at least 1 kernel for forward_device_ns 3600, "
            "got 0");
  EXPECT_EQ(launchErrorAfter([](auto& j) {
              for (const char* pass : {"forward", "backward"}) {
                for (const char* field : {"_host_ns", "_device_ns", "_kernels"}) {
                  j["layers"][1]["costs"][0].erase(std::string(pass) + field);
                }
              }
            }),
            "p.json: $.layers[1].costs[0]: missing launch data ($.layers[0].costs[0] has it; a profile carries it "
            "on every cost sample or on none)");
  EXPECT_EQ(errorAfter([](auto& j) {
              j["environment"]["device_type"] = "cuda";
              j["layers"][2]["costs"][0]["forward_host_ns"] = 1;
              j["layers"][2]["costs"][0]["forward_device_ns"] = 1;
              j["layers"][2]["costs"][0]["forward_kernels"] = 1;
              j["layers"][2]["costs"][0]["backward_host_ns"] = 1;
              j["layers"][2]["costs"][0]["backward_device_ns"] = 1;
              j["layers"][2]["costs"][0]["backward_kernels"] = 1;
            }),
            "p.json: $.layers[2].costs[0]: unexpected launch data ($.layers[0].costs[0] has none; a profile carries "
            "it on every cost sample or on none)");
  EXPECT_EQ(launchErrorAfter([](auto& j) { j["environment"]["device_type"] = "cpu"; }),
            "p.json: $.layers[0].costs[0].forward_host_ns: expected no launch data on a profile whose "
            "environment.device_type is 'cpu' (launches are a CUDA device's)");
}

TEST(ProfileJson, ReadProfileNamesTheFile) {
  std::string path = ::testing::TempDir() + "pipeprof_core_profile_bad_" + std::to_string(::getpid()) + ".json";
  writeFileAtomically(path, R"J({"schema": "pipeprof.cluster/v1"})J");
  EXPECT_THAT([&] { readProfile(path); },
              ThrowsMessage<FormatError>(
                  StrEq(path + ": $.schema: expected schema 'pipeprof.profile/v1', got 'pipeprof.cluster/v1'")));
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace pipeprof
