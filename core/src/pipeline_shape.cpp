// The pipeline shape: its device count, its checks and its JSON form.
#include <pipeprof/core/pipeline_shape.h>

#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace pipeprof {
namespace {

std::string listText(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t index = 0; index < values.size(); ++index) {
    if (index > 0) text += ", ";
    text += std::to_string(values[index]);
  }
  return text + "]";
}

}  // namespace

std::int64_t PipelineShape::pipelineDevices() const {
  if (order) return order->devices();
  const std::int64_t n = stages();
  return stagesPerDevice > 0 && n % stagesPerDevice == 0 ? n / stagesPerDevice : n;
}

std::int64_t PipelineShape::deviceOfStage(std::int64_t j) const {
  if (order && j >= 0 && j < order->stages()) return order->stageRank[static_cast<std::size_t>(j)];
  return placedDevice(stagePlacement(schedule), j, pipelineDevices());
}

bool PipelineShape::splitsBackward() const {
  return order ? order->splitsBackward : pipeprof::splitsBackward(schedule);
}

bool operator==(const PipelineShape& a, const PipelineShape& b) {
  const bool sameOrder = a.order == b.order || (a.order && b.order && *a.order == *b.order);
  return a.balance == b.balance && a.schedule == b.schedule && a.stagesPerDevice == b.stagesPerDevice &&
         a.chunks == b.chunks && a.checkpoint == b.checkpoint && sameOrder && a.deferredWeights == b.deferredWeights;
}

std::string PipelineShape::scheduleLabel() const { return pipeprof::scheduleLabel(schedule, stagesPerDevice); }

std::string PipelineShape::orderLabel() const {
  if (deferredWeights.empty()) return scheduleLabel();
  return scheduleLabel() + " deferred-weights " + formatBalance(deferredWeights);
}

std::string formatBalance(const std::vector<std::int64_t>& balance) {
  std::string text;
  for (std::size_t index = 0; index < balance.size(); ++index) {
    if (index > 0) text += ",";
    text += std::to_string(balance[index]);
  }
  return text;
}

std::string deferredWeightsError(ScheduleKind kind, std::int64_t p, const std::vector<std::int64_t>& deferred) {
  if (deferred.empty()) return {};
  if (kind != ScheduleKind::ZeroBubble) {
    return "deferred weights go with zb1p, not " + scheduleKindName(kind) +
           " (deferred weights: " + listText(deferred) + ")";
  }
  if (static_cast<std::int64_t>(deferred.size()) != p) {
    return "deferred weights " + listText(deferred) + " name " + std::to_string(deferred.size()) +
           " devices but the pipeline has " + std::to_string(p) + ": give one count per device";
  }
  for (std::size_t d = 0; d < deferred.size(); ++d) {
    if (deferred[d] < 0 || deferred[d] > static_cast<std::int64_t>(d)) {
      return "device " + std::to_string(d) + " defers at most " + std::to_string(d) +
             " of its W's (torch's order), not " + std::to_string(deferred[d]) +
             " (deferred weights: " + listText(deferred) + ")";
    }
  }
  return {};
}

std::string PipelineShape::shapeError(std::int64_t microBatches) const {
  if (balance.empty()) return "balance must have at least one partition (balance: [])";
  if (std::any_of(balance.begin(), balance.end(), [](std::int64_t layers) { return layers <= 0; })) {
    return "all balance numbers must be positive integer (balance: " + listText(balance) + ")";
  }
  if (chunks <= 0) return "number of chunks must be positive integer (chunks: " + std::to_string(chunks) + ")";
  if ((schedule == ScheduleKind::Custom) != static_cast<bool>(order)) {
    return order ? "a custom order runs under schedule custom, not " + scheduleKindName(schedule)
                 : "schedule custom needs its order (a schedule CSV: --schedule-file)";
  }
  if (order) {
    if (stages() != order->stages()) {
      return "the balance has " + std::to_string(stages()) + " stages but the order in " + order->source + " runs " +
             std::to_string(order->stages());
    }
    if (stagesPerDevice != order->stagesPerDevice()) {
      return "the order in " + order->source + " runs " + std::to_string(order->stagesPerDevice()) +
             " stages per rank, not " + std::to_string(stagesPerDevice);
    }
    if (microBatches != order->microBatches) {
      return "the order in " + order->source + " runs " + std::to_string(order->microBatches) +
             " micro-batches but the batch splits into " + std::to_string(microBatches);
    }
  }
  const std::string deferred = deferredWeightsError(schedule, pipelineDevices(), deferredWeights);
  if (!deferred.empty()) return deferred;
  return scheduleShapeError(schedule, stagesPerDevice, stages(), microBatches);
}

std::string scheduleShapeError(ScheduleKind kind, std::int64_t stagesPerDevice, std::int64_t n, std::int64_t m) {
  const std::string v = std::to_string(stagesPerDevice);
  if (stagesPerDevice < 1) return "stages per device must be positive (stages per device: " + v + ")";
  if (kind == ScheduleKind::Custom) return "";  // the order places its stages, any number per rank
  if (!hasVirtualStages(kind) && stagesPerDevice != 1) {
    return scheduleKindName(kind) + " runs one stage per device (stages per device: " + v +
           "); use the interleaved or interleaved-zb schedule for more";
  }
  if (choosesStagesPerDevice(kind) && stagesPerDevice < 2) {
    return scheduleKindName(kind) + " needs at least 2 stages per device (stages per device: " + v + ")";
  }
  if (!runsStagesPerDevice(kind, stagesPerDevice)) {
    return scheduleKindName(kind) + " runs exactly " + std::to_string(fixedStagesPerDevice(kind)) +
           " stages per device, device d holding stages d and 2p - 1 - d (stages per device: " + v + ")";
  }
  if (n % stagesPerDevice != 0) {
    return "the stages must split evenly over the devices: " + std::to_string(n) + " stages is not a multiple of " + v +
           " stages per device";
  }
  const std::int64_t p = n / stagesPerDevice;
  if (kind == ScheduleKind::Interleaved && m % p != 0) {
    return "interleaved needs chunks a multiple of devices (chunks: " + std::to_string(m) +
           ", devices: " + std::to_string(p) + ", stages per device: " + v + ")";
  }
  // torch's ScheduleInterleavedZeroBubble runs the micro-batches in max(1, m / p) rounds of equal size.
  const std::int64_t rounds = std::max<std::int64_t>(1, m / p);
  if (kind == ScheduleKind::InterleavedZeroBubble && m % rounds != 0) {
    return "interleaved-zb runs the chunks in max(1, chunks / devices) rounds of equal size: " + std::to_string(m) +
           " chunks do not split into " + std::to_string(rounds) + " (devices: " + std::to_string(p) + ")";
  }
  return {};
}

nlohmann::json toJson(const PipelineShape& shape) {
  nlohmann::json json = {{"balance", shape.balance},
                         {"chunks", shape.chunks},
                         {"checkpoint", std::string(checkpointName(shape.checkpoint))},
                         {"schedule", scheduleKindName(shape.schedule)}};
  if (shape.stagesPerDevice != 1) json["stages_per_device"] = shape.stagesPerDevice;
  if (!shape.deferredWeights.empty()) json["deferred_weights"] = shape.deferredWeights;
  if (shape.order) {
    std::vector<std::string> rows;
    for (const auto& actions : shape.order->ranks) {
      std::string row = writeScheduleCsv({actions});
      row.pop_back();  // the line's newline
      rows.push_back(std::move(row));
    }
    json["order"] = rows;
  }
  return json;
}

PipelineShape pipelineShapeFromJson(const nlohmann::json& json, const std::string& file, const std::string& path) {
  JsonCursor root(json, file, path);
  if (!json.is_object()) root.fail("expected a pipeline shape object with balance, chunks and checkpoint");
  PipelineShape shape;
  JsonCursor balance = root.at("balance");
  if (balance.size() == 0) balance.fail("expected at least one partition");
  for (const JsonCursor& item : balance.items()) shape.balance.push_back(item.asPositiveInt());
  shape.chunks = root.at("chunks").asPositiveInt();
  JsonCursor checkpoint = root.at("checkpoint");
  try {
    shape.checkpoint = parseCheckpoint(checkpoint.asString());
  } catch (const std::invalid_argument& error) {
    checkpoint.fail(error.what());
  }
  if (root.has("schedule")) {
    JsonCursor schedule = root.at("schedule");
    try {
      shape.schedule = parseScheduleKindOrCustom(schedule.asString());
    } catch (const std::invalid_argument& error) {
      schedule.fail(error.what());
    }
  }
  if (shape.schedule == ScheduleKind::Custom || root.has("order")) {
    JsonCursor order = root.at("order");
    if (shape.schedule != ScheduleKind::Custom) order.fail("an order goes with schedule custom");
    std::string csv;
    for (const JsonCursor& row : order.items()) csv += row.asString() + "\n";
    try {
      shape.order = makeCustomOrder(readScheduleCsv(csv, file), file);
    } catch (const std::invalid_argument& error) {
      order.fail(error.what());
    }
  }
  if (root.has("stages_per_device")) {
    JsonCursor stagesPerDevice = root.at("stages_per_device");
    shape.stagesPerDevice = stagesPerDevice.asPositiveInt();
    if (shape.order && shape.stagesPerDevice != shape.order->stagesPerDevice()) {
      stagesPerDevice.fail("expected " + std::to_string(shape.order->stagesPerDevice()) +
                           ", the most stages a rank of the order holds, got " + std::to_string(shape.stagesPerDevice));
    }
    if (!shape.order && shape.stages() % shape.stagesPerDevice != 0) {
      stagesPerDevice.fail("expected a divisor of the " + std::to_string(shape.stages()) +
                           " stages of the balance, got " + std::to_string(shape.stagesPerDevice));
    }
  }
  if (root.has("deferred_weights")) {
    JsonCursor deferred = root.at("deferred_weights");
    for (const JsonCursor& item : deferred.items()) shape.deferredWeights.push_back(item.asNonNegativeInt());
    const std::string error = deferredWeightsError(shape.schedule, shape.pipelineDevices(), shape.deferredWeights);
    if (!error.empty()) deferred.fail(error);
  }
  return shape;
}

}  // namespace pipeprof
