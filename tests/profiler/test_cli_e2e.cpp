// End-to-end: `pipeprof run --trace` on a tiny CPU mlp, parsed back and checked op by op; `trace
// summarize` and `profile` on the same model.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/profile.h>

#include "support/run_process.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace pipeprof {
namespace {

using Result = test::ProcessResult;

Result runPipeprof(const std::string& args) { return test::pipeprof(args); }

std::filesystem::path scratchDir() {
  return std::filesystem::temp_directory_path() / ("pipeprof_profiler_e2e_" + std::to_string(::getpid()));
}

std::filesystem::path scratch(const std::string& name) {
  std::filesystem::create_directories(scratchDir());
  return scratchDir() / name;
}

/// Removes the tests' scratch directory once every test of the binary has run.
class RemoveScratchDir : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(scratchDir()); }
};
[[maybe_unused]] const ::testing::Environment* const kRemoveScratchDir =
    ::testing::AddGlobalTestEnvironment(new RemoveScratchDir);

// mlp --width 32 --depth 4: fc0 relu0 fc1 relu1 fc2 relu2 fc3 = 7 layers; 2 partitions; 4
// micro-batches; except_last; 1 warm-up + 2 measured steps = 3 steps traced.
constexpr int kChunks = 4;
constexpr int kPartitions = 2;
constexpr int kStepsTraced = 3;

class RunTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = scratch("run.json").string();
    const Result r = runPipeprof("run --model mlp --width 32 --depth 4 --devices cpu,cpu --balance 3,4 --chunks 4 "
                                 "--checkpoint except_last --batch 16 --steps 2 --warmup 1 --trace " +
                                 path_);
    output_ = r.all;
    code_ = r.code;
  }
  static std::string path_;
  static std::string output_;
  static int code_;
};
std::string RunTrace::path_;
std::string RunTrace::output_;
int RunTrace::code_ = -1;

TEST_F(RunTrace, RunsAndReports) {
  ASSERT_EQ(code_, 0) << output_;
  EXPECT_NE(output_.find("step time: median"), std::string::npos) << output_;
  EXPECT_NE(output_.find("throughput:"), std::string::npos) << output_;
  EXPECT_NE(output_.find("peak memory: device 0 "), std::string::npos) << output_;  // per pipeline device
  EXPECT_NE(output_.find("device 1 "), std::string::npos) << output_;
  EXPECT_NE(output_.find("loss: "), std::string::npos) << output_;
}

TEST_F(RunTrace, EveryCellHasItsOpsOnItsLane) {
  ASSERT_EQ(code_, 0) << output_;
  const Trace trace = readChromeTraceFile(path_);
  std::map<std::tuple<Phase, std::int64_t, std::int64_t>, int> counts;
  std::map<std::int64_t, std::string> deviceOfPartition;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::Span) continue;
    if (e.phase != Phase::Forward && e.phase != Phase::Backward && e.phase != Phase::Recompute) continue;
    ++counts[{e.phase, e.microBatch, e.partition}];
    EXPECT_EQ(e.lane, "partition " + std::to_string(e.partition)) << e.name;
    EXPECT_EQ(e.device, "cpu:" + std::to_string(e.partition)) << e.name;
  }
  for (int i = 0; i < kChunks; ++i) {
    for (int j = 0; j < kPartitions; ++j) {
      EXPECT_EQ((counts[{Phase::Forward, i, j}]), kStepsTraced) << i << "," << j;
      EXPECT_EQ((counts[{Phase::Backward, i, j}]), kStepsTraced) << i << "," << j;
      // except_last: every micro-batch but the last is recomputed.
      EXPECT_EQ((counts[{Phase::Recompute, i, j}]), i < kChunks - 1 ? kStepsTraced : 0) << i << "," << j;
    }
  }
}

TEST_F(RunTrace, SpansOnOneLaneDoNotOverlap) {
  ASSERT_EQ(code_, 0) << output_;
  const Trace trace = readChromeTraceFile(path_);
  std::map<std::pair<std::string, std::string>, std::vector<const TraceEvent*>> lanes;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Span) lanes[{e.device, e.lane}].push_back(&e);
  }
  EXPECT_GE(lanes.size(), 4u);
  for (auto& [lane, spans] : lanes) {
    std::sort(spans.begin(), spans.end(),
              [](const TraceEvent* a, const TraceEvent* b) { return a->startNs < b->startNs; });
    for (std::size_t k = 1; k < spans.size(); ++k) {
      EXPECT_GE(spans[k]->startNs, spans[k - 1]->endNs())
          << lane.first << "/" << lane.second << ": " << spans[k - 1]->name << " overlaps " << spans[k]->name;
    }
  }
}

TEST_F(RunTrace, HostSpansCountersAndLaneNames) {
  ASSERT_EQ(code_, 0) << output_;
  const Trace trace = readChromeTraceFile(path_);
  int steps = 0, warmups = 0, optimizers = 0;
  std::set<std::string> counterDevices;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::Counter) counterDevices.insert(e.device);
    if (e.kind != EventKind::Span) continue;
    steps += e.phase == Phase::Step;
    warmups += e.phase == Phase::Warmup;
    optimizers += e.phase == Phase::Optimizer;
  }
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(warmups, 1);
  EXPECT_EQ(optimizers, 3);
  EXPECT_EQ(counterDevices, (std::set<std::string>{"cpu:0", "cpu:1"}));

  // Every (pid, tid) used by an event is named by metadata.
  const nlohmann::json raw = readJsonFile(path_);
  std::set<int> namedProcesses;
  std::set<std::pair<int, int>> namedThreads;
  for (const auto& event : raw.at("traceEvents")) {
    if (event.at("ph") != "M") continue;
    if (event.at("name") == "process_name") namedProcesses.insert(event.at("pid").get<int>());
    if (event.at("name") == "thread_name")
      namedThreads.insert({event.at("pid").get<int>(), event.at("tid").get<int>()});
  }
  for (const auto& event : raw.at("traceEvents")) {
    if (event.at("ph") != "X") continue;
    const int pid = event.at("pid").get<int>();
    const int tid = event.at("tid").get<int>();
    EXPECT_TRUE(namedProcesses.count(pid)) << event.dump();
    EXPECT_TRUE(namedThreads.count({pid, tid})) << event.dump();
  }
}

TEST_F(RunTrace, SummarizeReadsItBack) {
  ASSERT_EQ(code_, 0) << output_;
  const Result text = runPipeprof("trace summarize " + path_);
  ASSERT_EQ(text.code, 0) << text.all;
  EXPECT_NE(text.all.find("2 step(s)"), std::string::npos) << text.all;
  EXPECT_NE(text.all.find("partition 1 on cpu:1"), std::string::npos) << text.all;
  const Result json = runPipeprof("trace summarize --json " + path_);
  ASSERT_EQ(json.code, 0) << json.all;
  const nlohmann::json analysis = nlohmann::json::parse(json.all);
  EXPECT_EQ(analysis["steps"], 2);
  EXPECT_EQ(analysis["stages"].size(), 2u);
  EXPECT_GT(analysis["stages"][0]["busy_ns"].get<std::int64_t>(), 0);
}

TEST_F(RunTrace, TraceExplainBreaksTheRunDownBesideItsPrediction) {
  ASSERT_EQ(code_, 0) << output_;
  const std::string model = "--model mlp --width 32 --depth 4 --batch 16";
  const std::string profile = scratch("explain_profile.json").string();
  const std::string predicted = scratch("explain_predicted.json").string();
  const Result profiled = runPipeprof("profile " + model + " --micro-batches 4 --time-budget 100ms -o " + profile);
  ASSERT_EQ(profiled.code, 0) << profiled.all;
  const Result simulated =
      runPipeprof("simulate --profile " + profile +
                  " --batch 16 --balance 3,4 --chunks 4 --checkpoint except_last --trace " + predicted);
  ASSERT_EQ(simulated.code, 0) << simulated.all;
  const std::string candidate = model + " --balance 3,4 --chunks 4 --checkpoint except_last";
  // The traces in either order: each goes in the column its source names.
  const Result json = runPipeprof("trace explain --json " + predicted + " " + path_ + " " + candidate);
  ASSERT_EQ(json.code, 0) << json.all;
  const nlohmann::json explained = nlohmann::json::parse(json.out);
  EXPECT_EQ(explained["candidate"], "[3,4] x4 except_last");
  for (const char* source : {"measured", "predicted"}) {
    ASSERT_EQ(explained[source]["devices"].size(), 2u) << source;
    EXPECT_EQ(explained[source]["source"], source);
    for (const nlohmann::json& device : explained[source]["devices"]) {
      EXPECT_GT(device["forward_ns"].get<std::int64_t>(), 0) << source;
      EXPECT_GT(device["step_ns"].get<std::int64_t>(), 0) << source;
    }
  }
  EXPECT_EQ(explained["measured"]["steps"], kStepsTraced - 1) << "the warm-up step is not one of the timed steps";
  const Result text = runPipeprof("trace explain " + path_ + " " + candidate);
  ASSERT_EQ(text.code, 0) << text.all;
  EXPECT_NE(text.out.find("[3,4] x4 except_last gpipe"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("predicted: no trace given"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device 1 (cpu:1)"), std::string::npos) << text.out;
}

TEST_F(RunTrace, TraceExplainRefusesTheFlagsOfAnotherCandidate) {
  ASSERT_EQ(code_, 0) << output_;
  const Result other =
      runPipeprof("trace explain " + path_ + " --model mlp --width 32 --depth 4 --batch 16 --balance 4,3 --chunks 4");
  EXPECT_EQ(other.code, 2) << other.all;
  EXPECT_NE(other.err.find("is a trace of [3,4] x4 except_last; the flags describe [4,3] x4 except_last"),
            std::string::npos)
      << other.err;
  const Result twice = runPipeprof("trace explain " + path_ + " " + path_ +
                                   " --model mlp --width 32 --depth 4 --batch 16 --balance 3,4 --chunks 4");
  EXPECT_EQ(twice.code, 2) << twice.all;
  EXPECT_NE(twice.err.find("the second measured trace"), std::string::npos) << twice.err;
  const Result layers =
      runPipeprof("trace explain " + path_ + " --model mlp --width 32 --depth 4 --batch 16 --balance 3,3 --chunks 4");
  EXPECT_EQ(layers.code, 2) << layers.all;
  EXPECT_NE(layers.err.find("--balance 3,3 holds 6 layers; model 'mlp' has 7"), std::string::npos) << layers.err;
  const std::string empty = scratch("empty_trace.json").string();
  {
    std::ofstream out(empty);
    out << R"({"traceEvents": []})";
  }
  const Result none =
      runPipeprof("trace explain " + empty + " --model mlp --width 32 --depth 4 --batch 16 --balance 3,4 --chunks 4");
  EXPECT_EQ(none.code, 2) << none.all;
  EXPECT_NE(none.err.find("holds no step of [3,4] x4 except_last"), std::string::npos) << none.err;
}

TEST(CliE2e, ProfileWritesAProfileOfEveryLayer) {
  const std::string path = scratch("profile.json").string();
  const Result r = runPipeprof("profile --model mlp --width 32 --depth 3 --batch 8 --micro-batches 2,8 "
                               "--time-budget 50ms --min-runs 2 -o " +
                               path);
  ASSERT_EQ(r.code, 0) << r.all;
  const Profile profile = readProfile(path);
  ASSERT_EQ(profile.layerCount(), 5);
  EXPECT_EQ(profile.environment.model, "mlp");
  EXPECT_EQ(profile.layers[0].costs.size(), 2u);
  EXPECT_EQ(profile.layers[0].costs[1].outputBytes, 8 * 32 * 4);
  EXPECT_GT(profile.layers[0].costs[1].forwardNs, 0);
}

TEST(CliE2e, RunJsonAndAutoBalance) {
  const Result r = runPipeprof("run --model mlp --width 16 --depth 2 --devices cpu,cpu --balance auto --chunks 2 "
                               "--batch 8 --steps 1 --warmup 0 --json");
  ASSERT_EQ(r.code, 0) << r.all;
  EXPECT_NE(r.all.find("balance auto: chose"), std::string::npos) << r.all;
  const nlohmann::json out = nlohmann::json::parse(r.all.substr(r.all.find('{')));
  EXPECT_EQ(out["candidate"]["balance"].size(), 2u);
  EXPECT_EQ(out["step_ns"].size(), 1u);
}

TEST(CliE2e, BadFlagsAreUsageErrors) {
  EXPECT_EQ(runPipeprof("run --model nosuchmodel --balance 1,1").code, 2);
  EXPECT_EQ(runPipeprof("run --model mlp --width 8 --depth 2 --devices cpu,cpu --balance 1,1,1").code, 2);
  EXPECT_EQ(runPipeprof("run --model mlp --devices gpu:0 --balance 1").code, 2);
  EXPECT_EQ(runPipeprof("trace summarize /nonexistent/trace.json").code, 2);
}

TEST(CliE2e, CuptiModeFlagTakesCheapOrExact) {
  const std::string run = "run --model mlp --width 8 --depth 2 --devices cpu,cpu --balance 1,2 --chunks 2 --batch 4 "
                          "--steps 1 --warmup 0 --json --trace " +
                          scratch("cupti_mode.json").string();
  const Result bad = runPipeprof(run + " --cupti-mode full");
  EXPECT_EQ(bad.code, 2) << bad.all;
  EXPECT_NE(bad.all.find("--cupti-mode: unknown CUPTI mode 'full': expected cheap or exact"), std::string::npos)
      << bad.all;
  // On CPU devices no collector starts: both modes run and trace the host alone.
  for (const std::string mode : {"cheap", "exact"}) {
    const Result ok = runPipeprof(run + " --cupti-mode " + mode);
    EXPECT_EQ(ok.code, 0) << mode << ": " << ok.all;
  }
}

}  // namespace
}  // namespace pipeprof
