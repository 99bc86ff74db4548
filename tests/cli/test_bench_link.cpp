// End-to-end tests of `pipeprof bench-link --procs 2`: the measured link, its cluster file, no process left.
#include <pipeprof/core/cluster.h>

#include "support/run_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace pipeprof {
namespace {

namespace fs = std::filesystem;

TEST(BenchLink, TwoRanksMeasureALinkAndWriteItAsACluster) {
  const fs::path dir = fs::temp_directory_path() / ("pipeprof_bench_link_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cluster = (dir / "cluster.json").string();
  test::BackgroundProcess bench(
      {test::kPipeprof, "bench-link", "--procs", "2", "--repeats", "2", "-o", cluster, "--json"},
      (dir / "out").string(), (dir / "err").string());
  const std::optional<test::ProcessResult> run = bench.wait(std::chrono::seconds(120));
  ASSERT_TRUE(run.has_value()) << "bench-link did not end";
  ASSERT_EQ(run->code, 0) << run->all;
  const nlohmann::json json = nlohmann::json::parse(run->out);
  EXPECT_EQ(json.at("transport"), "gloo");
  EXPECT_EQ(json.at("samples").size(), 8u) << "4 KiB to 64 MiB";
  const auto latencyNs = json.at("latency_ns").get<TimeNs>();
  const auto bandwidth = json.at("bandwidth_bytes_per_s").get<double>();
  EXPECT_GT(latencyNs, 0);
  EXPECT_GT(bandwidth, 0.0);
  const Cluster written = readCluster(cluster);
  ASSERT_EQ(written.devices.size(), 2u);
  EXPECT_EQ(written.links.at(0).at(1).latencyNs, latencyNs);
  EXPECT_DOUBLE_EQ(written.links.at(0).at(1).bandwidthBytesPerS, bandwidth);
  EXPECT_TRUE(test::waitFor([&] { return !bench.groupAlive(); }, std::chrono::seconds(5))) << "a rank was left behind";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pipeprof
