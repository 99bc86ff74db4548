// End-to-end: models scripted and traced as their authors wrote them (a GPT-style LM with a
// ModuleList and a tied head, a ResNet, a U-Net; tests/fixtures/make_graph_models.py) through
// `models`, `run` threaded and with one process per stage, `sweep` and `export`.
#include "support/fixtures.h"
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof {
namespace {

using test::pipeprof;
using test::ProcessResult;

const std::string kFixtures = test::fixturePath("");
const std::string kLanguageModel = kFixtures + "graph_language_model.pt";
const std::string kRun =
    " --batch 8 --chunks 4 --seed 7 --lr 0.5 --warmup 1 --steps 2 --threads 1 --timeout 30 --json ";

nlohmann::json lastJson(const std::string& out) { return nlohmann::json::parse(out.substr(out.find("\n{") + 1)); }

/// The losses of `pipeprof run` of the model (a fixture and its flags; the LM by default).
std::vector<double> losses(const std::string& flags, const std::string& model = kLanguageModel) {
  const ProcessResult r = pipeprof("run --model " + model + kRun + flags);
  EXPECT_EQ(r.code, 0) << flags << "\n" << r.all;
  if (r.code != 0) return {};
  return lastJson(r.all).at("losses").get<std::vector<double>>();
}

TEST(GraphModelsE2E, ModelsListsTheLayersByModulePathAndWhatCrossesEachCut) {
  const ProcessResult r = pipeprof("models " + kLanguageModel + " --json");
  ASSERT_EQ(r.code, 0) << r.all;
  const nlohmann::json listing = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& layer : listing.at("layers")) names.push_back(layer.at("name"));
  EXPECT_EQ(names, (std::vector<std::string>{"wte", "wpe", "h.0", "h.1", "h.2", "ln_f", "lm_head"}));
  EXPECT_EQ(listing.at("layers")[2].at("crossing"), nlohmann::json::array({"output", "mask.1>h.1"}));
  EXPECT_EQ(listing.at("layers")[6].at("crossing"), nlohmann::json::array());
  EXPECT_EQ(listing.at("unsplittable"), nlohmann::json::array());

  const ProcessResult joined = pipeprof("models " + kFixtures + "graph_int_from_a_call.pt");
  ASSERT_EQ(joined.code, 0) << joined.all;
  EXPECT_NE(joined.out.find("no stage may begin at 'fc': the value 'n.1' (int, made by prim::CallMethod at "),
            std::string::npos)
      << joined.out;
  const ProcessResult refused = pipeprof("models " + kFixtures + "graph_two_inputs.pt");
  EXPECT_EQ(refused.code, 2) << refused.all;
  EXPECT_NE(refused.all.find("forward's argument 'scale' has no default"), std::string::npos) << refused.all;
  const ProcessResult shape = pipeprof("profile --model " + kFixtures + "graph_resnet.pt --input-shape 5,7");
  EXPECT_EQ(shape.code, 2) << shape.all;
  EXPECT_NE(shape.all.find("layer 'conv1' refused an input of shape [2, 5, 7]"), std::string::npos) << shape.all;
}

TEST(GraphModelsE2E, OneProcessPerStageTrainsToTheThreadedPipesLossesWithTheTiedHeadAcrossRanks) {
  for (const std::string schedule :
       {"1f1b --split-at h.1", "zb1p --split-at h.1", "interleaved-zb --split-at h.0,h.1,ln_f"}) {
    const std::vector<double> threaded = losses("--devices cpu,cpu --schedule " + schedule);
    const std::vector<double> ranks = losses("--procs 2 --schedule " + schedule);
    ASSERT_EQ(threaded.size(), 3u) << schedule;
    ASSERT_EQ(ranks.size(), threaded.size()) << schedule;
    for (std::size_t s = 0; s < threaded.size(); ++s) {
      EXPECT_NEAR(ranks[s], threaded[s], 1e-5 * std::abs(threaded[s])) << schedule << ", step " << s;
    }
    EXPECT_LT(threaded.back(), threaded.front()) << "it trains";
  }
}

// The ResNet and the U-Net, scripted and traced: one process per stage trains to the threaded
// pipe's losses (which test_graph_models.cpp holds to the whole model's), the U-Net's skips
// crossing ranks.
TEST(GraphModelsE2E, ConvNetsScriptedAndTracedTrainOnOneProcessPerStageAsThreaded) {
  const std::vector<std::pair<std::string, std::string>> models = {
      {kFixtures + "graph_resnet.pt", "--schedule 1f1b --split-at layer2.0"},
      {kFixtures + "graph_resnet_traced.pt --input-shape 3,8,8", "--schedule zb1p --split-at layer2.0"},
      {kFixtures + "graph_unet.pt", "--schedule 1f1b --split-at mid"},
      {kFixtures + "graph_unet.pt", "--schedule zbv --split-at enc2,mid,dec1"},
      {kFixtures + "graph_unet_traced.pt --input-shape 3,8,8", "--schedule interleaved --split-at enc2,mid,dec1"}};
  for (const auto& [model, flags] : models) {
    const std::vector<double> threaded = losses("--devices cpu,cpu " + flags, model);
    const std::vector<double> ranks = losses("--procs 2 " + flags, model);
    ASSERT_EQ(threaded.size(), 3u) << model;
    ASSERT_EQ(ranks.size(), threaded.size()) << model;
    for (std::size_t s = 0; s < threaded.size(); ++s) {
      EXPECT_NEAR(ranks[s], threaded[s], 1e-5 * std::abs(threaded[s])) << model << " " << flags << ", step " << s;
    }
  }
}

TEST(GraphModelsE2E, ASweepMeasuresItsCandidates) {
  const std::string report = ::testing::TempDir() + "graph_sweep_report.json";
  const ProcessResult r = pipeprof("sweep --model " + kLanguageModel +
                                   " --devices cpu,cpu --batch 8 --chunks 2 --schedules gpipe,1f1b --measure top:2 "
                                   "--steps 2 --warmup 1 --rounds 1 --profile-budget 1 --calibration-budget 1 -o " +
                                   report);
  ASSERT_EQ(r.code, 0) << r.all;
  EXPECT_NE(r.all.find("measured candidates:      2"), std::string::npos) << r.all;

  // The suggestion as PyTorch's configuration: the stages' module paths and split points.
  const ProcessResult exported = pipeprof("export " + report);
  ASSERT_EQ(exported.code, 0) << exported.all;
  const nlohmann::json config = nlohmann::json::parse(exported.out);
  std::vector<std::string> layers;
  for (const auto& part : config.at("module_fqns_per_model_part")) {
    for (const auto& name : part) layers.push_back(name);
  }
  EXPECT_EQ(layers, (std::vector<std::string>{"wte", "wpe", "h.0", "h.1", "h.2", "ln_f", "lm_head"}));
  ASSERT_EQ(config.at("split_spec").size(), 1u);
  EXPECT_EQ(config.at("split_spec").begin().key(), config.at("module_fqns_per_model_part")[1][0]);
  EXPECT_EQ(config.at("num_pp_microbatches"), 2);
  EXPECT_TRUE(config.at("pipeline_parallel_schedule") == "GPipe" || config.at("pipeline_parallel_schedule") == "1F1B")
      << config;

  // The GUI opens the report and tunes it: its tuning view re-simulates from the report's profile,
  // whose layers are the model's module paths.
  const std::string gui = std::string(PIPEPROF_BINARY_DIR) + "/gui/pipeprof-gui";
  if (::access(gui.c_str(), X_OK) != 0) GTEST_SKIP() << "pipeprof-gui is not built here";
  const std::string png = ::testing::TempDir() + "graph_sweep_tuning.png";
  const ProcessResult shot =
      test::runProcess({gui, report, "--view", "tuning", "--screenshot", png}, {{"QT_QPA_PLATFORM", "offscreen"}});
  ASSERT_EQ(shot.code, 0) << shot.all;
  EXPECT_GT(test::readFile(png).size(), 1000u);
}

}  // namespace
}  // namespace pipeprof
