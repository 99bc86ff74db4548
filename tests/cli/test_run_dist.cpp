// End-to-end tests of `pipeprof run` with one process per stage over c10d (Gloo on loopback): losses, layouts, failures.
#include "cli_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof {
namespace {

using testing::pipeprof;
using testing::Result;
using testing::shell;
const std::string& kBinary = testing::kPipeprof;

nlohmann::json lastJson(const std::string& out) { return nlohmann::json::parse(out.substr(out.find("\n{") + 1)); }

// mlp --width 16 --depth 3: fc0 relu0 fc1 relu1 fc2 = 5 layers; batch 8 in 4 micro-batches.
const std::string kRun = "run --model mlp --width 16 --depth 3 --batch 8 --chunks 4 --seed 7 --lr 0.5 --warmup 1 "
                         "--steps 2 --threads 1 --timeout 30 --json ";

std::vector<double> losses(const std::string& flags) {
  const Result r = pipeprof(kRun + flags);
  EXPECT_EQ(r.code, 0) << flags << "\n" << r.out;
  if (r.code != 0) return {};
  return lastJson(r.out).at("losses").get<std::vector<double>>();
}

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
  };
  for (const auto& [threaded, processes] : cases) {
    const std::vector<double> expected = losses(threaded);
    ASSERT_EQ(expected.size(), 3u) << threaded;
    expectSameLosses(losses(processes), expected, processes);
  }
}

/// unet --depth 2 has 19 layers: enc0 (conv relu stash pool) enc1 (4) mid (2) dec1 (up concat conv
/// relu) dec0 (4) head. Split 3,8,8: skip0 goes from stage 0 (layer 2) to stage 2 (layer 15),
/// past rank 1; skip1 from stage 1 (layer 6) to stage 2 (layer 11).
constexpr const char* kUnetBalance = "3,8,8";

TEST(RunDist, SkipConnectionsCrossRanksStraightFromStashToPop) {
  const std::string unet = "run --model unet --width 4 --depth 2 --batch 4 --chunks 2 --warmup 1 --steps 1 --threads 1 "
                           "--lr 0.1 --timeout 30 --json ";
  const Result threaded = pipeprof(unet + "--devices cpu,cpu,cpu --balance " + std::string(kUnetBalance));
  ASSERT_EQ(threaded.code, 0) << threaded.out;
  const nlohmann::json expected = lastJson(threaded.out);
  const std::string balance = kUnetBalance;
  const Result processes = pipeprof(unet + "--procs 3 --schedule 1f1b --balance " + balance);
  ASSERT_EQ(processes.code, 0) << processes.out;
  const nlohmann::json actual = lastJson(processes.out);
  expectSameLosses(actual.at("losses").get<std::vector<double>>(), expected.at("losses").get<std::vector<double>>(),
                   "unet on 3 ranks, balance " + balance);
  std::int64_t skipBytes = 0;
  for (const auto& rank : actual.at("ranks")) skipBytes += rank.at("sent_bytes").get<std::int64_t>();
  EXPECT_GT(skipBytes, 0);
}

TEST(RunDist, SplitAtNamesTheLayersWhereStagesBegin) {
  const Result r = pipeprof(kRun + "--procs 2 --split-at fc1");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json json = lastJson(r.out);
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
  Result r = pipeprof(kRun + "--procs 3 --devices cpu,cpu --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--procs 3 but --devices cpu,cpu names 2 pipeline devices"), std::string::npos) << r.out;
  r = pipeprof(kRun + "--procs 2 --split-at fc9");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no layer is named 'fc9'"), std::string::npos) << r.out;
  r = shell("RANK=0 WORLD_SIZE=3 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("WORLD_SIZE is 3 but --devices cpu,cpu names 2 pipeline devices"), std::string::npos) << r.out;
  r = shell("RANK=0 WORLD_SIZE=2 " + kBinary + " " + kRun + "--devices cpu,cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--balance auto would have every rank"), std::string::npos) << r.out;
  // 0 processes is not "threads of one process": the flag was given.
  r = pipeprof(kRun + "--procs 0 --balance 2,3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--procs: must be an integer of at least 1, got 0"), std::string::npos) << r.out;
  // A balance that does not fit the model or the devices is the user's, found before any rank
  // starts (the ranks used to find it and the run exited 1); a rank of torchrun's world does
  // not wait for the others to say so.
  r = pipeprof(kRun + "--procs 2 --balance 2,2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--balance 2,2 covers 4 layers but mlp has 5: the entries must sum to 5"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("rank 0"), std::string::npos) << r.out;
  r = pipeprof(kRun + "--procs 2 --balance 1,1,3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--balance 1,1,3 has 3 stages but --devices cpu,cpu names 2 devices"), std::string::npos)
      << r.out;
  r = shell("RANK=1 WORLD_SIZE=2 MASTER_PORT=1 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 4,2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--balance 4,2 covers 6 layers but mlp has 5"), std::string::npos) << r.out;
}

TEST(RunDist, LaunchedRanksRunOnCpusOfTheirOwnUnlessToldNot) {
  const unsigned cpus = std::thread::hardware_concurrency();
  if (cpus < 2) GTEST_SKIP() << "one CPU: two ranks cannot have one each";
  Result r = pipeprof(kRun + "--procs 2 --balance 2,3");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json ranks = lastJson(r.out).at("ranks");
  const std::string first = ranks.at(0).at("cpus");
  const std::string second = ranks.at(1).at("cpus");
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  EXPECT_NE(first, second);
  r = pipeprof(kRun + "--procs 2 --balance 2,3 --cpu-bind none");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(lastJson(r.out).at("ranks").at(0).at("cpus"), "");
  r = pipeprof(kRun + "--procs 2 --balance 2,3 --cpu-bind numa");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--cpu-bind must be cores or none, got 'numa'"), std::string::npos) << r.out;
  // Under torchrun binding is asked for, and needs LOCAL_WORLD_SIZE to split the host.
  r = shell("RANK=0 WORLD_SIZE=2 " + kBinary + " " + kRun + "--devices cpu,cpu --balance 2,3 --cpu-bind cores");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--cpu-bind cores splits this host's CPUs among its LOCAL_WORLD_SIZE ranks"), std::string::npos)
      << r.out;
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
  const std::string flags = kBinary + " " + kRun + "--devices cpu,cpu --balance 2,3 --schedule 1f1b";
  const std::string environment = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port);
  const std::string dir = ::testing::TempDir();
  // Rank 1 asks for a CPU share of its own, as a torchrun user would with --cpu-bind cores.
  const std::string command = "(RANK=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 " + environment + " " + flags +
                              " --cpu-bind cores > " + dir + "/rank1.out 2>&1 &) ; " + "RANK=0 LOCAL_RANK=0 " +
                              environment + " " + flags + " > " + dir + "/rank0.out 2>&1; " + "sleep 1; cat " + dir +
                              "/rank1.out";
  const Result r = shell(command);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json rank1 = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(rank1.at("rank"), 1);
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_FALSE(rank1.at("cpus").get<std::string>().empty());
  }
  expectSameLosses(rank1.at("losses").get<std::vector<double>>(), losses("--devices cpu,cpu --balance 2,3"), "torchrun layout");
}

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::ifstream file("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  pid_t pid = 0;
  while (file >> pid) children.push_back(pid);
  return children;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

/// A launcher of a long 2-rank run whose output goes to `output`, and its two ranks once they run.
struct LongRun {
  pid_t launcher = -1;
  std::vector<pid_t> ranks;
};

LongRun startLongRun(const std::string& output, const std::string& timeout) {
  LongRun run;
  run.launcher = fork();
  if (run.launcher == 0) {
    const std::string command = kBinary + " run --model mlp --width 64 --depth 3 --batch 64 --chunks 4 --procs 2 "
                                "--balance 2,3 --schedule 1f1b --steps 100000 --warmup 0 --threads 1 --timeout " +
                                timeout + " > " + output + " 2>&1";
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  while (run.ranks.size() < 2 && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    run.ranks = childrenOf(run.launcher);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // set up and stepping
  return run;
}

/// Waits for the launcher (at most `limit`); returns its exit status and how long it took.
std::pair<int, std::chrono::steady_clock::duration> waitForLauncher(pid_t launcher, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(launcher, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > limit) {
      kill(launcher, SIGKILL);
      waitpid(launcher, &status, 0);
      return {-1, std::chrono::steady_clock::now() - start};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::chrono::steady_clock::now() - start};
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RunDist, AKilledRankEndsTheRunCleanlyNamingIt) {
  const std::string output = ::testing::TempDir() + "/killed.out";
  const LongRun run = startLongRun(output, "10");
  ASSERT_EQ(run.ranks.size(), 2u);
  kill(run.ranks[1], SIGKILL);
  const auto [code, took] = waitForLauncher(run.launcher, std::chrono::seconds(30));
  EXPECT_LT(took, std::chrono::seconds(10)) << "within the timeout";
  EXPECT_EQ(code, 1);
  const std::string text = readFile(output);
  EXPECT_NE(text.find("rank 1 (stage 1) died: killed by signal 9"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 (stage 1) is gone"), std::string::npos) << text;
  for (pid_t rank : run.ranks) EXPECT_FALSE(alive(rank)) << "rank process " << rank << " left behind";
}

TEST(RunDist, AHangingRankIsNamedAfterTheTimeoutAndStopped) {
  const std::string output = ::testing::TempDir() + "/hung.out";
  const LongRun run = startLongRun(output, "2");
  ASSERT_EQ(run.ranks.size(), 2u);
  kill(run.ranks[1], SIGSTOP);  // alive, silent
  const auto [code, took] = waitForLauncher(run.launcher, std::chrono::seconds(30));
  // Rank 0 gives up after 2 s; the launcher then gives rank 1 the timeout and 5 s more to stop
  // on its own, then SIGTERM, then SIGKILL 2 s later.
  EXPECT_LT(took, std::chrono::seconds(15));
  EXPECT_EQ(code, 1);
  const std::string text = readFile(output);
  EXPECT_NE(text.find("rank 1 (stage 1) sent nothing for 2 s"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 (stage 1) did not stop on its own and was terminated"), std::string::npos) << text;
  for (pid_t rank : run.ranks) EXPECT_FALSE(alive(rank)) << "rank process " << rank << " left behind";
}

TEST(RunDist, CtrlCStopsEveryRank) {
  const std::string output = ::testing::TempDir() + "/interrupted.out";
  const LongRun run = startLongRun(output, "30");
  ASSERT_EQ(run.ranks.size(), 2u);
  kill(run.launcher, SIGINT);
  const auto [code, took] = waitForLauncher(run.launcher, std::chrono::seconds(30));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(code, 130);
  EXPECT_NE(readFile(output).find("interrupted: every rank was stopped, nothing was written"), std::string::npos)
      << readFile(output);
  for (pid_t rank : run.ranks) EXPECT_FALSE(alive(rank)) << "rank process " << rank << " left behind";
}

TEST(RunDist, TheMergedTraceHasAProcessPerRankAndFlowsBetweenThem) {
  const std::string trace = ::testing::TempDir() + "/dist_trace.json";
  const Result r = pipeprof(kRun + "--procs 2 --balance 2,3 --schedule 1f1b --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
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
}

}  // namespace
}  // namespace pipeprof
