// With CUDA: a series of traced runs of the threaded measurer shares one CUPTI recording, and
// each run's trace holds its own kernels only.
#include <pipeprof/tuner/candidate_measurer.h>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace pipeprof::tuner {
namespace {

struct KernelCount {
  int kernels = 0;
  int copies = 0;
  int attributed = 0;
  bool within = true;  ///< every kernel inside the run's host spans (with 1 ms of slack)
};

KernelCount kernelsOf(const Trace& trace) {
  TimeNs first = 0, last = 0;
  bool any = false;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::Span || e.phase == Phase::Kernel || e.phase == Phase::Memcpy || e.phase == Phase::Memset) {
      continue;
    }
    first = any ? std::min(first, e.startNs) : e.startNs;
    last = any ? std::max(last, e.endNs()) : e.endNs();
    any = true;
  }
  KernelCount count;
  constexpr TimeNs kSlackNs = 1'000'000;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::Span) continue;
    count.copies += e.phase == Phase::Memcpy;
    if (e.phase != Phase::Kernel) continue;
    ++count.kernels;
    count.attributed += e.args.count("op") > 0;
    count.within = count.within && e.startNs >= first - kSlackNs && e.endNs() <= last + kSlackNs;
  }
  return count;
}

TEST(ThreadedMeasurerGpu, TracedRunsInARowShareOneRecordingAndKeepTheirOwnKernels) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the CUPTI capture needs one";
  ModelSpec model;
  model.name = "mlp";
  model.options.width = 256;
  model.options.depth = 4;
  ThreadedMeasurer measurer(model, {DeviceDesc::parse("cuda:0"), DeviceDesc::parse("cuda:0")});
  Candidate candidate;
  candidate.balance = {3, 4};
  candidate.chunks = 4;
  candidate.batch = 64;
  MeasureRequest request;
  request.warmupSteps = 1;
  request.steps = 2;
  request.traced = true;
  const MeasuredRun first = measurer.measure(candidate, request);
  if (first.trace.metadata.count("cupti_mode") == 0) GTEST_SKIP() << "CUPTI unavailable here";
  // Recording kept from the first run: the model's copy to the device came in between.
  const MeasuredRun kept = measurer.measure(candidate, request);
  request.traced = false;
  const MeasuredRun untraced = measurer.measure(candidate, request);
  request.traced = true;
  // CUPTI enabled again after the untraced run: nothing from before can be in it.
  const MeasuredRun fresh = measurer.measure(candidate, request);

  EXPECT_TRUE(untraced.trace.events.empty());
  const KernelCount keptCount = kernelsOf(kept.trace);
  const KernelCount freshCount = kernelsOf(fresh.trace);
  EXPECT_GT(freshCount.kernels, 0);
  EXPECT_EQ(keptCount.kernels, freshCount.kernels) << "the same steps, and nothing left from between the runs";
  EXPECT_EQ(keptCount.copies, freshCount.copies);
  EXPECT_EQ(keptCount.attributed, freshCount.attributed);
  for (const MeasuredRun* run : {&first, &kept, &fresh}) {
    EXPECT_TRUE(kernelsOf(run->trace).within);
    EXPECT_EQ(run->trace.metadata.at("cupti_dropped_records"), "0");
  }
}

}  // namespace
}  // namespace pipeprof::tuner
