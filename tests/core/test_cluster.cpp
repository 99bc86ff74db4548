// Tests for cluster.cpp: link transfer times, the uniform and host shorthands, JSON round trips and errors.
#include <pipeprof/core/cluster.h>
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

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
      "link": {"latency_ns": "5us", "bandwidth_bytes_per_s": "25GB/s"}})J"),
                                    "c.json");
  EXPECT_EQ(cluster.devices[0].memoryBytes, 16LL << 30);
  EXPECT_FALSE(cluster.devices[1].memoryBytes.has_value());
  EXPECT_EQ(cluster.link(0, 1).latencyNs, 5000);
  EXPECT_EQ(cluster.link(0, 1).bandwidthBytesPerS, 25e9);
  Cluster single = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "only"}]})J"),
                                   "c.json");
  EXPECT_EQ(single.deviceCount(), 1);
  EXPECT_EQ(toJson(clusterFromJson(toJson(single), "c.json")), toJson(single));
}

TEST(Cluster, WithHostsJoinsDevicesByIntraAndInterHostLinks) {
  const Link nvlink{1000, 300e9};
  const Link ethernet{20000, 12.5e9};
  Cluster cluster = Cluster::withHosts({"node0", "node0", "node1", "node1"}, Bytes{80} << 30, nvlink, ethernet, "cuda");
  ASSERT_EQ(cluster.deviceCount(), 4);
  EXPECT_EQ(cluster.devices[3].name, "cuda:3");
  EXPECT_EQ(cluster.devices[2].memoryBytes, Bytes{80} << 30);
  EXPECT_EQ(cluster.hosts, (std::vector<std::string>{"node0", "node0", "node1", "node1"}));
  EXPECT_EQ(cluster.hostOf(0), "node0");
  EXPECT_EQ(cluster.hostOf(3), "node1");
  EXPECT_EQ(cluster.link(0, 1).bandwidthBytesPerS, 300e9);
  EXPECT_EQ(cluster.link(3, 2).latencyNs, 1000);
  EXPECT_EQ(cluster.link(1, 2).bandwidthBytesPerS, 12.5e9);
  EXPECT_EQ(cluster.link(2, 0).latencyNs, 20000);
  EXPECT_EQ(cluster.link(2, 2).latencyNs, 0);
  EXPECT_THROW(cluster.hostOf(4), std::out_of_range);
  EXPECT_THROW(Cluster::withHosts({}, std::nullopt, nvlink, ethernet), std::invalid_argument);
  EXPECT_THROW(Cluster::withHosts({"a", ""}, std::nullopt, nvlink, ethernet), std::invalid_argument);
  // A cluster that names no hosts has every device on one unnamed host.
  EXPECT_EQ(Cluster::uniform(2, std::nullopt, 1e9, 0).hostOf(1), "");
  cluster.hosts.pop_back();
  EXPECT_THROW(cluster.hostOf(0), std::out_of_range);
  EXPECT_THROW(toJson(cluster), std::invalid_argument);
}

TEST(ClusterJson, HostsRoundTripWritesIntraAndInterHostLinks) {
  Cluster cluster =
      Cluster::withHosts({"node0", "node0", "node1"}, std::nullopt, Link{1000, 300e9}, Link{20000, 12.5e9}, "cuda");
  nlohmann::json json = toJson(cluster);
  EXPECT_EQ(json, nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "cuda:0", "relative_speed": 1.0, "host": "node0"},
                  {"name": "cuda:1", "relative_speed": 1.0, "host": "node0"},
                  {"name": "cuda:2", "relative_speed": 1.0, "host": "node1"}],
      "intra_host_link": {"latency_ns": 1000, "bandwidth_bytes_per_s": 300e9},
      "inter_host_link": {"latency_ns": 20000, "bandwidth_bytes_per_s": 12.5e9}})J"));
  Cluster back = clusterFromJson(json, "c.json");
  EXPECT_EQ(back.hosts, cluster.hosts);
  EXPECT_EQ(toJson(back), json);
  for (std::int64_t a = 0; a < 3; ++a) {
    for (std::int64_t b = 0; b < 3; ++b) {
      EXPECT_EQ(back.link(a, b).latencyNs, cluster.link(a, b).latencyNs) << a << "->" << b;
      EXPECT_EQ(back.link(a, b).bandwidthBytesPerS, cluster.link(a, b).bandwidthBytesPerS) << a << "->" << b;
    }
  }
  // Equal intra- and inter-host links are written as one "link"; the hosts stay.
  Cluster same = Cluster::withHosts({"a", "b"}, std::nullopt, Link{5, 1e9}, Link{5, 1e9});
  EXPECT_EQ(toJson(same)["link"], nlohmann::json::parse(R"J({"latency_ns": 5, "bandwidth_bytes_per_s": 1e9})J"));
  EXPECT_FALSE(toJson(same).contains("inter_host_link"));
  EXPECT_EQ(clusterFromJson(toJson(same), "c.json").hosts, (std::vector<std::string>{"a", "b"}));
  // A pair that differs from its host class is written as the matrix, hosts beside it.
  cluster.links[0][2] = Link{7, 1e9};
  json = toJson(cluster);
  ASSERT_TRUE(json.contains("links"));
  EXPECT_FALSE(json.contains("intra_host_link"));
  back = clusterFromJson(json, "c.json");
  EXPECT_EQ(back.hosts, cluster.hosts);
  EXPECT_EQ(back.link(0, 2).latencyNs, 7);
  EXPECT_EQ(back.link(0, 1).latencyNs, 1000);
  EXPECT_EQ(toJson(back), json);
}

TEST(ClusterJson, HandWrittenHostsWithOneHostLinkOrTheMatrix) {
  // Only the link class that some pair needs is required: all devices on one host.
  Cluster one = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "a", "host": "n0"}, {"name": "b", "host": "n0"}],
      "intra_host_link": {"latency_ns": "1us", "bandwidth_bytes_per_s": "300GB/s"}})J"),
                                "c.json");
  EXPECT_EQ(one.hostOf(1), "n0");
  EXPECT_EQ(one.link(1, 0).latencyNs, 1000);
  EXPECT_EQ(one.link(0, 1).bandwidthBytesPerS, 300e9);
  // An explicit matrix gives the links; the hosts still say which transfers share one.
  Cluster matrix = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "a", "host": "n0"}, {"name": "b", "host": "n1"}],
      "links": [[null, {"bandwidth_bytes_per_s": 1e9}], [{"latency_ns": 3, "bandwidth_bytes_per_s": 2e9}, null]]})J"),
                                   "c.json");
  EXPECT_EQ(matrix.hosts, (std::vector<std::string>{"n0", "n1"}));
  EXPECT_EQ(matrix.link(1, 0).bandwidthBytesPerS, 2e9);
  // One "link" with hosts: every pair uses it.
  Cluster shared = clusterFromJson(nlohmann::json::parse(R"J({"schema": "pipeprof.cluster/v1",
      "devices": [{"name": "a", "host": "n0"}, {"name": "b", "host": "n1"}],
      "link": {"bandwidth_bytes_per_s": 1e9}})J"),
                                   "c.json");
  EXPECT_EQ(shared.hostOf(1), "n1");
  EXPECT_EQ(shared.link(0, 1).bandwidthBytesPerS, 1e9);
}

// tests/core/data/cluster_two_hosts.json (also a seed of the cluster fuzzer): two hosts of two
// GPUs, read and written back byte for byte.
TEST(ClusterJson, TwoHostFileReadsAndWritesBackByteIdentical) {
  const std::string path = std::string(PIPEPROF_SOURCE_DIR) + "/tests/core/data/cluster_two_hosts.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty()) << path;
  const Cluster cluster = readCluster(path);
  EXPECT_EQ(cluster.hosts, (std::vector<std::string>{"node0", "node0", "node1", "node1"}));
  EXPECT_EQ(cluster.link(0, 1).latencyNs, 2000);
  EXPECT_EQ(cluster.link(1, 2).bandwidthBytesPerS, 12.5e9);
  const Cluster built =
      Cluster::withHosts(cluster.hosts, Bytes{80} << 30, Link{2000, 300e9}, Link{20000, 12.5e9}, "cuda");
  EXPECT_EQ(toJson(built), toJson(cluster));
  EXPECT_EQ(toJson(cluster).dump(2) + "\n", text.str());
}

TEST(ClusterJson, OldFilesLoadWithoutHostsAndWriteBackUnchanged) {
  for (const char* text : {R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "relative_speed": 1.0}]})J",
                           R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "relative_speed": 1.0},
                {"name": "b", "memory_bytes": 4096, "relative_speed": 2.0}],
                "link": {"latency_ns": 5, "bandwidth_bytes_per_s": 1e9}})J",
                           R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "relative_speed": 1.0},
                {"name": "b", "relative_speed": 1.0}],
                "links": [[{"latency_ns": 0, "bandwidth_bytes_per_s": 0.0}, {"latency_ns": 1, "bandwidth_bytes_per_s": 1e9}],
                          [{"latency_ns": 2, "bandwidth_bytes_per_s": 1e9}, {"latency_ns": 0, "bandwidth_bytes_per_s": 0.0}]]})J"}) {
    const nlohmann::json json = nlohmann::json::parse(text);
    const Cluster cluster = clusterFromJson(json, "c.json");
    EXPECT_TRUE(cluster.hosts.empty()) << text;
    EXPECT_FALSE(cluster.processPerDevice) << text;
    EXPECT_EQ(toJson(cluster).dump(2), json.dump(2)) << text;
  }
}

TEST(ClusterJson, OneProcessPerDeviceRoundTrips) {
  Cluster cluster = Cluster::uniform(2, std::nullopt, 2.7e9, 30000, "cpu");
  cluster.processPerDevice = true;
  const nlohmann::json json = toJson(cluster);
  EXPECT_EQ(json.at("process_per_device"), true);
  const Cluster back = clusterFromJson(json, "c.json");
  EXPECT_TRUE(back.processPerDevice);
  EXPECT_EQ(toJson(back), json);
  nlohmann::json wrong = json;
  wrong["process_per_device"] = "yes";
  EXPECT_THROW(clusterFromJson(wrong, "c.json"), FormatError);
}

TEST(ClusterJson, AWakeLatencyRoundTripsAndIsOmittedWhenZero) {
  Cluster cluster = Cluster::uniform(2, std::nullopt, 0.0, 0, "cpu");
  EXPECT_FALSE(toJson(cluster).contains("wake_latency_ns"));
  cluster.wakeLatencyNs = 60'000;
  const nlohmann::json json = toJson(cluster);
  EXPECT_EQ(json.at("wake_latency_ns"), 60'000);
  EXPECT_EQ(clusterFromJson(json, "c.json").wakeLatencyNs, 60'000);
  nlohmann::json wrong = json;
  wrong["wake_latency_ns"] = -5;
  EXPECT_THROW(clusterFromJson(wrong, "c.json"), FormatError);
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
  EXPECT_EQ(
      errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a"}], "link": {"bandwidth_bytes_per_s": 1},
                        "links": [[null]]})J"),
      "c.json: $.links: give either 'link' or 'links', not both");
}

TEST(ClusterJson, RejectsContradictoryHostsAndHostLinksNamingThePlace) {
  const std::string hosts2 = R"J("devices": [{"name": "a", "host": "n0"}, {"name": "b", "host": "n1"}])J";
  const std::string intra = R"J("intra_host_link": {"bandwidth_bytes_per_s": 1e9})J";
  const std::string inter = R"J("inter_host_link": {"bandwidth_bytes_per_s": 1e8})J";
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "host": "n0"}, {"name": "b"}],
                        "link": {"bandwidth_bytes_per_s": 1}})J"),
            "c.json: $.devices[1]: missing required field 'host' (devices[0] names its host: give every device a "
            "host, or none)");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a"}, {"name": "b", "host": "n0"}],
                        "link": {"bandwidth_bytes_per_s": 1}})J"),
            "c.json: $.devices[0]: missing required field 'host' (devices[1] names its host: give every device a "
            "host, or none)");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "host": ""}]})J"),
            "c.json: $.devices[0].host: expected a non-empty host name, e.g. \"node0\"");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "host": 3}]})J"),
            "c.json: $.devices[0].host: expected a string, got 3");
  EXPECT_EQ(
      errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a"}, {"name": "b"}], )J" + inter + "}"),
      "c.json: $.inter_host_link: expected the devices' hosts: give every device a 'host', or give 'link' or "
      "'links' instead");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + hosts2 + ", " + intra + ", " + inter +
                     R"J(, "link": {"bandwidth_bytes_per_s": 1}})J"),
            "c.json: $.intra_host_link: give either 'link' or 'intra_host_link' and 'inter_host_link', not both");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + hosts2 + ", " + inter +
                     R"J(, "links": [[null, {"bandwidth_bytes_per_s": 1}], [{"bandwidth_bytes_per_s": 1}, null]]})J"),
            "c.json: $.inter_host_link: give either 'links' or 'intra_host_link' and 'inter_host_link', not both");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + hosts2 + ", " + intra + "}"),
            "c.json: $: missing required field 'inter_host_link' (devices 0 and 1 are on different hosts, 'n0' and "
            "'n1')");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", "devices": [{"name": "a", "host": "n0"},
                        {"name": "b", "host": "n0"}], )J" +
                     inter + "}"),
            "c.json: $: missing required field 'intra_host_link' (devices 0 and 1 are on one host, 'n0')");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + hosts2 + "}"),
            "c.json: $: missing required field 'link' (or 'intra_host_link' and 'inter_host_link', or 'links', an "
            "n x n matrix)");
  EXPECT_EQ(errorFor(R"J({"schema": "pipeprof.cluster/v1", )J" + hosts2 +
                     R"J(, "inter_host_link": {"latency_ns": -2, "bandwidth_bytes_per_s": 1}})J"),
            "c.json: $.inter_host_link.latency_ns: expected a non-negative integer, got -2");
}

}  // namespace
}  // namespace pipeprof
