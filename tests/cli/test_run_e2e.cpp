// End-to-end tests of `pipeprof run` under every schedule (the losses of the steps, the schedule flags' errors) and of
// `schedule export`.
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof {
namespace {

using test::pipeprof;
using test::ProcessResult;

// mlp --width 16 --depth 3: fc0 relu0 fc1 relu1 fc2 = 5 layers; batch 8 in 2 micro-batches.
const std::string kRun = "run --model mlp --width 16 --depth 3 --batch 8 --chunks 2 --devices cpu,cpu --seed 7 "
                         "--lr 0.5 --warmup 1 --steps 3 --threads 1 --json ";

std::vector<double> losses(const std::string& flags) {
  const ProcessResult r = pipeprof(kRun + flags);
  EXPECT_EQ(r.code, 0) << flags << "\n" << r.all;
  if (r.code != 0) return {};
  const nlohmann::json json = nlohmann::json::parse(r.all.substr(r.all.find('{')));
  return json.at("losses").get<std::vector<double>>();
}

TEST(RunE2E, EveryScheduleAndBalanceTrainsToTheSameLosses) {
  // The same model (seed), batch and chunks: every schedule computes the same gradients, so the
  // SGD steps and the losses agree up to float rounding.
  const std::vector<double> gpipe = losses("--balance 2,3 --schedule gpipe --checkpoint except_last");
  ASSERT_EQ(gpipe.size(), 4u) << "one loss per step, the warm-up step included";
  EXPECT_LT(gpipe.back(), gpipe.front()) << "the steps train: the loss falls";
  const std::string others[] = {
      "--balance 3,2 --schedule 1f1b --checkpoint except_last",
      "--balance 2,3 --schedule 1f1b --checkpoint never",
      "--balance 1,1,1,2 --schedule interleaved --stages-per-device 2 --checkpoint except_last",
      "--balance 2,1,1,1 --schedule interleaved --stages-per-device 2 --checkpoint always",
      "--balance 2,3 --schedule zb1p --checkpoint except_last",
      "--balance 1,1,1,2 --schedule interleaved-zb --stages-per-device 2 --checkpoint always",
      "--balance 1,2,1,1 --schedule zbv --checkpoint never",
  };
  for (const std::string& flags : others) {
    const std::vector<double> other = losses(flags);
    ASSERT_EQ(other.size(), gpipe.size()) << flags;
    for (std::size_t s = 0; s < gpipe.size(); ++s) {
      EXPECT_NEAR(other[s], gpipe[s], 1e-5 * std::abs(gpipe[s]) + 1e-7) << flags << ", step " << s;
    }
  }
}

TEST(RunE2E, JsonAndTextNameTheScheduleAndThePerDevicePeaks) {
  const ProcessResult json = pipeprof(kRun + "--balance 1,1,1,2 --schedule interleaved");
  ASSERT_EQ(json.code, 0) << json.all;
  const nlohmann::json out = nlohmann::json::parse(json.all.substr(json.all.find('{')));
  EXPECT_EQ(out.at("schedule"), "interleaved");
  EXPECT_EQ(out.at("stages_per_device"), 2) << "interleaved defaults to 2 stages per device";
  EXPECT_EQ(out.at("candidate").at("stages_per_device"), 2);
  EXPECT_EQ(out.at("peak_bytes").size(), 2u) << "one peak per pipeline device, not per stage";

  std::string text = kRun + "--balance 3,2 --schedule 1f1b";
  text.replace(text.find("--json"), 6, "");
  const ProcessResult r = pipeprof(text);
  ASSERT_EQ(r.code, 0) << r.all;
  EXPECT_NE(r.all.find("schedule 1f1b"), std::string::npos) << r.all;
  EXPECT_NE(r.all.find("loss: "), std::string::npos) << r.all;
  EXPECT_NE(r.all.find("device 1 "), std::string::npos) << r.all;
}

TEST(RunE2E, CpuBindCoresPutsEachDevicesWorkerOnCpusOfItsOwnAndTrainsAlike) {
  const std::vector<double> unbound = losses("--balance 2,3 --schedule 1f1b");
  const std::vector<double> bound = losses("--balance 2,3 --schedule 1f1b --cpu-bind cores");
  EXPECT_EQ(bound, unbound) << "where a worker runs changes no arithmetic";
  std::string text = kRun + "--balance 2,3 --schedule 1f1b --cpu-bind cores";
  text.replace(text.find("--json"), 6, "");
  const ProcessResult r = pipeprof(text);
  ASSERT_EQ(r.code, 0) << r.all;
  const bool twoCpus = std::thread::hardware_concurrency() >= 2;
  EXPECT_NE(r.all.find(twoCpus ? "workers: device by device on CPU " : "workers: sharing the CPUs"), std::string::npos)
      << r.all;
}

TEST(RunE2E, TheOptimizerAskedForTrainsAndIsReported) {
  const std::string flags = "--balance 2,3 --schedule 1f1b ";
  const std::vector<double> sgd = losses(flags);
  const ProcessResult r = pipeprof(kRun + flags + "--optimizer adamw --betas 0.8,0.99");
  ASSERT_EQ(r.code, 0) << r.all;
  const nlohmann::json out = nlohmann::json::parse(r.all.substr(r.all.find('{')));
  EXPECT_EQ(out.at("optimizer").at("kind"), "adamw");
  EXPECT_EQ(out.at("optimizer").at("weight_decay"), 0.01) << "PyTorch's default for adamw";
  EXPECT_EQ(out.at("optimizer").at("betas"), nlohmann::json::array({0.8, 0.99}));
  const auto adamw = out.at("losses").get<std::vector<double>>();
  ASSERT_EQ(adamw.size(), sgd.size());
  EXPECT_DOUBLE_EQ(adamw.front(), sgd.front()) << "the same start";
  EXPECT_NE(adamw.back(), sgd.back()) << "another update";

  std::string text = kRun + flags + "--optimizer momentum";
  text.replace(text.find("--json"), 6, "");
  const ProcessResult momentum = pipeprof(text);
  ASSERT_EQ(momentum.code, 0) << momentum.all;
  EXPECT_NE(momentum.all.find("optimizer: momentum (lr 0.5, weight decay 0, momentum 0.9), precision fp32"),
            std::string::npos)
      << momentum.all;
}

TEST(RunE2E, Bf16TrainsUnderAutocastAndIsReported) {
  const std::string flags = "--balance 2,3 --schedule 1f1b ";
  const std::vector<double> fp32 = losses(flags);
  const ProcessResult r = pipeprof(kRun + flags + "--precision bf16");
  ASSERT_EQ(r.code, 0) << r.all;
  const nlohmann::json out = nlohmann::json::parse(r.all.substr(r.all.find('{')));
  EXPECT_EQ(out.at("precision"), "bf16");
  const auto bf16 = out.at("losses").get<std::vector<double>>();
  ASSERT_EQ(bf16.size(), fp32.size());
  EXPECT_NE(bf16.front(), fp32.front()) << "another arithmetic from the first step";
  EXPECT_NEAR(bf16.front(), fp32.front(), 0.05 * fp32.front()) << "but the same model";
}

TEST(RunE2E, BadTrainingStepFlagsAreUsageErrorsNamingTheFlag) {
  const std::pair<std::string, std::string> cases[] = {
      {"--optimizer lion", "--optimizer: invalid optimizer 'lion': expected one of sgd, momentum, adam, adamw"},
      {"--optimizer adamw --weight-decay -1", "--weight-decay: weight decay must not be negative, got -1"},
      {"--betas 0.9,0.99", "--betas applies to adam and adamw, not --optimizer sgd"},
      {"--optimizer adam --betas 1,0.9", "--betas: beta1 must be in [0, 1), got 1"},
      {"--precision half", "--precision: invalid precision 'half': expected one of fp32, bf16, fp16"},
      {"--precision fp16", "--precision fp16 needs CUDA devices, got cpu"},
  };
  for (const auto& [flags, message] : cases) {
    const ProcessResult r = pipeprof(kRun + "--balance 2,3 " + flags);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.all;
    EXPECT_NE(r.all.find(message), std::string::npos) << flags << "\n" << r.all;
  }
}

TEST(RunE2E, BadScheduleFlagsAreUsageErrorsNamingTheValue) {
  struct Case {
    std::string flags;
    std::string message;
  };
  const Case cases[] = {
      {"--balance 2,3 --schedule zigzag", "--schedule zigzag"},
      {"--balance 1,1,1,2 --schedule interleaved --stages-per-device 0", "--stages-per-device 0"},
      {"--balance 2,3 --schedule 1f1b --stages-per-device 2", "--schedule 1f1b runs one stage per device"},
      {"--balance 2,3 --schedule interleaved", "--balance 2,3 has 2 stages but --devices cpu,cpu names 2 devices"},
      {"--balance 1,1,1,2 --schedule interleaved --chunks 3", "--chunks 3: interleaved needs chunks a multiple of"},
  };
  for (const Case& c : cases) {
    std::string args = kRun + c.flags;
    if (c.flags.find("--chunks") != std::string::npos) args.replace(args.find("--chunks 2"), 10, "");
    const ProcessResult r = pipeprof(args);
    EXPECT_EQ(r.code, 2) << c.flags << "\n" << r.all;
    EXPECT_NE(r.all.find(c.message), std::string::npos) << c.flags << "\n" << r.all;
  }
}

TEST(RunE2E, ACountTypedOutOfRangeIsAnErrorNotTheDefault) {
  // 0 used to be taken for "the model's default" without a word.
  struct Case {
    std::string command;
    std::string message;
  };
  const Case cases[] = {
      {"run --model mlp --batch 0", "--batch: must be an integer of at least 1, got 0 (leave the flag out for the "
                                    "model's default batch)"},
      {"run --model mlp --batch -4", "--batch: must be an integer of at least 1, got -4"},
      {"run --model mlp --width 0", "--width: must be an integer of at least 1, got 0"},
      {"run --model mlp --threads 0", "--threads: must be an integer of at least 1, got 0"},
      {"sweep --model mlp --batch 0 -o /nonexistent/never.json", "--batch: must be an integer of at least 1, got 0"},
      {"sweep --model mlp --depth 0 -o /nonexistent/never.json", "--depth: must be an integer of at least 1, got 0"},
      {"calibrate --model mlp --batch 0", "--batch: must be an integer of at least 1, got 0"},
      {"profile --model mlp --batch 0", "--batch: must be an integer of at least 1, got 0"},
      {"simulate --profile p.json --batch 8 --balance 1,1 --devices 0", "--devices: must be an integer of at least 1"},
      {"suggest --profile p.json --batch 8 --pipeline-devices 0",
       "--pipeline-devices: must be an integer of at least 1"},
      {"suggest --profile p.json --batch 8 --partitions 0", "--pipeline-devices: must be an integer of at least 1"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = pipeprof(c.command);
    EXPECT_EQ(r.code, 2) << c.command << "\n" << r.all;
    EXPECT_NE(r.all.find(c.message), std::string::npos) << c.command << "\n" << r.all;
  }
}

}  // namespace
}  // namespace pipeprof

namespace pipeprof {
namespace {

// What export writes, run reads back as the same order: the same losses as the generated one.
TEST(ScheduleFileE2E, RunTrainsTheExportedOrderAsTheGeneratedOne) {
  const std::string dir = ::testing::TempDir();
  const ProcessResult exported =
      pipeprof("schedule export --schedule interleaved-zb --devices 2 --chunks 2 -o " + dir + "izb.csv");
  ASSERT_EQ(exported.code, 0) << exported.all;
  const std::string run = "run --model mlp --width 16 --depth 3 --batch 8 --devices cpu,cpu --seed 7 --lr 0.5 "
                          "--warmup 1 --steps 3 --threads 1 --json ";
  const std::vector<double> generated = losses("--balance 1,1,1,2 --schedule interleaved-zb");
  const ProcessResult file = pipeprof(run + "--balance 1,1,1,2 --schedule-file " + dir + "izb.csv");
  ASSERT_EQ(file.code, 0) << file.all;
  const nlohmann::json json = nlohmann::json::parse(file.all.substr(file.all.find('{')));
  EXPECT_EQ(json.at("schedule"), "custom");
  const std::vector<double> read = json.at("losses").get<std::vector<double>>();
  ASSERT_EQ(read.size(), generated.size());
  for (std::size_t s = 0; s < read.size(); ++s) EXPECT_DOUBLE_EQ(read[s], generated[s]) << "step " << s;
  const ProcessResult wrongBalance = pipeprof(run + "--schedule-file " + dir + "izb.csv --balance 2,3");
  EXPECT_EQ(wrongBalance.code, 2);
  EXPECT_NE(wrongBalance.err.find("--balance 2,3 has 2 stages but the order of --schedule-file " + dir +
                                  "izb.csv runs 4: give 4 entries"),
            std::string::npos)
      << wrongBalance.err;
  const ProcessResult ranks = pipeprof(run + "--balance 1,1,1,1,1,1,1,1 --schedule-file " + PIPEPROF_SOURCE_DIR +
                                       "/tests/fixtures/pytorch-2.6-schedules/zbv_zero_bubble_p4_m8_v2.csv");
  EXPECT_EQ(ranks.code, 2);
  EXPECT_NE(ranks.err.find("zbv_zero_bubble_p4_m8_v2.csv has 4 ranks (one row each) but --devices cpu,cpu names 2 "
                           "devices: give as many"),
            std::string::npos)
      << ranks.err;
  const ProcessResult missing = pipeprof(run + "--balance 1,1,1,2 --schedule-file " + dir + "absent.csv");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("absent.csv: cannot open file"), std::string::npos) << missing.err;
}

TEST(ScheduleExportE2E, WritesTheOrderAsPytorchsCsvAndRefusesWhatItCannotSchedule) {
  const ProcessResult zb = pipeprof("schedule export --schedule zb1p --devices 2 --chunks 4");
  ASSERT_EQ(zb.code, 0) << zb.all;
  EXPECT_EQ(zb.out,
            "0F0,0F1,0I0,0W0,0F2,0I1,0W1,0F3,0I2,0W2,0I3,0W3\n1F0,1I0,1F1,1I1,1W0,1F2,1I2,1W1,1F3,1I3,1W2,1W3\n");
  const ProcessResult oneFOneB = pipeprof("schedule export --schedule 1f1b --devices 2 --chunks 2");
  ASSERT_EQ(oneFOneB.code, 0) << oneFOneB.all;
  EXPECT_EQ(oneFOneB.out, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  const ProcessResult zbv = pipeprof("schedule export --schedule zbv --devices 2 --chunks 2");
  ASSERT_EQ(zbv.code, 0) << zbv.all;
  EXPECT_EQ(zbv.out,
            "0F0,0F1,3F0,3I0,3W0,3F1,3I1,3W1,0I0,0W0,0I1,0W1\n1F0,2F0,1F1,2F1,2I0,2W0,1I0,1W0,2I1,2W1,1I1,1W1\n");
  const ProcessResult bad = pipeprof("schedule export --schedule interleaved-zb --devices 4 --chunks 9");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--chunks 9: interleaved-zb runs the chunks in max(1, chunks / devices) rounds"),
            std::string::npos)
      << bad.err;
  const ProcessResult format = pipeprof("schedule export --schedule gpipe --devices 2 --chunks 2 --format json");
  EXPECT_EQ(format.code, 2);
  EXPECT_NE(format.err.find("--format json: unknown format; expected pytorch-csv"), std::string::npos) << format.err;
}

}  // namespace
}  // namespace pipeprof
