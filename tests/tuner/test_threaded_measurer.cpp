// Tests for candidate_measurer.h's ThreadedMeasurer: runs in this process, and one CUPTI
// collector recording over a series of traced runs (a fake source stands in for CUPTI).
#include "profiler/fake_activity_source.h"
#include "tuner/tiny_mlp.h"

#include <pipeprof/tuner/candidate_measurer.h>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace pipeprof::tuner {
namespace {

using test::tinyCandidate;
using test::tinyMlp;

MeasureRequest request(bool traced) {
  MeasureRequest r;
  r.warmupSteps = 0;
  r.steps = 1;
  r.traced = traced;
  return r;
}

struct FakeCollectors {
  std::vector<test::FakeActivitySource*> sources;  ///< owned by the collectors made
  CollectorFactory factory() {
    return [this](HostTracer& tracer, const std::vector<DeviceDesc>& /*devices*/) {
      auto source = std::make_unique<test::FakeActivitySource>();
      source->recordingMode = CuptiMode::Cheap;
      sources.push_back(source.get());
      return std::make_unique<CuptiCollector>(tracer, std::move(source));
    };
  }
};

TEST(ThreadedMeasurer, ASeriesOfTracedRunsEnablesCuptiOnceAndAnUntracedRunStopsIt) {
  FakeCollectors collectors;
  ThreadedMeasurer measurer(tinyMlp(), {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")}, {}, collectors.factory());
  const MeasuredRun first = measurer.measure(tinyCandidate(), request(true));
  const MeasuredRun second = measurer.measure(tinyCandidate(), request(true));
  ASSERT_EQ(collectors.sources.size(), 1u) << "one collector for the measurer's life";
  test::FakeActivitySource& source = *collectors.sources.front();
  EXPECT_EQ(source.starts, 1) << "the second traced run found CUPTI recording";
  EXPECT_FALSE(source.stopCalled);
  for (const MeasuredRun* run : {&first, &second}) {
    EXPECT_EQ(run->trace.metadata.at("cupti_mode"), "cheap") << "each run's trace went through the collector";
    EXPECT_FALSE(run->trace.events.empty());
  }

  const MeasuredRun untraced = measurer.measure(tinyCandidate(), request(false));
  EXPECT_TRUE(source.stopCalled) << "an untraced run is timed without CUPTI recording";
  EXPECT_TRUE(untraced.trace.events.empty());

  (void)measurer.measure(tinyCandidate(), request(true));
  EXPECT_EQ(source.starts, 2);
  EXPECT_EQ(collectors.sources.size(), 1u);
}

TEST(ThreadedMeasurer, OnCpuDevicesNoCollectorIsMade) {
  HostTracer tracer;
  EXPECT_EQ(cuptiOnCuda(tracer, {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")}), nullptr);
  ThreadedMeasurer measurer(tinyMlp(), {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")});
  const MeasuredRun run = measurer.measure(tinyCandidate(), request(true));
  EXPECT_EQ(run.trace.metadata.count("cupti_mode"), 0u);
  EXPECT_EQ(run.measurement.stepNs.size(), 1u);
}

}  // namespace
}  // namespace pipeprof::tuner
