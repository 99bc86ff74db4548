// With CUDA: a 2-partition `pipeprof run --trace` captures kernels and copies, each attributed to an op, in
// both CUPTI modes.
#include <pipeprof/core/chrome_trace.h>

#include "support/run_process.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace pipeprof {
namespace {

class GpuCapture : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCapture, KernelsAndCopiesAreAttributedToOps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the CUPTI capture needs one";
  const std::string mode = GetParam();
  const bool twoDevices = torch::cuda::device_count() >= 2;
  const std::string devices = twoDevices ? "cuda:0,cuda:1" : "cuda:0,cuda:0";
  const auto path =
      std::filesystem::temp_directory_path() / ("pipeprof_gpu_" + mode + "_" + std::to_string(::getpid()) + ".json");
  const test::ProcessResult run = test::pipeprof("run --model mlp --width 256 --depth 4 --devices " + devices +
                                                 " --balance 3,4 --chunks 4 --batch 64 --steps 2" +
                                                 " --warmup 1 --cupti-mode " + mode + " --trace " + path.string());
  const std::string& output = run.all;
  ASSERT_EQ(run.code, 0) << output;
  if (output.find("CUPTI collector unavailable") != std::string::npos) GTEST_SKIP() << output;
  EXPECT_NE(output.find("cupti (" + mode + "): "), std::string::npos) << output;

  const Trace trace = readChromeTraceFile(path.string());
  EXPECT_EQ(trace.metadata.at("cupti_mode"), mode);
  int kernels = 0, copies = 0, unattributed = 0, backwardKernels = 0, launches = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::Span) continue;
    launches += e.phase == Phase::Launch;
    if (e.phase != Phase::Kernel && e.phase != Phase::Memcpy && e.phase != Phase::Memset) continue;
    kernels += e.phase == Phase::Kernel;
    copies += e.phase == Phase::Memcpy;
    if (e.args.count("op") == 0) {
      ++unattributed;
      continue;
    }
    EXPECT_GE(e.microBatch, 0) << e.name;
    EXPECT_GE(e.partition, 0) << e.name;
    backwardKernels += e.phase == Phase::Kernel && e.args.at("op_phase") == "backward";
  }
  EXPECT_GT(kernels, 0) << output;
  if (twoDevices) {
    EXPECT_GT(copies, 0) << output;
  }
  // Exact mode records the launch calls; cheap mode none.
  if (mode == "exact") {
    EXPECT_GT(launches, 0) << output;
  } else {
    EXPECT_EQ(launches, 0) << output;
  }
  // Autograd launches the backward from its own thread for the device, outside the workers'
  // correlation ids (and cheap mode has none): those kernels are attributed by their
  // partition's stream and launch or queue time. What stays unattributed was launched outside
  // every op (the loss, the optimizer, the input copy).
  EXPECT_GT(backwardKernels, 0) << output;
  EXPECT_LT(unattributed * 3, kernels + copies) << output;
  EXPECT_EQ(trace.metadata.at("cupti_kernels_without_launch_time"), "0") << output;
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuCapture, ::testing::Values("cheap", "exact"));

}  // namespace
}  // namespace pipeprof
