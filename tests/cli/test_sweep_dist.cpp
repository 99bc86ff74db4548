// End-to-end tests of `pipeprof sweep --procs 2`: the report of a multi-process sweep, and Ctrl-C then --resume.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/report.h>

#include "support/run_process.h"
#include "support/scratch_dir.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <string>

namespace pipeprof {
namespace {

namespace fs = std::filesystem;

using test::BackgroundProcess;
using test::contains;
using test::ProcessResult;
using test::waitFor;

class SweepDist : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"sweep_dist"};
  const fs::path dir_ = scratch_.path();
};

std::size_t countStatus(const Report& report, CandidateStatus status) {
  std::size_t count = 0;
  for (const CandidateResult& result : report.candidates) count += result.status == status;
  return count;
}

TEST_F(SweepDist, EveryCandidateIsMeasuredByTwoRanks) {
  // mlp --depth 2: 3 layers, balances [1,2] and [2,1]; gpipe without checkpoints calibrates
  // with one reference shape.
  const fs::path report = dir_ / "report.json";
  const ProcessResult run = test::pipeprof(
      "sweep --model mlp --width 16 --depth 2 --devices cpu,cpu --batch 8 --chunks 1,2 --schedules gpipe "
      "--checkpoint never --measure all --steps 1 --warmup 1 --profile-budget 1 --calibration-budget 600 "
      "--calibration-rounds 1 --procs 2 -o " +
      report.string());
  ASSERT_EQ(run.code, 0) << run.all;
  const Report parsed = readReport(report.string());
  EXPECT_TRUE(parsed.complete);
  EXPECT_EQ(parsed.processLayout.at("procs"), 2);
  EXPECT_EQ(parsed.processLayout.at("transport"), "gloo");
  EXPECT_GT(parsed.processLayout.at("link").at("bandwidth_bytes_per_s").get<double>(), 0.0);
  ASSERT_EQ(countStatus(parsed, CandidateStatus::Measured), parsed.candidates.size());
  ASSERT_EQ(parsed.candidates.size(), 4u);
  for (const CandidateResult& result : parsed.candidates) {
    EXPECT_EQ(result.measurement->peakBytes.size(), 2u) << "one peak per rank";
    const Trace trace = readChromeTraceFile((dir_ / result.measurement->tracePath).string());
    std::set<std::string> ranks;
    for (const TraceEvent& event : trace.events) ranks.insert(event.device.substr(0, 7));
    EXPECT_EQ(ranks, (std::set<std::string>{"rank 0 ", "rank 1 "})) << result.candidate.label();
    // Each rank's step, broken down from its own step span, is the step it measured.
    ASSERT_TRUE(result.measuredBreakdown.has_value()) << result.candidate.label();
    ASSERT_EQ(result.measuredBreakdown->devices.size(), 2u);
    EXPECT_EQ(result.measuredBreakdown->steps, 1);
    for (const DeviceStepBreakdown& device : result.measuredBreakdown->devices) {
      EXPECT_EQ(device.traceDevice.substr(0, 7), "rank " + std::to_string(device.device) + " ");
      EXPECT_GT(device.at(StepCategory::Forward), 0);
      EXPECT_GT(device.stepNs(), 0);
    }
  }
}

TEST_F(SweepDist, AGivenLinkIsChargedInsteadOfMeasured) {
  // Nothing measured or calibrated: no rank starts; the predictions charge the link given.
  const fs::path report = dir_ / "report.json";
  const std::string sweep =
      "sweep --model mlp --width 16 --depth 2 --devices cpu,cpu --batch 8 --chunks 1,2 --schedules gpipe "
      "--checkpoint never --measure none --profile-budget 1 --calibration-budget 0 --procs 2 -o " +
      report.string();
  const ProcessResult run = test::pipeprof(sweep + " --link-latency 40us --link-bandwidth 5GB/s");
  ASSERT_EQ(run.code, 0) << run.all;
  EXPECT_FALSE(contains(run.err, "measuring the link")) << run.err;
  EXPECT_TRUE(contains(run.err, "link: latency 40.0 us, bandwidth 5.00 GB/s (as given)")) << run.err;
  const Report parsed = readReport(report.string());
  EXPECT_EQ(parsed.processLayout.at("link").at("latency_ns"), 40'000);
  EXPECT_EQ(parsed.processLayout.at("link").at("bandwidth_bytes_per_s"), 5e9);
  ASSERT_TRUE(parsed.cluster.has_value());
  EXPECT_EQ(parsed.cluster->links.at(0).at(1).latencyNs, 40'000);
  EXPECT_EQ(parsed.cluster->links.at(1).at(0).bandwidthBytesPerS, 5e9);

  // A resumed sweep charges its report's link; a link given to it, or half a link, or one
  // without --procs is refused.
  const ProcessResult resumed = test::pipeprof(sweep + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.all;
  EXPECT_TRUE(contains(resumed.err, "link: latency 40.0 us, bandwidth 5.00 GB/s (the resumed report's)"))
      << resumed.err;
  const ProcessResult again = test::pipeprof(sweep + " --resume --link-latency 1us --link-bandwidth 1GB/s");
  EXPECT_EQ(again.code, 2);
  EXPECT_TRUE(contains(again.err, "--link-latency: a resumed sweep keeps its report's link")) << again.err;
  const ProcessResult half = test::pipeprof(sweep + " --link-bandwidth 5GB/s");
  EXPECT_EQ(half.code, 2);
  EXPECT_TRUE(contains(half.err, "--link-bandwidth: give the link whole")) << half.err;
  const ProcessResult threaded = test::pipeprof(
      "sweep --model mlp --width 16 --depth 2 --measure none --link-latency 40us --link-bandwidth 5GB/s -o " +
      (dir_ / "threaded.json").string());
  EXPECT_EQ(threaded.code, 2);
  EXPECT_TRUE(contains(threaded.err, "--link-latency: only with --procs")) << threaded.err;
}

/// The issue's sweep, as a new user would type it, with short profiling and calibration.
std::vector<std::string> issueSweep(const fs::path& report) {
  return {test::kPipeprof,
          "sweep",
          "--model",
          "mlp",
          "--procs",
          "2",
          "--devices",
          "cpu,cpu",
          "--batch",
          "64",
          "--chunks",
          "2,4",
          "--schedules",
          "1f1b",
          "--measure",
          "top:4",
          "--steps",
          "3",
          "--rounds",
          "1",
          "--profile-budget",
          "1",
          "--calibration-budget",
          "0",
          "-o",
          report.string()};
}

/// Runs the issue's sweep in a process group of its own and sends SIGINT once the first
/// candidate started (its progress line), to the group (a terminal's Ctrl-C) or the sweep
/// alone. Checks the interrupted sweep: exit 130, a valid incomplete report, nothing failed,
/// nothing left running.
void interruptIssueSweep(const fs::path& dir, bool wholeGroup) {
  const fs::path report = dir / "R.json";
  BackgroundProcess sweep(issueSweep(report), (dir / "out").string(), (dir / "err").string());
  ASSERT_TRUE(waitFor([&] { return contains(sweep.err(), "measuring ["); }, std::chrono::seconds(120))) << sweep.err();
  if (wholeGroup) {
    sweep.signalGroup(SIGINT);
  } else {
    sweep.signal(SIGINT);
  }
  const std::optional<ProcessResult> ended = sweep.wait(std::chrono::seconds(30));
  ASSERT_TRUE(ended.has_value()) << "the sweep did not stop within 30 s of Ctrl-C\n" << sweep.err();
  EXPECT_EQ(ended->code, 130) << ended->err;
  EXPECT_TRUE(contains(ended->err, "holds what finished -- continue with the same command and --resume")) << ended->err;
  EXPECT_TRUE(waitFor([&] { return !sweep.groupAlive(); }, std::chrono::seconds(5))) << "a rank was left behind";
  const Report interrupted = readReport(report.string());
  EXPECT_FALSE(interrupted.complete);
  EXPECT_EQ(countStatus(interrupted, CandidateStatus::Failed), 0u) << "an interrupted candidate is not a failure";
  EXPECT_LT(countStatus(interrupted, CandidateStatus::Measured), 4u);
}

TEST_F(SweepDist, CtrlCStopsTheSweepAndResumeMeasuresTheInterruptedCandidateAgain) {
  interruptIssueSweep(dir_, /*wholeGroup=*/true);
  std::vector<std::string> resume = issueSweep(dir_ / "R.json");
  resume.push_back("--resume");
  const ProcessResult resumed = test::runProcess(resume);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const Report finished = readReport((dir_ / "R.json").string());
  EXPECT_TRUE(finished.complete);
  EXPECT_EQ(countStatus(finished, CandidateStatus::Measured), 4u);
  EXPECT_EQ(countStatus(finished, CandidateStatus::Failed), 0u);
}

TEST_F(SweepDist, SigintToTheSweepAloneStopsItsRanksToo) { interruptIssueSweep(dir_, /*wholeGroup=*/false); }

}  // namespace
}  // namespace pipeprof
