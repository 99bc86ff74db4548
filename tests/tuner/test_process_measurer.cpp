// Tests for process_measurer.h: a candidate measured by two pipeprof-rank processes, and stopped.
#include "tuner/tiny_mlp.h"

#include <pipeprof/runtime/training_loop.h>
#include <pipeprof/tuner/process_measurer.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace pipeprof::tuner {
namespace {

using test::tinyCandidate;

ProcessMeasurer tinyMeasurer() {
  return ProcessMeasurer(test::tinyMlp(), {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")},
                         std::chrono::seconds(30));
}

TEST(ProcessMeasurer, EachPipelineDeviceIsARankOfItsOwn) {
  ProcessMeasurer measurer = tinyMeasurer();
  MeasureRequest request;
  request.steps = 2;
  request.traced = true;
  const MeasuredRun run = measurer.measure(tinyCandidate(), request);
  EXPECT_EQ(run.measurement.stepNs.size(), 2u);
  EXPECT_EQ(run.measurement.peakBytes.size(), 2u);
  std::set<std::string> ranks;
  for (const TraceEvent& event : run.trace.events) ranks.insert(event.device.substr(0, 7));
  EXPECT_EQ(ranks, (std::set<std::string>{"rank 0 ", "rank 1 "}));
}

TEST(ProcessMeasurer, AStoppedRunIsTrainingStoppedNotAFailure) {
  ProcessMeasurer measurer = tinyMeasurer();
  StopSource source;
  source.requestStop();
  MeasureRequest request;
  request.stop = source.token();
  EXPECT_THROW(measurer.measure(tinyCandidate(), request), TrainingStopped);
}

TEST(ProcessMeasurer, TheLayoutNamesTheProcessesAndTheTransportOfTheDevices) {
  EXPECT_EQ(processLayout(2, {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")}),
            (nlohmann::json{{"procs", 2}, {"transport", "gloo"}}));
  EXPECT_EQ(processLayout(3, {DeviceDesc::parse("cuda:0"), DeviceDesc::parse("cuda:1"), DeviceDesc::parse("cuda:2")}),
            (nlohmann::json{{"procs", 3}, {"transport", "nccl"}}));
}

TEST(ProcessMeasurer, TheRankLinkIsChargedAndRecorded) {
  SweepConfig config;
  config.devices = {DeviceDesc::parse("cpu"), DeviceDesc::parse("cpu")};
  config.processLayout = processLayout(2, config.devices);
  const Link link = measureRankLink(config, std::chrono::seconds(30));
  EXPECT_GT(link.bandwidthBytesPerS, 0.0);
  ASSERT_TRUE(config.rankLink.has_value());
  EXPECT_EQ(config.rankLink->latencyNs, link.latencyNs);
  EXPECT_EQ(config.processLayout.at("link").at("latency_ns"), link.latencyNs);
  EXPECT_EQ(config.processLayout.at("procs"), 2);
  // What the report records reads back as the same link.
  const std::optional<Link> recorded = recordedRankLink(config.processLayout);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->latencyNs, link.latencyNs);
  EXPECT_EQ(recorded->bandwidthBytesPerS, link.bandwidthBytesPerS);
}

TEST(ProcessMeasurer, AReportsRecordedLinkIsReadOrRefused) {
  EXPECT_FALSE(recordedRankLink(nlohmann::json()).has_value());  // a threaded sweep's
  EXPECT_FALSE(recordedRankLink(processLayout(2, {DeviceDesc::parse("cpu")})).has_value());
  SweepConfig config;
  config.processLayout = processLayout(2, {DeviceDesc::parse("cpu")});
  useRankLink(config, Link{40'000, 5e9});
  EXPECT_EQ(config.rankLink->latencyNs, 40'000);
  EXPECT_EQ(recordedRankLink(config.processLayout)->bandwidthBytesPerS, 5e9);
  for (const nlohmann::json& link : {nlohmann::json{{"latency_ns", -1}, {"bandwidth_bytes_per_s", 5e9}},
                                     nlohmann::json{{"latency_ns", 40'000}, {"bandwidth_bytes_per_s", 0}},
                                     nlohmann::json{{"latency_ns", 40'000}}, nlohmann::json("fast")}) {
    EXPECT_THROW(recordedRankLink({{"procs", 2}, {"link", link}}), std::invalid_argument) << link.dump();
  }
}

}  // namespace
}  // namespace pipeprof::tuner
