// Tests for rank_job.h: the job's JSON form read back, the reader's errors, and the per-rank names.
#include <pipeprof/core/json_file.h>
#include <pipeprof/launch/rank_job.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace pipeprof::launch {
namespace {

using ::testing::HasSubstr;

RankJob trainJob() {
  RankJob job;
  job.model.name = "mlp";
  job.model.options.width = 16;
  job.model.options.depth = 3;
  job.model.options.seed = 7;
  job.model.threads = 2;
  job.candidate.balance = {1, 1, 1, 2};
  job.candidate.schedule = ScheduleKind::Interleaved;
  job.candidate.stagesPerDevice = 2;
  job.candidate.chunks = 4;
  job.candidate.checkpoint = Checkpoint::Never;
  job.candidate.batch = 8;
  job.devices = {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")};
  job.steps = 3;
  job.warmupSteps = 1;
  job.optimizer.kind = OptimizerKind::AdamW;
  job.optimizer.learningRate = 0.5;
  job.optimizer.beta2 = 0.99;
  job.tracePath = "/tmp/t.json";
  job.cuptiMode = CuptiMode::Exact;
  job.timeout = std::chrono::milliseconds(2500);
  job.cpuBinding = CpuBinding::Cores;
  job.rankCpus = {{0, 1}, {}};
  job.resultDir = "/tmp/results";
  return job;
}

/// The message of the FormatError that reading `json` throws ("" when it reads).
std::string readError(const nlohmann::json& json) {
  try {
    rankJobFromJson(json, "job.json");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "";
}

TEST(RankJob, ATrainJobReadsBackAsWritten) {
  const RankJob job = trainJob();
  const nlohmann::json json = toJson(job);
  EXPECT_EQ(json.at("schema"), "pipeprof.rank-job/v1");
  EXPECT_EQ(json.at("kind"), "train");
  EXPECT_EQ(json.at("rank_cpus"), nlohmann::json::array({"0-1", ""}));
  const RankJob back = rankJobFromJson(json, "job.json");
  EXPECT_EQ(back.kind, RankJobKind::Train);
  EXPECT_EQ(back.model.name, "mlp");
  EXPECT_EQ(back.model.options.width, 16);
  EXPECT_EQ(back.model.options.depth, 3);
  EXPECT_EQ(back.model.options.seed, 7);
  EXPECT_EQ(back.model.threads, 2);
  EXPECT_EQ(back.candidate, job.candidate);
  EXPECT_EQ(back.devices, job.devices);
  EXPECT_EQ(back.steps, 3);
  EXPECT_EQ(back.warmupSteps, 1);
  EXPECT_EQ(back.optimizer, job.optimizer);
  EXPECT_EQ(json.at("optimizer").at("kind"), "adamw");
  EXPECT_EQ(back.tracePath, "/tmp/t.json");
  EXPECT_EQ(back.cuptiMode, CuptiMode::Exact);
  EXPECT_EQ(back.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(back.cpuBinding, CpuBinding::Cores);
  EXPECT_EQ(back.rankCpus, job.rankCpus);
  EXPECT_EQ(back.resultDir, "/tmp/results");
  EXPECT_EQ(toJson(back), json);
}

TEST(RankJob, AnImportedModelsTaskReadsBackAsWritten) {
  RankJob job = trainJob();
  job.model.name = "lm.pt";
  job.model.options = {};
  job.model.options.inputShape = {6};
  job.model.options.inputDtype = "long";
  job.model.options.vocabSize = 16;
  job.model.options.loss = "next_token";
  job.model.options.numClasses = 3;
  const nlohmann::json json = toJson(job);
  EXPECT_EQ(json.at("model").at("loss"), "next_token");
  const RankJob back = rankJobFromJson(json, "job.json");
  EXPECT_EQ(back.model.options.inputShape, std::vector<std::int64_t>{6});
  EXPECT_EQ(back.model.options.inputDtype, "long");
  EXPECT_EQ(back.model.options.vocabSize, 16);
  EXPECT_EQ(back.model.options.loss, "next_token");
  EXPECT_EQ(back.model.options.numClasses, 3);
  EXPECT_EQ(toJson(back), json);
  // A zoo model's job names none of them; gpt's tie is a flag of its own.
  EXPECT_FALSE(toJson(trainJob()).at("model").contains("loss"));
  RankJob tied = trainJob();
  tied.model.options.tieEmbeddings = true;
  EXPECT_TRUE(rankJobFromJson(toJson(tied), "job.json").model.options.tieEmbeddings);
  EXPECT_FALSE(toJson(trainJob()).at("model").contains("tie_embeddings"));
}

TEST(RankJob, ALinkJobReadsBackThroughItsFile) {
  RankJob job;
  job.kind = RankJobKind::LinkBenchmark;
  job.linkDevice = "cuda";
  job.repeats = 3;
  const std::string path = (std::filesystem::temp_directory_path() / "pipeprof_rank_job_link.json").string();
  writeRankJob(job, path);
  const RankJob back = readRankJob(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.kind, RankJobKind::LinkBenchmark);
  EXPECT_EQ(back.linkDevice, "cuda");
  EXPECT_EQ(back.repeats, 3);
  EXPECT_TRUE(back.devices.empty());
}

TEST(RankJob, TheReaderNamesTheFileThePathAndWhatWasExpected) {
  const nlohmann::json good = toJson(trainJob());
  EXPECT_EQ(readError(good), "");
  nlohmann::json bad = good;
  bad["schema"] = "pipeprof.rank-job/v9";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.schema"));
  bad = good;
  bad["kind"] = "dance";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.kind: expected \"train\" or \"link_benchmark\", got \"dance\""));
  bad = good;
  bad["devices"] = {"cpu", "cpu", "cpu"};
  EXPECT_THAT(readError(bad),
              HasSubstr("job.json: $.devices: expected one device per pipeline device of the candidate (2), got 3"));
  bad = good;
  bad["devices"][1] = "tpu";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.devices[1]"));
  bad = good;
  bad["rank_cpus"][0] = "3-1";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.rank_cpus[0]: '3-1' is not a CPU list"));
  bad = good;
  bad["candidate"]["chunks"] = 0;
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.candidate.chunks"));
  bad = good;
  bad["cupti_mode"] = "full";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.cupti_mode: unknown CUPTI mode 'full'"));
  bad = good;
  bad.erase("steps");
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $"));
  EXPECT_THAT(readError(bad), HasSubstr("steps"));
  bad = good;
  bad["timeout_ms"] = 0;
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.timeout_ms"));
  bad = good;
  bad["optimizer"]["kind"] = "lion";
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.optimizer.kind: invalid optimizer 'lion'"));
  bad = good;
  bad["optimizer"]["betas"] = {0.9, 1.0};
  EXPECT_THAT(readError(bad), HasSubstr("job.json: $.optimizer: beta2 must be in [0, 1), got 1"));
}

TEST(RankJob, EachRankHasItsOwnTraceResultAndStages) {
  EXPECT_EQ(rankTracePath("out/t.json", 1), "out/t.rank1.json");
  EXPECT_EQ(rankResultPath("/tmp/r", 0), "/tmp/r/rank0.json");
  Candidate interleaved;
  interleaved.balance = {1, 1, 1, 2};
  interleaved.stagesPerDevice = 2;
  EXPECT_EQ(rankStagesText(0, interleaved), "stages 0,2");
  EXPECT_EQ(rankStagesText(1, interleaved), "stages 1,3");
  Candidate two;
  two.balance = {2, 3};
  EXPECT_EQ(rankStagesText(1, two), "stage 1");
}

}  // namespace
}  // namespace pipeprof::launch
