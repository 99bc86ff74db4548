// The pipeline shape: its device count, its checks and its JSON form.
#include <pipeprof/core/pipeline_shape.h>

#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <stdexcept>

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
  const std::int64_t n = stages();
  return stagesPerDevice > 0 && n % stagesPerDevice == 0 ? n / stagesPerDevice : n;
}

std::int64_t PipelineShape::deviceOfStage(std::int64_t j) const {
  return placedDevice(stagePlacement(schedule), j, pipelineDevices());
}

std::string PipelineShape::scheduleLabel() const { return pipeprof::scheduleLabel(schedule, stagesPerDevice); }

std::string PipelineShape::shapeError(std::int64_t microBatches) const {
  if (balance.empty()) return "balance must have at least one partition (balance: [])";
  if (std::any_of(balance.begin(), balance.end(), [](std::int64_t layers) { return layers <= 0; })) {
    return "all balance numbers must be positive integer (balance: " + listText(balance) + ")";
  }
  if (chunks <= 0) return "number of chunks must be positive integer (chunks: " + std::to_string(chunks) + ")";
  return scheduleShapeError(schedule, stagesPerDevice, stages(), microBatches);
}

std::string scheduleShapeError(ScheduleKind kind, std::int64_t stagesPerDevice, std::int64_t n, std::int64_t m) {
  const std::string v = std::to_string(stagesPerDevice);
  if (stagesPerDevice < 1) return "stages per device must be positive (stages per device: " + v + ")";
  if (!hasVirtualStages(kind) && stagesPerDevice != 1) {
    return scheduleKindName(kind) + " runs one stage per device (stages per device: " + v +
           "); use the interleaved or interleaved-zb schedule for more";
  }
  if (fixedStagesPerDevice(kind) == 0 && stagesPerDevice < 2) {
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
      shape.schedule = parseScheduleKind(schedule.asString());
    } catch (const std::invalid_argument& error) {
      schedule.fail(error.what());
    }
  }
  if (root.has("stages_per_device")) {
    JsonCursor stagesPerDevice = root.at("stages_per_device");
    shape.stagesPerDevice = stagesPerDevice.asPositiveInt();
    if (shape.stages() % shape.stagesPerDevice != 0) {
      stagesPerDevice.fail("expected a divisor of the " + std::to_string(shape.stages()) +
                           " stages of the balance, got " + std::to_string(shape.stagesPerDevice));
    }
  }
  return shape;
}

}  // namespace pipeprof
