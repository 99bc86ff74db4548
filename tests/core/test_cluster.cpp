// Tests for cluster.cpp: link transfer times, the uniform shorthand, JSON round trips and errors.
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>

namespace pipeprof {
namespace {

TEST(Link, TransferNs) {
  Link link{1000, 1e9};  // 1 us latency, 1 GB/s
  EXPECT_EQ(link.transferNs(0), 0);
  EXPECT_EQ(link.transferNs(1), 1001);
  EXPECT_EQ(link.transferNs(1000), 2000);
  Link slow{0, 3.0};  // 3 bytes per second: 1 byte takes 333333333.33 ns, rounded up
  EXPECT_EQ(slow.transferNs(1), 333333334);
  Link infinite{500, 0.0};
  EXPECT_EQ(infinite.transferNs(1 << 30), 500);
  EXPECT_EQ(infinite.transferNs(0), 0);
}

TEST(Cluster, Uniform) {
  Cluster cluster = Cluster::uniform(3, Bytes{1} << 30, 25e9, 2000, "cpu");
  ASSERT_EQ(cluster.deviceCount(), 3);
  EXPECT_EQ(cluster.devices[2].name, "cpu:2");
  EXPECT_EQ(cluster.devices[0].memoryBytes, Bytes{1} << 30);
  EXPECT_EQ(cluster.devices[1].relativeSpeed, 1.0);
  EXPECT_EQ(cluster.link(0, 2).latencyNs, 2000);
  EXPECT_EQ(cluster.link(2, 1).bandwidthBytesPerS, 25e9);
  EXPECT_EQ(cluster.link(1, 1).latencyNs, 0);
  EXPECT_THROW(cluster.link(0, 3), std::out_of_range);
  EXPECT_EQ(Cluster::uniform(1, std::nullopt, 0, 0).devices[0].name, "device:0");
  EXPECT_THROW(Cluster::uniform(0, std::nullopt, 0, 0), std::invalid_argument);
}

TEST(ClusterJson, UniformRoundTripWritesOneLink) {
  Cluster cluster = Cluster::uniform(2, std::nullopt, 12.5e9, 1500, "cuda");
  cluster.devices[1].memoryBytes = 80LL << 30;
  cluster.devices[1].relativeSpeed = 1.5;
  nlohmann::json json = toJson(cluster);
  EXPECT_EQ(json, nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "cuda:0", "relative_speed": 1.0},
                  {"name": "cuda:1", "memory_bytes": 85899345920, "relative_speed": 1.5}],
      "link": {"latency_ns": 1500, "bandwidth_bytes_per_s": 12.5e9}})J"));
  Cluster back = clusterFromJson(json, "c.json");
  EXPECT_FALSE(back.devices[0].memoryBytes.has_value());
  EXPECT_EQ(toJson(back), json);
  EXPECT_EQ(back.link(1, 0).latencyNs, 1500);
}

TEST(ClusterJson, MatrixRoundTripAndFiles) {
  Cluster cluster = Cluster::uniform(3, 1000, 1e9, 10);
  cluster.links[0][2] = Link{99, 5e8};
  nlohmann::json json = toJson(cluster);
  ASSERT_TRUE(json.contains("links"));
  EXPECT_FALSE(json.contains("link"));
  EXPECT_EQ(json["links"][0][2]["latency_ns"], 99);
  std::string path = ::testing::TempDir() + "pipeprof_core_cluster_" + std::to_string(::getpid()) + ".json";
  writeCluster(cluster, path);
  Cluster back = readCluster(path);
  ::unlink(path.c_str());
  EXPECT_EQ(toJson(back), json);
  EXPECT_EQ(back.link(0, 2).bandwidthBytesPerS, 5e8);
  EXPECT_EQ(back.link(2, 0).bandwidthBytesPerS, 1e9);
}

TEST(ClusterJson, HandWrittenUnitsAndSingleDevice) {
  Cluster cluster = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "a", "memory_bytes": "16GiB"}, {"name": "b", "memory_bytes": null}],
      "link": {"latency_ns": "5us", "bandwidth_bytes_per_s": "25GB/s"}})J"), "c.json");
  EXPECT_EQ(cluster.devices[0].memoryBytes, 16LL << 30);
  EXPECT_FALSE(cluster.devices[1].memoryBytes.has_value());
  EXPECT_EQ(cluster.link(0, 1).latencyNs, 5000);
  EXPECT_EQ(cluster.link(0, 1).bandwidthBytesPerS, 25e9);
  Cluster single = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "only"}]})J"), "c.json");
  EXPECT_EQ(single.deviceCount(), 1);
  EXPECT_EQ(toJson(clusterFromJson(toJson(single), "c.json")), toJson(single));
}

std::string errorFor(const std::string& text) {
  try {
    clusterFromJson(nlohmann::json::parse(text), "c.json");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ClusterJson, RejectsMalformedInputNamingThePlace) {
  const std::string devices2 = R"J("devices": [{"name": "a"}, {"name": "b"}])J";
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v2", "devices": []})J"),
            "c.json: $.schema: expected schema 'pipeprof.cluster/v1', got 'pipeprof.cluster/v2'");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": []})J"),
            "c.json: $.devices: expected at least one device");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 + "}"),
            "c.json: $: missing required field 'link' (or 'links', an n x n matrix)");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 +
                     R"J(, "links": [[null, {"bandwidth_bytes_per_s": 1}]]})J"),
            "c.json: $.links: expected a 2 x 2 matrix (one row per device), got 1 rows");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 +
                     R"J(, "links": [[null, {"bandwidth_bytes_per_s": 1}], [null]]})J"),
            "c.json: $.links[1]: expected 2 links (one per device), got 1");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 +
                     R"J(, "link": {"latency_ns": -1, "bandwidth_bytes_per_s": 1}})J"),
            "c.json: $.link.latency_ns: expected a non-negative integer, got -1");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 +
                     R"J(, "link": {"bandwidth_bytes_per_s": "fast"}})J"),
            "c.json: $.link.bandwidth_bytes_per_s: invalid bandwidth 'fast': expected a non-negative rate, e.g. "
            "25GB/s, 12.5GiB/s, 100Gbit/s or a plain number of bytes per second");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + devices2 + R"J(, "link": {"latency_ns": 1}})J"),
            "c.json: $.link: missing required field 'bandwidth_bytes_per_s'");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "relative_speed": 0}]})J"),
            "c.json: $.devices[0].relative_speed: expected a positive number, got 0");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "memory_bytes": -3}]})J"),
            "c.json: $.devices[0].memory_bytes: expected a non-negative integer, got -3");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"memory_bytes": 3}]})J"),
            "c.json: $.devices[0]: missing required field 'name'");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a"}], "link": {"bandwidth_bytes_per_s": 1},
                        "links": [[null]]})J"),
            "c.json: $.links: give either 'link' or 'links', not both");
}

}  // namespace
}  // namespace pipeprof
