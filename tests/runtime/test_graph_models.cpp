// Models scripted and traced as their authors wrote them: forwards split at their submodule calls
// (fixtures: tests/fixtures/make_graph_models.py, which printed the losses checked here).
#include <pipeprof/runtime/models.h>
#include <pipeprof/runtime/pipe.h>

#include "models/graph_split.h"
#include "pipe_test_util.h"
#include "precision_reference.h"
#include "support/fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <string>

namespace pipeprof {
namespace {

using test::close;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kLanguageModel = test::fixturePath("graph_language_model.pt");
const std::string kTracedLanguageModel = test::fixturePath("graph_language_model_traced.pt");
const std::string kResnet = test::fixturePath("graph_resnet.pt");
const std::string kUnet = test::fixturePath("graph_unet.pt");
const std::string kTracedResnet = test::fixturePath("graph_resnet_traced.pt");
const std::string kTracedUnet = test::fixturePath("graph_unet_traced.pt");
const std::string kIntFromACall = test::fixturePath("graph_int_from_a_call.pt");

/// A trace keeps no attributes: the task of the language model as flags.
ModelOptions tracedLanguageTask() {
  ModelOptions options;
  options.inputShape = {6};
  options.inputDtype = "long";
  options.vocabSize = 16;
  options.loss = "next_token";
  return options;
}

ModelOptions optionsFor(const std::string& path) {
  if (path == kTracedLanguageModel) return tracedLanguageTask();
  ModelOptions options;
  if (path == kTracedResnet || path == kTracedUnet) options.inputShape = {3, 8, 8};
  if (path == kTracedResnet) {
    options.loss = "cross_entropy";
    options.numClasses = 5;
  }
  return options;
}

std::string flatName(std::string path) {
  std::replace(path.begin(), path.end(), '.', '_');
  return path;
}

TEST(GraphModels, ALayerBeginsAtEachSubmoduleCallNamedByItsModulePath) {
  EXPECT_THAT(layerNames(buildModel(kLanguageModel)),
              ElementsAre("wte", "wpe", "h.0", "h.1", "h.2", "ln_f", "lm_head"));
  EXPECT_THAT(layerNames(buildModel(kTracedLanguageModel, tracedLanguageTask())),
              ElementsAre("wte", "wpe", "h.0", "h.1", "h.2", "ln_f", "lm_head"));
  // _forward_impl inlined, the Sequentials layer1 and layer2 looked into.
  EXPECT_THAT(layerNames(buildModel(kResnet)),
              ElementsAre("conv1", "relu", "layer1.0", "layer1.1", "layer2.0", "avgpool", "fc"));
  EXPECT_THAT(layerNames(buildModel(kUnet)), ElementsAre("enc1", "enc2", "mid", "dec2", "dec1"));
  // A module wrapping one Sequential is one call; a Sequential, even of one child, is looked into.
  EXPECT_THAT(layerNames(buildModel(test::fixturePath("graph_wrapped.pt"))), ElementsAre("a", "b", "blocks.0"));
  EXPECT_EQ(buildModel(kLanguageModel).sequential->named_children()[2].key(), "h_0");
}

TEST(GraphModels, TheLayersInTurnComputeWhatTheScriptedForwardDoes) {
  const torch::Tensor tokens = torch::arange(12, torch::kLong).reshape({2, 6}) % 16;
  for (const std::string& path : {kLanguageModel, kTracedLanguageModel}) {
    Model model = buildModel(path, optionsFor(path));
    EXPECT_NEAR(model.loss(model.sequential->forward(tokens), tokens.narrow(1, 1, 5)).item<double>(), 6.090548038482666,
                1e-5)
        << path;
  }
  const torch::Tensor images = torch::arange(384, torch::kFloat32).reshape({2, 3, 8, 8}) / 100;
  Model resnet = buildModel(kResnet);
  EXPECT_NEAR(resnet.loss(resnet.sequential->forward(images), torch::tensor({1, 3}, torch::kLong)).item<double>(),
              1.475837230682373, 1e-5);
  Model unet = buildModel(kUnet);
  EXPECT_NEAR(unet.sequential->forward(images).pow(2).mean().item<double>(), 0.5188365578651428, 1e-5);
}

TEST(GraphModels, AMaskEveryBlockUsesTravelsOnceAHop) {
  const GraphSplit split = splitAtSubmoduleCalls(torch::jit::load(kLanguageModel), kLanguageModel);
  ASSERT_EQ(split.pieces.size(), 7u);
  // h.0 pops the mask the embedding layers made and stashes it again for h.1, and so on.
  EXPECT_THAT(split.pieces[2].pops, ElementsAre(HasSubstr(">h.0")));
  EXPECT_THAT(split.pieces[2].stashes, ElementsAre(HasSubstr(">h.1")));
  EXPECT_THAT(split.pieces[3].pops, ElementsAre(HasSubstr(">h.1")));
  EXPECT_THAT(split.pieces[4].stashes, ::testing::IsEmpty());
  // After h.0: the activation as the next layer's input, the mask beside it.
  ASSERT_EQ(split.crossing[2].size(), 2u);
  EXPECT_TRUE(split.crossing[2][0].main);
  EXPECT_FALSE(split.crossing[2][1].main);
  // The tied head reads the embedding's weight: both layers hold it.
  EXPECT_THAT(split.pieces[0].parameters, ElementsAre("wte.weight"));
  EXPECT_THAT(split.pieces[6].parameters, ElementsAre("lm_head.weight"));
}

TEST(GraphModels, ANonTensorValueACallMadeJoinsTheLayersItCrosses) {
  const GraphSplit split = splitAtSubmoduleCalls(torch::jit::load(kIntFromACall), kIntFromACall);
  ASSERT_EQ(split.pieces.size(), 1u);
  EXPECT_EQ(split.pieces[0].path, "width");
  EXPECT_THAT(split.joined,
              ElementsAre(AllOf(HasSubstr("no stage may begin at 'fc'"), HasSubstr("(int, made by prim::CallMethod at"),
                                HasSubstr("make_graph_models.py:"),
                                HasSubstr("is not a tensor and cannot be computed again"))));
  Model model = buildModel(kIntFromACall);
  torch::jit::Module scripted = torch::jit::load(kIntFromACall);
  const torch::Tensor x = torch::randn({3, 4});
  EXPECT_TRUE(torch::equal(model.sequential->forward(x), scripted.forward({x}).toTensor()));
}

TEST(GraphModels, AForwardPipeprofCannotFeedOrWhoseOutputItCannotTrainIsRefused) {
  EXPECT_THAT([] { buildModel(test::fixturePath("graph_two_inputs.pt")); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  AllOf(HasSubstr("graph_two_inputs.pt': forward's argument 'scale' has no default"),
                        HasSubstr("pipeprof gives forward one input, the batch"))));
  EXPECT_THAT([] { buildModel(test::fixturePath("graph_returns_a_tuple.pt")); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(
                  "graph_returns_a_tuple.pt': forward returns Tuple[Tensor, Tensor]; pipeprof trains a forward "
                  "that returns one tensor")));
}

TEST(GraphModels, ASampleShapeTheModelCannotTakeIsRefusedNamingTheLayerThatRefusedIt) {
  ModelOptions options;
  options.inputShape = {5, 7};
  Model model = buildModel(kResnet, options);
  EXPECT_THAT([&] { checkSamplesFit(model); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  AllOf(HasSubstr("graph_resnet.pt': its samples of shape [5, 7] (--input-shape, else its "
                                  "pipeprof_input_shape attribute) do not fit: layer 'conv1' refused an input of shape "
                                  "[2, 5, 7]: "),
                        ::testing::Not(HasSubstr("\n")))));
  EXPECT_TRUE(model.sequential->is_training());
  Model fits = buildModel(kResnet);
  checkSamplesFit(fits);
}

/// A step of the pipe on `balance` gives the scripted module's loss and every parameter's
/// gradient, under every checkpoint mode.
void expectPipeEqualsTheScriptedModule(const std::string& path, const std::vector<std::int64_t>& balance,
                                       ScheduleKind kind, std::int64_t v) {
  const Model task = buildModel(path, optionsFor(path));
  const Batch batch = task.makeBatch(8, 3);
  torch::jit::Module scripted = torch::jit::load(path);
  torch::Tensor expected = task.loss(scripted.forward({batch.input.clone()}).toTensor(), batch.target);
  expected.backward();
  std::map<std::string, torch::Tensor> expectedGrads;
  for (const auto& parameter : scripted.named_parameters(/*recurse=*/true)) {
    expectedGrads[flatName(parameter.name)] = parameter.value.grad();
  }
  PipeOptions options;
  options.chunks = 4;
  options.schedule = kind;
  options.stagesPerDevice = v;
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    SCOPED_TRACE(path + " " + scheduleKindName(kind) + " " + std::string(checkpointName(mode)));
    options.checkpoint = mode;
    Model split = buildModel(path, optionsFor(path));
    Pipe pipe(split.sequential, balance, options);
    const torch::Tensor loss = pipe.step(batch.input, batch.target, split.loss);
    ASSERT_TRUE(close(loss, expected.detach())) << loss << expected;
    std::size_t compared = 0;
    for (const auto& parameter : split.sequential->named_parameters()) {
      const std::string name = parameter.key().substr(parameter.key().find('.') + 1);
      ASSERT_EQ(expectedGrads.count(name), 1u) << name;
      ASSERT_TRUE(close(parameter.value().grad(), expectedGrads.at(name))) << name;
      ++compared;
    }
    EXPECT_GE(compared, expectedGrads.size());
  }
}

/// Every family of schedules, each under every checkpoint mode: those of one stage per device on
/// `oneStagePerDevice`, the others (v = 2) on `twoStagesPerDevice`.
void expectEveryScheduleEqualsTheScriptedModule(const std::string& path,
                                                const std::vector<std::int64_t>& oneStagePerDevice,
                                                const std::vector<std::int64_t>& twoStagesPerDevice) {
  for (ScheduleKind kind : kScheduleKinds) {
    const std::int64_t v = hasVirtualStages(kind) ? 2 : 1;
    expectPipeEqualsTheScriptedModule(path, v == 2 ? twoStagesPerDevice : oneStagePerDevice, kind, v);
  }
}

TEST(GraphModels, AGptStyleModelsPipeGivesTheScriptedModulesLossAndGradients) {
  for (const std::string& path : {kLanguageModel, kTracedLanguageModel}) {
    expectPipeEqualsTheScriptedModule(path, {2, 2, 3}, ScheduleKind::GPipe, 1);
    expectEveryScheduleEqualsTheScriptedModule(path, {3, 4}, {1, 2, 2, 2});
  }
}

TEST(GraphModels, ATorchvisionStyleResnetsPipeGivesTheScriptedModulesLossAndGradients) {
  for (const std::string& path : {kResnet, kTracedResnet}) {
    EXPECT_THAT(layerNames(buildModel(path, optionsFor(path))),
                ElementsAre("conv1", "relu", "layer1.0", "layer1.1", "layer2.0", "avgpool", "fc"));
    expectPipeEqualsTheScriptedModule(path, {2, 3, 2}, ScheduleKind::GPipe, 1);
    expectEveryScheduleEqualsTheScriptedModule(path, {3, 4}, {2, 2, 2, 1});
  }
}

TEST(GraphModels, AUnetsEncoderOutputsReachTheDecoderLayersSeveralStagesOn) {
  expectPipeEqualsTheScriptedModule(kUnet, {1, 1, 1, 2}, ScheduleKind::GPipe, 1);
  expectPipeEqualsTheScriptedModule(kUnet, {1, 1, 1, 1, 1}, ScheduleKind::ZeroBubble, 1);
  for (const std::string& path : {kUnet, kTracedUnet})
    expectEveryScheduleEqualsTheScriptedModule(path, {1, 4}, {1, 1, 2, 1});
}

/// The running statistics of the model's batch norms (by module path, "stem.bn.running_mean").
std::map<std::string, torch::Tensor> runningStatistics(const torch::jit::Module& scripted) {
  std::map<std::string, torch::Tensor> statistics;
  for (const auto& buffer : scripted.named_buffers(/*recurse=*/true)) statistics[flatName(buffer.name)] = buffer.value;
  return statistics;
}

// Deferred batch norm reaches the batch norms a graph's submodules run: after one step of 4
// micro-batches their running statistics have moved once, by momentum, towards the mean and
// unbiased variance of all that each got (one more batch counted), not 4 times; and a recompute
// adds nothing. stem.bn gets the convolution of the batch: one forward of the scripted module
// over the whole batch updates it so. body.bn gets what stem.bn made of each micro-batch.
TEST(GraphModels, DeferredBatchNormUpdatesTheGraphsBatchNormsOncePerMiniBatch) {
  const std::string path = test::fixturePath("graph_batch_norm.pt");
  const Model task = buildModel(path);
  const Batch batch = task.makeBatch(8, 3);
  torch::jit::Module scripted = torch::jit::load(path);
  scripted.train();
  std::map<std::string, torch::Tensor> expected = runningStatistics(scripted);
  ASSERT_EQ(expected.size(), 6u);  // two batch norms: mean, variance, count
  std::vector<torch::Tensor> bodyInputs;
  for (const torch::Tensor& x : torch::chunk(batch.input, 4)) {
    torch::jit::Module probe = torch::jit::load(path);  // its stem.bn normalises each micro-batch alone
    probe.train();
    const torch::Tensor stem = probe.attr("stem").toModule().forward({x}).toTensor();
    bodyInputs.push_back(probe.attr("body").toModule().attr("conv").toModule().forward({stem}).toTensor().detach());
  }
  const torch::Tensor bodyInput = torch::cat(bodyInputs);
  expected["body_bn_running_mean"] = expected["body_bn_running_mean"] * 0.9 + bodyInput.mean({0, 2, 3}) * 0.1;
  expected["body_bn_running_var"] =
      expected["body_bn_running_var"] * 0.9 + bodyInput.var({0, 2, 3}, /*unbiased=*/true) * 0.1;
  expected["body_bn_num_batches_tracked"] = expected["body_bn_num_batches_tracked"] + 1;
  scripted.forward({batch.input});
  for (const std::string statistic : {"running_mean", "running_var", "num_batches_tracked"}) {
    expected["stem_bn_" + statistic] = runningStatistics(scripted).at("stem_bn_" + statistic);
  }
  for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always}) {
    SCOPED_TRACE(checkpointName(mode));
    Model model = buildModel(path);
    PipeOptions options;
    options.chunks = 4;
    options.checkpoint = mode;
    options.deferredBatchNorm = true;
    Pipe pipe(model.sequential, {1, 2}, options);
    pipe.step(batch.input, batch.target, model.loss);
    std::size_t compared = 0;
    for (const auto& buffer : model.sequential->named_buffers()) {
      const std::string name = buffer.key().substr(buffer.key().find('.') + 1);
      ASSERT_EQ(expected.count(name), 1u) << name;
      EXPECT_TRUE(torch::allclose(buffer.value(), expected.at(name), 1e-4, 1e-5))
          << name << buffer.value() << expected.at(name);
      ++compared;
    }
    EXPECT_EQ(compared, expected.size());
  }
  // Without it each micro-batch moves them: 4 batches counted.
  Model model = buildModel(path);
  PipeOptions options;
  options.chunks = 4;
  options.checkpoint = Checkpoint::Never;  // (a recompute would count its batches again, as torch's checkpoint does)
  Pipe pipe(model.sequential, {1, 2}, options);
  pipe.step(batch.input, batch.target, model.loss);
  for (const auto& buffer : model.sequential->named_buffers()) {
    if (buffer.key().find("num_batches_tracked") != std::string::npos) {
      EXPECT_EQ(buffer.value().item<std::int64_t>(), 4) << buffer.key();
    }
  }
}

// A batch norm that runs only when the data says so has no input the graph can always hand out.
TEST(GraphModels, DeferredBatchNormRefusesABatchNormInsideControlFlowNamingIt) {
  Model model = buildModel(test::fixturePath("graph_batch_norm_in_a_branch.pt"));
  PipeOptions options;
  options.deferredBatchNorm = true;
  EXPECT_THAT(
      [&] {
        Pipe pipe(model.sequential, {1, 1}, options);
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("deferred batch norm cannot reach the batch norm 'bn' in layer 'conv': it runs inside "
                    "control flow of the graph; turn deferredBatchNorm off")));
  options.deferredBatchNorm = false;
  Pipe pipe(model.sequential, {1, 1}, options);  // without it, nothing to refuse
}

/// The scripted module trained as a pipeline trains it: per step, the micro-batches' forwards and
/// losses under autocast (each loss weighed by its share of the rows), their backwards outside
/// it, then AdamW (test::adamwWithDecay) over its parameters, each once (the tied head's weight
/// is the embedding's).
std::vector<double> scriptedModuleLosses(const std::string& path, const test::ReferenceTraining& reference) {
  const Model task = buildModel(path, optionsFor(path));
  const Batch batch = task.makeBatch(reference.batch, reference.dataSeed);
  torch::jit::Module scripted = torch::jit::load(path);
  scripted.train();
  std::vector<torch::Tensor> parameters;
  for (const torch::Tensor& p : scripted.parameters()) {
    const bool seen =
        std::any_of(parameters.begin(), parameters.end(), [&](const torch::Tensor& q) { return q.is_same(p); });
    if (!seen) parameters.push_back(p);
  }
  const std::unique_ptr<torch::optim::Optimizer> optimizer = makeOptimizer(test::adamwWithDecay(), parameters);
  const std::vector<torch::Tensor> inputs = torch::chunk(batch.input, reference.chunks);
  const std::vector<torch::Tensor> targets = torch::chunk(batch.target, reference.chunks);
  const torch::jit::GraphOptimizerEnabledGuard plain(false);  // as the graph's layers run
  std::vector<double> losses;
  for (std::int64_t s = 0; s < reference.steps; ++s) {
    optimizer->zero_grad();
    double total = 0;
    AutocastScope autocast(reference.precision, torch::kCPU);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const double weight = static_cast<double>(inputs[i].size(0)) / static_cast<double>(reference.batch);
      torch::Tensor loss = task.loss(scripted.forward({inputs[i]}).toTensor(), targets[i]) * weight;
      AutocastPause pause;
      loss.backward();
      total += loss.item<double>();
    }
    losses.push_back(total);
    optimizer->step();
  }
  return losses;
}

// AdamW and bf16 autocast go through a graph model as through a Sequential: the GPT-style LM's
// pipeline, its tied head on both devices, trains as the scripted module does, and the two
// copies of the tied weight stay bit-identical.
TEST(GraphModels, AGraphModelTrainsWithAdamWUnderBf16AsTheScriptedModule) {
  const test::ReferenceTraining reference = test::referenceTraining(torch::kCPU, Precision::Bf16);
  const std::vector<double> expected = scriptedModuleLosses(kLanguageModel, reference);
  const std::vector<double> fp32 =
      scriptedModuleLosses(kLanguageModel, test::referenceTraining(torch::kCPU, Precision::Fp32));
  EXPECT_GT(std::abs(fp32.front() - expected.front()), 1e-5 * std::abs(expected.front())) << "bf16 is in effect";
  for (const test::ScheduleCase& schedule :
       {test::ScheduleCase{ScheduleKind::OneFOneB, {3, 4}, 1, Checkpoint::ExceptLast},
        test::ScheduleCase{ScheduleKind::ZeroBubble, {4, 3}, 1, Checkpoint::Never}}) {
    Model model = buildModel(kLanguageModel);
    const TrainingResult result =
        trainAndMeasure(model, test::pipelineTraining(reference, schedule, {torch::kCPU, torch::kCPU}));
    test::expectSameLosses(result.losses, expected, schedule.label(), 1e-5);
    const auto named = model.sequential->named_parameters();
    ASSERT_FALSE(named["lm_head.lm_head_weight"].is_same(named["wte.wte_weight"])) << "a replica on the second device";
    EXPECT_TRUE(torch::equal(named["lm_head.lm_head_weight"], named["wte.wte_weight"])) << schedule.label();
  }
}

}  // namespace
}  // namespace pipeprof
