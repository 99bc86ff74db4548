// A candidate configuration: balance, chunks, checkpoint mode, mini-batch and placement.
#include <pipeprof/core/candidate.h>

#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule_csv.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <stdexcept>

namespace pipeprof {

std::int64_t Candidate::deviceOf(std::int64_t j) const {
  const std::int64_t d = j >= 0 ? deviceOfStage(j) : 0;
  const bool placed = devices.empty() || static_cast<std::size_t>(d) < devices.size();
  if (j < 0 || j >= static_cast<std::int64_t>(balance.size()) || !placed) {
    throw std::out_of_range("stage " + std::to_string(j) + " has no device (balance: " + formatBalance(balance) +
                            ", devices: " + formatBalance(devices) + ")");
  }
  return devices.empty() ? d : devices[static_cast<std::size_t>(d)];
}

std::string Candidate::label() const {
  std::string text =
      "[" + formatBalance(balance) + "] x" + std::to_string(chunks) + " " + std::string(checkpointName(checkpoint));
  return schedule == ScheduleKind::GPipe ? text : text + " " + orderLabel();
}

MicroBatching microBatching(std::int64_t batch, std::int64_t chunks) {
  if (batch < 1) throw std::invalid_argument("batch must be positive, got " + std::to_string(batch));
  if (chunks < 1) throw std::invalid_argument("chunks must be positive, got " + std::to_string(chunks));
  MicroBatching out;
  out.chunkSize = (batch + chunks - 1) / chunks;
  out.count = (batch + out.chunkSize - 1) / out.chunkSize;
  out.lastSize = batch - (out.count - 1) * out.chunkSize;
  return out;
}

ScheduleSpec Candidate::scheduleSpec(const std::vector<SkipRoute>& skips, bool training) const {
  ScheduleSpec spec;
  static_cast<PipelineShape&>(spec) = *this;
  spec.chunks = microBatching(batch, chunks).count;
  spec.training = training;
  spec.skips = skips;
  return spec;
}

std::optional<std::vector<std::int64_t>> parseCountList(const std::string& text, std::int64_t minimum) {
  std::vector<std::int64_t> counts;
  std::size_t pos = 0;
  while (true) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == start || pos - start > 12) return std::nullopt;
    const std::int64_t value = std::stoll(text.substr(start, pos - start));
    if (value < minimum) return std::nullopt;
    counts.push_back(value);
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos == text.size()) return counts;
    if (text[pos] != ',') return std::nullopt;
    ++pos;
  }
}

std::vector<std::int64_t> parseBalance(const std::string& text) {
  std::optional<std::vector<std::int64_t>> balance = parseCountList(text, 1);
  if (!balance) {
    throw std::invalid_argument("invalid balance '" + text +
                                "': expected comma-separated positive layer counts, e.g. 2,3,3");
  }
  return std::move(*balance);
}

std::vector<std::int64_t> balanceFromSplitPoints(const std::vector<std::string>& layerNames,
                                                 const std::string& splitAt) {
  std::string known;
  for (std::size_t index = 0; index < layerNames.size(); ++index) known += (index > 0 ? ", " : "") + layerNames[index];
  std::vector<std::int64_t> starts;
  std::size_t pos = 0;
  while (pos <= splitAt.size()) {
    const std::size_t comma = std::min(splitAt.find(',', pos), splitAt.size());
    std::string name = splitAt.substr(pos, comma - pos);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const auto found = std::find(layerNames.begin(), layerNames.end(), name);
    if (found == layerNames.end()) {
      throw std::invalid_argument("no layer is named '" + name + "'; the layers are: " + known);
    }
    const auto index = static_cast<std::int64_t>(found - layerNames.begin());
    if (index == 0)
      throw std::invalid_argument("'" + name + "' is the first layer: the first stage begins there anyway");
    if (!starts.empty() && index <= starts.back()) {
      throw std::invalid_argument("'" + name + "' does not come after '" +
                                  layerNames[static_cast<std::size_t>(starts.back())] +
                                  "': give the split points in layer order, each once");
    }
    starts.push_back(index);
    pos = comma + 1;
  }
  std::vector<std::int64_t> balance;
  std::int64_t previous = 0;
  for (std::int64_t start : starts) {
    balance.push_back(start - previous);
    previous = start;
  }
  balance.push_back(static_cast<std::int64_t>(layerNames.size()) - previous);
  return balance;
}

nlohmann::json toJson(const Candidate& candidate) {
  nlohmann::json json = toJson(static_cast<const PipelineShape&>(candidate));
  json["batch"] = candidate.batch;
  if (!candidate.devices.empty()) json["devices"] = candidate.devices;
  return json;
}

Candidate candidateFromJson(const nlohmann::json& json, const std::string& file, const std::string& path) {
  JsonCursor root(json, file, path);
  if (!json.is_object()) root.fail("expected a candidate object with balance, chunks, checkpoint and batch");
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = pipelineShapeFromJson(json, file, path);
  candidate.batch = root.at("batch").asPositiveInt();
  if (root.has("devices")) {
    JsonCursor devices = root.at("devices");
    for (const JsonCursor& item : devices.items()) candidate.devices.push_back(item.asNonNegativeInt());
    const auto p = static_cast<std::size_t>(candidate.pipelineDevices());
    if (!candidate.devices.empty() && candidate.devices.size() != p) {
      devices.fail("expected one device per pipeline device (" + std::to_string(p) + "), got " +
                   std::to_string(candidate.devices.size()));
    }
  }
  return candidate;
}

namespace {

/// Eight hex digits of the order's CSV text (FNV-1a): the same on every machine and run.
std::string orderDigest(const CustomOrder& order) {
  std::uint32_t hash = 2166136261u;
  for (const char c : writeScheduleCsv(order.ranks)) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  std::string hex(8, '0');
  for (int k = 7; k >= 0; --k, hash >>= 4) hex[static_cast<std::size_t>(k)] = "0123456789abcdef"[hash & 0xfu];
  return hex;
}

}  // namespace

std::string candidateSlug(const Candidate& candidate) {
  std::string balance = formatBalance(candidate.balance);
  std::replace(balance.begin(), balance.end(), ',', '-');
  std::string slug =
      "b" + balance + "_m" + std::to_string(candidate.chunks) + "_" + std::string(checkpointName(candidate.checkpoint));
  if (candidate.schedule == ScheduleKind::GPipe) return slug;
  slug += "_" + scheduleKindName(candidate.schedule);
  if (choosesStagesPerDevice(candidate.schedule)) slug += "-v" + std::to_string(candidate.stagesPerDevice);
  if (candidate.order) slug += "-" + orderDigest(*candidate.order);
  for (std::size_t d = 0; d < candidate.deferredWeights.size(); ++d) {
    slug += (d == 0 ? "-deferred-" : "-") + std::to_string(candidate.deferredWeights[d]);
  }
  return slug;
}

}  // namespace pipeprof
