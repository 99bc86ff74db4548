// The cluster (pipeprof.cluster/v1): devices with memory and speed, their hosts, and the links between them.
#include <pipeprof/core/cluster.h>

#include <pipeprof/core/json_file.h>

#include <cmath>
#include <optional>
#include <stdexcept>

namespace pipeprof {
namespace {

bool sameLink(const Link& a, const Link& b) {
  return a.latencyNs == b.latencyNs && a.bandwidthBytesPerS == b.bandwidthBytesPerS;
}

nlohmann::json linkToJson(const Link& link) {
  return {{"latency_ns", link.latencyNs}, {"bandwidth_bytes_per_s", link.bandwidthBytesPerS}};
}

/// A size given as an integer or as text such as "16GiB".
Bytes bytesFromJson(const JsonCursor& json) {
  if (!json.value().is_string()) return json.asNonNegativeInt();
  try {
    return parseBytes(json.value().get<std::string>());
  } catch (const std::invalid_argument& error) {
    json.fail(error.what());
  }
}

/// A rate given as a number of bytes per second or as text such as "25GB/s".
BytesPerS bandwidthFromJson(const JsonCursor& json) {
  if (!json.value().is_string()) return json.asNonNegativeNumber();
  try {
    return parseBandwidth(json.value().get<std::string>());
  } catch (const std::invalid_argument& error) {
    json.fail(error.what());
  }
}

/// A duration given as an integer of nanoseconds or as text such as "5us".
TimeNs durationFromJson(const JsonCursor& json) {
  if (!json.value().is_string()) return json.asNonNegativeInt();
  try {
    return parseDuration(json.value().get<std::string>());
  } catch (const std::invalid_argument& error) {
    json.fail(error.what());
  }
}

Link linkFromJson(const JsonCursor& json) {
  if (!json.value().is_object()) json.fail("expected an object with latency_ns and bandwidth_bytes_per_s");
  Link link;
  link.latencyNs = json.has("latency_ns") ? durationFromJson(json.at("latency_ns")) : 0;
  link.bandwidthBytesPerS = bandwidthFromJson(json.at("bandwidth_bytes_per_s"));
  return link;
}

/// The link of every pair on one host and the link of every pair on two hosts, when the matrix
/// holds one of each (and a default diagonal); false otherwise. A pair class with no pair
/// leaves its pointer null.
bool hostUniformLinks(const Cluster& cluster, const Link*& intra, const Link*& inter) {
  const std::size_t count = cluster.devices.size();
  intra = nullptr;
  inter = nullptr;
  if (cluster.links.size() != count) return false;
  for (std::size_t a = 0; a < count; ++a) {
    if (cluster.links[a].size() != count) return false;
    for (std::size_t b = 0; b < count; ++b) {
      const Link& link = cluster.links[a][b];
      if (a == b) {
        if (!sameLink(link, Link{})) return false;
        continue;
      }
      const Link*& shared = cluster.hosts[a] == cluster.hosts[b] ? intra : inter;
      if (shared == nullptr) {
        shared = &link;
      } else if (!sameLink(link, *shared)) {
        return false;
      }
    }
  }
  return true;
}

/// Every device's "host", or none: a list of one name per device, or empty.
std::vector<std::string> hostsFromJson(const JsonCursor& devices) {
  std::vector<std::string> hosts;
  std::optional<std::size_t> named;
  std::optional<std::size_t> unnamed;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    JsonCursor item = devices.at(d);
    if (!item.has("host")) {
      if (!unnamed) unnamed = d;
      continue;
    }
    if (!named) named = d;
    JsonCursor host = item.at("host");
    hosts.push_back(host.asString());
    if (hosts.back().empty()) host.fail("expected a non-empty host name, e.g. \"node0\"");
  }
  if (named && unnamed) {
    devices.at(*unnamed).fail("missing required field 'host' (devices[" + std::to_string(*named) +
                              "] names its host: give every device a host, or none)");
  }
  return hosts;
}

}  // namespace

TimeNs Link::transferNs(Bytes bytes) const {
  if (bytes <= 0) return 0;
  if (bandwidthBytesPerS <= 0.0) return latencyNs;
  double ns = std::ceil(static_cast<double>(bytes) / bandwidthBytesPerS * 1e9);
  return latencyNs + static_cast<TimeNs>(ns);
}

const Link& Cluster::link(std::int64_t from, std::int64_t to) const {
  if (from < 0 || to < 0 || from >= deviceCount() || to >= deviceCount()) {
    throw std::out_of_range("no link " + std::to_string(from) + "->" + std::to_string(to) + " in a cluster of " +
                            std::to_string(deviceCount()) + " devices");
  }
  return links.at(static_cast<std::size_t>(from)).at(static_cast<std::size_t>(to));
}

std::string Cluster::hostOf(std::int64_t device) const {
  if (device < 0 || device >= deviceCount()) {
    throw std::out_of_range("no device " + std::to_string(device) + " in a cluster of " +
                            std::to_string(deviceCount()) + " devices");
  }
  if (hosts.empty()) return "";
  if (hosts.size() != devices.size()) {
    throw std::out_of_range("the cluster names " + std::to_string(hosts.size()) + " hosts for " +
                            std::to_string(devices.size()) + " devices; give one host per device, or none");
  }
  return hosts[static_cast<std::size_t>(device)];
}

Cluster Cluster::uniform(std::int64_t deviceCount, std::optional<Bytes> memoryBytes, BytesPerS bandwidthBytesPerS,
                         TimeNs latencyNs, const std::string& deviceName) {
  if (deviceCount <= 0) {
    throw std::invalid_argument("a cluster needs at least one device (device count: " + std::to_string(deviceCount) +
                                ")");
  }
  Cluster cluster;
  auto count = static_cast<std::size_t>(deviceCount);
  for (std::size_t d = 0; d < count; ++d) {
    cluster.devices.push_back({deviceName + ":" + std::to_string(d), memoryBytes, 1.0});
  }
  cluster.links.assign(count, std::vector<Link>(count, Link{latencyNs, bandwidthBytesPerS}));
  for (std::size_t d = 0; d < count; ++d) cluster.links[d][d] = Link{};
  return cluster;
}

Cluster Cluster::withHosts(const std::vector<std::string>& hosts, std::optional<Bytes> memoryBytes,
                           const Link& intraHostLink, const Link& interHostLink, const std::string& deviceName) {
  if (hosts.empty()) throw std::invalid_argument("a cluster needs at least one device (no hosts given)");
  for (std::size_t d = 0; d < hosts.size(); ++d) {
    if (hosts[d].empty()) {
      throw std::invalid_argument("device " + std::to_string(d) + " has an empty host name; name every device's host");
    }
  }
  Cluster cluster = uniform(static_cast<std::int64_t>(hosts.size()), memoryBytes, 0.0, 0, deviceName);
  cluster.hosts = hosts;
  for (std::size_t a = 0; a < hosts.size(); ++a) {
    for (std::size_t b = 0; b < hosts.size(); ++b) {
      if (a != b) cluster.links[a][b] = hosts[a] == hosts[b] ? intraHostLink : interHostLink;
    }
  }
  return cluster;
}

nlohmann::json toJson(const Cluster& cluster) {
  const bool named = !cluster.hosts.empty();
  if (named && cluster.hosts.size() != cluster.devices.size()) {
    throw std::invalid_argument("the cluster names " + std::to_string(cluster.hosts.size()) + " hosts for " +
                                std::to_string(cluster.devices.size()) + " devices; give one host per device, or none");
  }
  nlohmann::json devices = nlohmann::json::array();
  for (std::size_t d = 0; d < cluster.devices.size(); ++d) {
    const DeviceSpec& device = cluster.devices[d];
    nlohmann::json item = {{"name", device.name}};
    if (device.memoryBytes) item["memory_bytes"] = *device.memoryBytes;
    item["relative_speed"] = device.relativeSpeed;
    if (named) item["host"] = cluster.hosts[d];
    devices.push_back(item);
  }
  nlohmann::json json = {{"schema", kClusterSchema}, {"devices", devices}};
  // One "link" when every pair is the same and the unused diagonal is default; else a matrix.
  const Link* shared = nullptr;
  bool uniform = true;
  for (std::size_t a = 0; a < cluster.links.size(); ++a) {
    for (std::size_t b = 0; b < cluster.links[a].size(); ++b) {
      const Link& link = cluster.links[a][b];
      if (a == b) {
        uniform = uniform && sameLink(link, Link{});
      } else if (shared == nullptr) {
        shared = &link;
      } else {
        uniform = uniform && sameLink(link, *shared);
      }
    }
  }
  const Link* intra = nullptr;
  const Link* inter = nullptr;
  if (uniform && shared != nullptr) {
    json["link"] = linkToJson(*shared);
  } else if (uniform && cluster.links.size() <= 1) {
    // One device: no link to write.
  } else if (named && hostUniformLinks(cluster, intra, inter)) {
    if (intra != nullptr) json["intra_host_link"] = linkToJson(*intra);
    if (inter != nullptr) json["inter_host_link"] = linkToJson(*inter);
  } else {
    nlohmann::json matrix = nlohmann::json::array();
    for (const auto& row : cluster.links) {
      nlohmann::json items = nlohmann::json::array();
      for (const Link& link : row) items.push_back(linkToJson(link));
      matrix.push_back(items);
    }
    json["links"] = matrix;
  }
  if (cluster.processPerDevice) json["process_per_device"] = true;
  if (cluster.wakeLatencyNs > 0) json["wake_latency_ns"] = cluster.wakeLatencyNs;
  return json;
}

Cluster clusterFromJson(const nlohmann::json& json, const std::string& file) {
  JsonCursor root(json, file);
  if (!json.is_object()) root.fail("expected an object with schema '" + std::string(kClusterSchema) + "'");
  root.requireSchema(kClusterSchema);
  Cluster cluster;
  JsonCursor devices = root.at("devices");
  if (devices.size() == 0) devices.fail("expected at least one device");
  for (const JsonCursor& item : devices.items()) {
    DeviceSpec device;
    device.name = item.at("name").asString();
    if (item.has("memory_bytes") && !item.at("memory_bytes").value().is_null()) {
      device.memoryBytes = bytesFromJson(item.at("memory_bytes"));
    }
    if (item.has("relative_speed")) {
      JsonCursor speed = item.at("relative_speed");
      device.relativeSpeed = speed.asNumber();
      if (!(device.relativeSpeed > 0.0)) speed.fail("expected a positive number, got " + speed.value().dump());
    }
    cluster.devices.push_back(device);
  }
  cluster.hosts = hostsFromJson(devices);
  const std::size_t count = cluster.devices.size();
  if (root.has("link") && root.has("links")) root.at("links").fail("give either 'link' or 'links', not both");
  const bool hostLinks = root.has("intra_host_link") || root.has("inter_host_link");
  if (hostLinks) {
    JsonCursor given = root.at(root.has("intra_host_link") ? "intra_host_link" : "inter_host_link");
    if (cluster.hosts.empty()) {
      given.fail("expected the devices' hosts: give every device a 'host', or give 'link' or 'links' instead");
    }
    if (root.has("link")) given.fail("give either 'link' or 'intra_host_link' and 'inter_host_link', not both");
    if (root.has("links")) given.fail("give either 'links' or 'intra_host_link' and 'inter_host_link', not both");
  }
  if (root.has("links")) {
    JsonCursor matrix = root.at("links");
    if (matrix.size() != count) {
      matrix.fail("expected a " + std::to_string(count) + " x " + std::to_string(count) +
                  " matrix (one row per device), got " + std::to_string(matrix.size()) + " rows");
    }
    for (const JsonCursor& row : matrix.items()) {
      if (row.size() != count) {
        row.fail("expected " + std::to_string(count) + " links (one per device), got " + std::to_string(row.size()));
      }
      std::vector<Link> links;
      for (std::size_t b = 0; b < count; ++b) {
        JsonCursor item = row.at(b);
        links.push_back(item.value().is_null() && b == cluster.links.size() ? Link{} : linkFromJson(item));
      }
      cluster.links.push_back(links);
    }
  } else if (root.has("link")) {
    Link link = linkFromJson(root.at("link"));
    cluster.links.assign(count, std::vector<Link>(count, link));
    for (std::size_t d = 0; d < count; ++d) cluster.links[d][d] = Link{};
  } else if (hostLinks) {
    std::optional<Link> intra;
    std::optional<Link> inter;
    if (root.has("intra_host_link")) intra = linkFromJson(root.at("intra_host_link"));
    if (root.has("inter_host_link")) inter = linkFromJson(root.at("inter_host_link"));
    cluster.links.assign(count, std::vector<Link>(count, Link{}));
    for (std::size_t a = 0; a < count; ++a) {
      for (std::size_t b = 0; b < count; ++b) {
        if (a == b) continue;
        const bool sameHost = cluster.hosts[a] == cluster.hosts[b];
        const std::optional<Link>& link = sameHost ? intra : inter;
        if (!link) {
          root.fail(std::string("missing required field '") + (sameHost ? "intra_host_link" : "inter_host_link") +
                    "' (devices " + std::to_string(a) + " and " + std::to_string(b) + " are on " +
                    (sameHost ? "one host, '" + cluster.hosts[a] + "'"
                              : "different hosts, '" + cluster.hosts[a] + "' and '" + cluster.hosts[b] + "'") +
                    ")");
        }
        cluster.links[a][b] = *link;
      }
    }
  } else if (count > 1 && !cluster.hosts.empty()) {
    root.fail("missing required field 'link' (or 'intra_host_link' and 'inter_host_link', or 'links', an n x n "
              "matrix)");
  } else if (count > 1) {
    root.fail("missing required field 'link' (or 'links', an n x n matrix)");
  } else {
    cluster.links.assign(count, std::vector<Link>(count, Link{}));
  }
  if (root.has("process_per_device")) cluster.processPerDevice = root.at("process_per_device").asBool();
  if (root.has("wake_latency_ns")) cluster.wakeLatencyNs = root.at("wake_latency_ns").asNonNegativeInt();
  return cluster;
}

Cluster readCluster(const std::string& path) { return clusterFromJson(readJsonFile(path), path); }

void writeCluster(const Cluster& cluster, const std::string& path) {
  writeFileAtomically(path, toJson(cluster).dump(2) + "\n");
}

}  // namespace pipeprof
