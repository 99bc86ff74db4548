// End-to-end tests of `pipeprof run` with one process per stage over c10d (Gloo on loopback): losses, layouts,
// failures.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/trace.h>

#include "support/fixtures.h"
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof {
namespace {

using test::BackgroundProcess;
using test::pipeprof;
using test::ProcessResult;
using test::shell;
using test::waitFor;
const std::string& kBinary = test::kPipeprof;

nlohmann::json lastJson(const std::string& out) { return nlohmann::json::parse(out.substr(out.find("\n{") + 1)); }

// mlp --width 16 --depth 3: fc0 relu0 fc1 relu1 fc2 = 5 layers; batch 8 in 4 micro-batches.
const std::string kRun = "run --model mlp --width 16 --depth 3 --batch 8 --chunks 4 --seed 7 --lr 0.5 --warmup 1 "
                         "--steps 2 --threads 1 --timeout 30 --json ";

/// The losses of `pipeprof <command>`.
std::vector<double> commandLosses(const std::string& command) {
  const ProcessResult r = pipeprof(command);
  EXPECT_EQ(r.code, 0) << command << "\n" << r.all;
  if (r.code != 0) return {};
  return lastJson(r.all).at("losses").get<std::vector<double>>();
}

std::vector<double> losses(const std::string& flags) { return commandLosses(kRun + flags); }

void expectSameLosses(const std::vector<double>& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t s = 0; s < expected.size(); ++s) {
    EXPECT_NEAR(actual[s], expected[s], 1e-5 * std::abs(expected[s]) + 1e-7) << what << ", step " << s;
  }
}

TEST(RunDist, EveryScheduleOnTwoAndThreeRanksTrainsToTheThreadedPipesLosses) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--devices cpu,cpu --balance 2,3 --schedule gpipe", "--procs 2 --balance 2,3 --schedule gpipe"},
      {"--devices cpu,cpu --balance 3,2 --schedule 1f1b --checkpoint never",
       "--procs 2 --balance 3,2 --schedule 1f1b --checkpoint never"},
      {"--devices cpu,cpu --balance 1,1,1,2 --schedule interleaved --stages-per-device 2 --checkpoint always",
       "--procs 2 --balance 1,1,1,2 --schedule interleaved --stages-per-device 2 --checkpoint always"},
      {"--devices cpu,cpu,cpu --balance 2,2,1 --schedule 1f1b", "--procs 3 --balance 2,2,1 --schedule 1f1b"},
      {"--devices cpu,cpu,cpu --balance 1,3,1 --schedule gpipe --checkpoint never",
       "--procs 3 --balance 1,3,1 --schedule gpipe --checkpoint never"},
      {"--devices cpu,cpu --balance 2,3 --schedule zb1p", "--procs 2 --balance 2,3 --schedule zb1p"},
      {"--devices cpu,cpu --balance 1,1,2,1 --schedule interleaved-zb --checkpoint never",
       "--procs 2 --balance 1,1,2,1 --schedule interleaved-zb --checkpoint never"},
      // The last stage (the loss) on rank 0.
      {"--devices cpu,cpu --balance 1,2,1,1 --schedule zbv", "--procs 2 --balance 1,2,1,1 --schedule zbv"},
  };
  for (const auto& [threaded, processes] : cases) {
    const std::vector<double> expected = losses(threaded);
    ASSERT_EQ(expected.size(), 3u) << threaded;
    expectSameLosses(losses(processes), expected, processes);
  }
}

// PyTorch's own orders (4 micro-batches each) given as files: the ranks train to the threaded
// Pipe's losses, and ZBV's file to those of pipeprof's generated zbv.
TEST(RunDist, AScheduleFileRunsOnTwoRanksAsOnThreads) {
  const std::string run = "run --model mlp --width 16 --depth 3 --batch 8 --seed 7 --lr 0.5 --warmup 1 --steps 2 "
                          "--threads 1 --timeout 30 --json --balance 1,2,1,1 --schedule-file ";
  // Torch's looped BFS and ZBV, and looped BFS with some backwards split (I then W) and others not.
  for (const std::string name :
       {"pytorch-2.6-schedules/looped_bfs_p2_m4_v2.csv", "pytorch-2.6-schedules/zbv_zero_bubble_p2_m4_v2.csv",
        "mixed_backwards_p2_m4_v2.csv"}) {
    const std::string file = test::fixturePath(name);
    const std::vector<double> threaded = commandLosses(run + file + " --devices cpu,cpu");
    ASSERT_EQ(threaded.size(), 3u) << name;
    expectSameLosses(commandLosses(run + file + " --procs 2"), threaded, name);
  }
  // Three stages on two ranks (stage 2 on rank 0 beside stage 0), some backwards split.
  const std::string unequal = std::string(run, 0, run.find("--balance")) + "--balance 2,2,1 --schedule-file " +
                              PIPEPROF_SOURCE_DIR + "/tests/fixtures/unequal_stages_p2_m2.csv";
  const std::vector<double> threaded = commandLosses(unequal + " --devices cpu,cpu");
  ASSERT_EQ(threaded.size(), 3u);
  expectSameLosses(commandLosses(unequal + " --procs 2"), threaded, "unequal stages per rank");
  expectSameLosses(losses("--devices cpu,cpu --balance 1,2,1,1 --schedule zbv"),
                   commandLosses(run + PIPEPROF_SOURCE_DIR "/tests/fixtures/pytorch-2.6-schedules/"
                                                           "zbv_zero_bubble_p2_m4_v2.csv --devices cpu,cpu"),
                   "zbv generated and read");
}

TEST(RunDist, TwoRanksTrainWithEveryOptimizerAndBf16AsTheThreadedPipe) {
  for (const std::string optimizer : {"--optimizer momentum", "--optimizer adam", "--optimizer adamw --betas 0.8,0.9",
                                      "--optimizer adamw --precision bf16"}) {
    const std::vector<double> expected = losses("--devices cpu,cpu --balance 3,2 --schedule 1f1b " + optimizer);
    ASSERT_EQ(expected.size(), 3u) << optimizer;
    expectSameLosses(losses("--procs 2 --balance 3,2 --schedule 1f1b " + optimizer), expected, optimizer);
  }
}

TEST(RunDist, ImportedAndTiedModelsTrainOnRanksAsTheThreadedPipe) {
  // The language model's next-token loss from its attributes and its tied head; the
  // classifier's ReLUs work in place at both stage boundaries, and --loss mse overrides its
  // cross-entropy (the rank job carries it); gpt's tied embeddings (the rank job carries it).
  const std::string fixtures = test::fixturePath("");
  struct Case {
    std::string model;
    std::string devices;
    std::string procs;
  };
  const std::vector<Case> cases{{fixtures + "tiny_language_model.pt --balance 2,3", "cpu,cpu", "2"},
                                {fixtures + "tiny_classifier.pt --balance 1,2,4", "cpu,cpu,cpu", "3"},
                                {fixtures + "tiny_classifier.pt --balance 1,2,4 --loss mse", "cpu,cpu,cpu", "3"},
                                {"gpt --width 32 --depth 2 --tie-embeddings --balance 2,3", "cpu,cpu", "2"}};
  for (const auto& [model, devices, procs] : cases) {
    const std::string run =
        "run --batch 8 --chunks 4 --warmup 1 --steps 2 --threads 1 --lr 0.1 --timeout 30 --json --model " + model;
    const ProcessResult threaded = pipeprof(run + " --devices " + devices);
    ASSERT_EQ(threaded.code, 0) << threaded.all;
    const ProcessResult processes = pipeprof(run + " --procs " + procs);
    ASSERT_EQ(processes.code, 0) << processes.all;
    expectSameLosses(lastJson(processes.all).at("losses").get<std::vector<double>>(),
                     lastJson(threaded.all).at("losses").get<std::vector<double>>(), model);
  }
}

/// unet --depth 2 has 19 layers: enc0 (conv relu stash pool) enc1 (4) mid (2) dec1 (up concat conv
/// relu) dec0 (4) head. Split 3,8,8: skip0 goes from stage 0 (layer 2) to stage 2 (layer 15),
/// past rank 1; skip1 from stage 1 (layer 6) to stage 2 (layer 11).
constexpr const char* kUnetBalance = "3,8,8";

TEST(RunDist, SkipConnectionsCrossRanksStraightFromStashToPop) {
  const std::string unet = "run --model unet --width 4 --depth 2 --batch 4 --chunks 2 --warmup 1 --steps 1 --threads 1 "
                           "--lr 0.1 --timeout 30 --json ";
  const ProcessResult threaded = pipeprof(unet + "--devices cpu,cpu,cpu --balance " + std::string(kUnetBalance));
  ASSERT_EQ(threaded.code, 0) << threaded.all;
  const nlohmann::json expected = lastJson(threaded.all);
  const std::string balance = kUnetBalance;
  const ProcessResult processes = pipeprof(unet + "--procs 3 --schedule 1f1b --balance " + balance);
  ASSERT_EQ(processes.code, 0) << processes.all;
  const nlohmann::json actual = lastJson(processes.all);
  expectSameLosses(actual.at("losses").get<std::vector<double>>(), expected.at("losses").get<std::vector<double>>(),
                   "unet on 3 ranks, balance " + balance);
  std::int64_t skipBytes = 0;
  for (const auto& rank : actual.at("ranks")) skipBytes += rank.at("sent_bytes").get<std::int64_t>();
  EXPECT_GT(skipBytes, 0);
}

TEST(RunDist, SplitAtNamesTheLayersWhereStagesBegin) {
  const ProcessResult r = pipeprof(kRun + "--procs 2 --split-at fc1");
  ASSERT_EQ(r.code, 0) << r.all;
  const nlohmann::json json = lastJson(r.all);
  EXPECT_EQ(json.at("candidate").at("balance"), nlohmann::json::array({2, 3}));
  EXPECT_EQ(json.at("process_layout").at("procs"), 2);
  EXPECT_EQ(json.at("process_layout").at("transport"), "gloo");
  ASSERT_EQ(json.at("ranks").size(), 2u);
  EXPECT_EQ(json.at("ranks")[0].at("stages"), nlohmann::json::array({0}));
  EXPECT_GT(json.at("ranks")[0].at("sent_bytes").get<std::int64_t>(), 0);
  EXPECT_EQ(json.at("ranks")[0].at("sent_bytes"), json.at("ranks")[1].at("received_bytes"))
      << "activations and gradients have the same shapes";
  expectSameLosses(json.at("losses").get<std::vector<double>>(), losses("--devices cpu,cpu --balance 2,3"), "split");
}

TEST(RunDist, BadLayoutsAreRefusedBeforeAnyRankStarts) {
  ProcessResult r = pipeprof(kRun + "--procs 3 --devices cpu,cpu --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--procs 3 but --devices cpu,cpu names 2 pipeline devices"), std::string::npos) << r.all;
  r = pipeprof(kRun + "--procs 2 --split-at fc9");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("no layer is named 'fc9'"), std::string::npos) << r.all;
  r = shell("RANK=0 WORLD_SIZE=3 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("WORLD_SIZE is 3 but --devices cpu,cpu names 2 pipeline devices"), std::string::npos) << r.all;
  r = shell("RANK=0 WORLD_SIZE=2 " + kBinary + " " + kRun + "--devices cpu,cpu");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--balance auto would have every rank"), std::string::npos) << r.all;
  // 0 processes is not "threads of one process": the flag was given.
  r = pipeprof(kRun + "--procs 0 --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--procs: must be an integer of at least 1, got 0"), std::string::npos) << r.all;
  // A balance that does not fit the model or the devices is the user's, found before any rank
  // starts (the ranks used to find it and the run exited 1); a rank of torchrun's world does
  // not wait for the others to say so.
  r = pipeprof(kRun + "--procs 2 --balance 2,2");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--balance 2,2 covers 4 layers but mlp has 5: the entries must sum to 5"), std::string::npos)
      << r.all;
  EXPECT_EQ(r.all.find("rank 0"), std::string::npos) << r.all;
  r = pipeprof(kRun + "--procs 2 --balance 1,1,3");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--balance 1,1,3 has 3 stages but --devices cpu,cpu names 2 devices"), std::string::npos)
      << r.all;
  r = shell("RANK=1 WORLD_SIZE=2 MASTER_PORT=1 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 4,2");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--balance 4,2 covers 6 layers but mlp has 5"), std::string::npos) << r.all;
}

TEST(RunDist, LaunchedRanksRunOnCpusOfTheirOwnUnlessToldNot) {
  const unsigned cpus = std::thread::hardware_concurrency();
  if (cpus < 2) GTEST_SKIP() << "one CPU: two ranks cannot have one each";
  ProcessResult r = pipeprof(kRun + "--procs 2 --balance 2,3");
  ASSERT_EQ(r.code, 0) << r.all;
  const nlohmann::json ranks = lastJson(r.all).at("ranks");
  const std::string first = ranks.at(0).at("cpus");
  const std::string second = ranks.at(1).at("cpus");
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  EXPECT_NE(first, second);
  r = pipeprof(kRun + "--procs 2 --balance 2,3 --cpu-bind none");
  ASSERT_EQ(r.code, 0) << r.all;
  EXPECT_EQ(lastJson(r.all).at("ranks").at(0).at("cpus"), "");
  r = pipeprof(kRun + "--procs 2 --balance 2,3 --cpu-bind numa");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--cpu-bind must be cores or none, got 'numa'"), std::string::npos) << r.all;
  // Under torchrun binding is asked for, and needs LOCAL_WORLD_SIZE to split the host.
  r = shell("RANK=0 WORLD_SIZE=2 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 2,3 --cpu-bind cores");
  EXPECT_EQ(r.code, 2) << r.all;
  EXPECT_NE(r.all.find("--cpu-bind cores splits this host's CPUs among its LOCAL_WORLD_SIZE ranks"), std::string::npos)
      << r.all;
}

/// A free TCP port on 127.0.0.1 (bound and released; good enough on a test machine).
int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(RunDist, TwoShellsWithTorchrunsVariablesFormOnePipeline) {
  const int port = freePort();
  const std::string flags = kRun + "--devices cpu,cpu --balance 2,3 --schedule 1f1b";
  const test::Environment world{
      {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
  test::Environment rank0 = world;
  rank0.insert({{"RANK", "0"}, {"LOCAL_RANK", "0"}});
  test::Environment rank1 = world;
  rank1.insert({{"RANK", "1"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  const std::string dir = ::testing::TempDir();
  // Rank 1 asks for a CPU share of its own, as a torchrun user would with --cpu-bind cores.
  BackgroundProcess second({"/bin/sh", "-c", "exec '" + kBinary + "' " + flags + " --cpu-bind cores"},
                           dir + "/rank1.out", dir + "/rank1.err", rank1);
  const ProcessResult first = pipeprof(flags, rank0);
  ASSERT_EQ(first.code, 0) << first.all;
  const std::optional<ProcessResult> r = second.wait(std::chrono::seconds(30));
  ASSERT_TRUE(r.has_value()) << "rank 1 did not end";
  ASSERT_EQ(r->code, 0) << r->all;
  const nlohmann::json rank1Json = nlohmann::json::parse(r->out);
  EXPECT_EQ(rank1Json.at("rank"), 1);
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_FALSE(rank1Json.at("cpus").get<std::string>().empty());
  }
  expectSameLosses(rank1Json.at("losses").get<std::vector<double>>(), losses("--devices cpu,cpu --balance 2,3"),
                   "torchrun layout");
}

/// A long 2-rank run (`run --procs 2`) in a process group of its own, its scratch files in a
/// directory of the test's (TMPDIR), started once both ranks have joined the world.
struct LongRun {
  std::string dir;
  std::unique_ptr<BackgroundProcess> launcher;
  std::vector<pid_t> ranks;

  /// Whether the two ranks have joined the world: each writes its result file then.
  bool joined() const {
    for (const auto& scratch : std::filesystem::directory_iterator(dir)) {
      if (scratch.path().filename().string().rfind("pipeprof-ranks-", 0) != 0) continue;
      return std::filesystem::exists(scratch.path() / "rank0.json") &&
             std::filesystem::exists(scratch.path() / "rank1.json");
    }
    return false;
  }
};

LongRun startLongRun(const std::string& name, const std::string& timeout) {
  LongRun run;
  run.dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(run.dir);
  std::filesystem::create_directories(run.dir);
  run.launcher = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{kBinary,     "run",       "--model",    "mlp",       "--width", "64",      "--depth",
                               "3",         "--batch",   "64",         "--chunks",  "4",       "--procs", "2",
                               "--balance", "2,3",       "--schedule", "1f1b",      "--steps", "100000",  "--warmup",
                               "0",         "--threads", "1",          "--timeout", timeout},
      run.dir + "/out", run.dir + "/err", test::Environment{{"TMPDIR", run.dir}});
  if (waitFor([&] { return run.joined(); }, std::chrono::seconds(30))) run.ranks = run.launcher->children();
  return run;
}

/// Waits for the launcher (at most `limit`); returns its result and how long it took.
std::pair<std::optional<ProcessResult>, std::chrono::steady_clock::duration> waitForLauncher(
    LongRun& run, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<ProcessResult> result = run.launcher->wait(limit);
  return {result, std::chrono::steady_clock::now() - start};
}

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

/// Every rank ended (reaped by init once the launcher is gone: polled, not slept for).
void expectNoRankLeft(const LongRun& run) {
  EXPECT_TRUE(waitFor([&] { return !run.launcher->groupAlive(); }, std::chrono::seconds(5)))
      << "a rank process was left behind";
}

TEST(RunDist, AKilledRankEndsTheRunCleanlyNamingIt) {
  LongRun run = startLongRun("killed", "10");
  ASSERT_EQ(run.ranks.size(), 2u);
  kill(run.ranks[1], SIGKILL);
  const auto [result, took] = waitForLauncher(run, std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value()) << "the launcher did not end";
  EXPECT_LT(took, std::chrono::seconds(10)) << "within the timeout";
  EXPECT_EQ(result->code, 1);
  EXPECT_NE(result->all.find("rank 1 (stage 1) died: killed by signal 9"), std::string::npos) << result->all;
  EXPECT_NE(result->all.find("rank 1 (stage 1) is gone"), std::string::npos) << result->all;
  expectNoRankLeft(run);
}

TEST(RunDist, AHangingRankIsNamedAfterTheTimeoutAndStopped) {
  LongRun run = startLongRun("hung", "2");
  ASSERT_EQ(run.ranks.size(), 2u);
  kill(run.ranks[1], SIGSTOP);  // alive, silent
  const auto [result, took] = waitForLauncher(run, std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value()) << "the launcher did not end";
  // Rank 0 gives up after 2 s; the launcher then gives rank 1 the timeout and 5 s more to stop
  // on its own, then SIGTERM, then SIGKILL 2 s later.
  EXPECT_LT(took, std::chrono::seconds(15));
  EXPECT_EQ(result->code, 1);
  EXPECT_NE(result->all.find("rank 1 (stage 1) sent nothing for 2 s"), std::string::npos) << result->all;
  EXPECT_NE(result->all.find("rank 1 (stage 1) did not stop on its own and was terminated"), std::string::npos)
      << result->all;
  expectNoRankLeft(run);
}

TEST(RunDist, CtrlCStopsEveryRank) {
  LongRun run = startLongRun("interrupted", "30");
  ASSERT_EQ(run.ranks.size(), 2u);
  run.launcher->signal(SIGINT);  // the launcher alone: it stops its ranks
  const auto [result, took] = waitForLauncher(run, std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value()) << "the launcher did not end";
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(result->code, 130);
  EXPECT_NE(result->all.find("interrupted: every rank was stopped, nothing was written"), std::string::npos)
      << result->all;
  expectNoRankLeft(run);
  for (pid_t rank : run.ranks) EXPECT_FALSE(alive(rank)) << "rank process " << rank << " left behind";
}

TEST(RunDist, ATerminalsCtrlCReachingEveryRankIsAnInterruptionNotAFailure) {
  LongRun run = startLongRun("group_interrupted", "30");
  ASSERT_EQ(run.ranks.size(), 2u);
  run.launcher->signalGroup(SIGINT);  // the launcher and its ranks, as a terminal does
  const auto [result, took] = waitForLauncher(run, std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value()) << "the launcher did not end";
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(result->code, 130) << result->all;
  EXPECT_EQ(result->all.find("died"), std::string::npos) << result->all;
  expectNoRankLeft(run);
}

TEST(RunDist, TheMergedTraceHasAProcessPerRankAndFlowsBetweenThem) {
  const std::string trace = ::testing::TempDir() + "/dist_trace.json";
  const ProcessResult r = pipeprof(kRun + "--procs 2 --balance 2,3 --schedule 1f1b --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.all;
  std::ifstream in(trace);
  const nlohmann::json json = nlohmann::json::parse(in);
  std::set<std::string> processes;
  std::size_t flowStarts = 0;
  std::size_t flowEnds = 0;
  std::set<std::string> lanes;
  for (const auto& event : json.at("traceEvents")) {
    if (event.at("ph") == "M" && event.at("name") == "process_name") processes.insert(event.at("args").at("name"));
    if (event.at("ph") == "M" && event.at("name") == "thread_name") lanes.insert(event.at("args").at("name"));
    if (event.at("ph") == "s") ++flowStarts;
    if (event.at("ph") == "f") ++flowEnds;
  }
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes.begin()->rfind("rank 0 (", 0), 0u) << *processes.begin();
  EXPECT_EQ(processes.rbegin()->rfind("rank 1 (", 0), 0u) << *processes.rbegin();
  EXPECT_TRUE(lanes.count("send") && lanes.count("receive"));
  // 3 steps x 4 micro-batches x (activation + gradient) messages, each one flow.
  EXPECT_EQ(flowStarts, 24u);
  EXPECT_EQ(flowEnds, 24u);
  // Each rank has a span per measured step; the trace's steps are the pipeline's, what the run
  // measured (the largest of the ranks' per step), not each rank's (a sweep's calibration fits
  // its step overheads to them).
  const std::vector<TimeNs> measured = lastJson(r.all).at("step_ns").get<std::vector<TimeNs>>();
  const Trace merged = readChromeTraceFile(trace);
  const std::vector<const TraceEvent*> steps = stepSpans(merged);
  ASSERT_EQ(steps.size(), measured.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    EXPECT_NEAR(static_cast<double>(steps[k]->durationNs), static_cast<double>(measured[k]), 1000.0) << "step " << k;
  }
}

}  // namespace
}  // namespace pipeprof
