// The calibration (pipeprof.calibration/v1): its application to a profile and cluster, and its JSON form.
#include <pipeprof/simulator/calibration.h>

#include "cost_model.h"

#include <pipeprof/core/json_file.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace pipeprof {
namespace {

TimeNs scaled(TimeNs ns, double scale) { return static_cast<TimeNs>(static_cast<double>(ns) * scale + 0.5); }

/// `value` with two decimals.
std::string twoDecimals(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

/// A positive, finite number (a scale or a speed).
double positiveNumber(const JsonCursor& json) {
  const double value = json.asNumber();
  if (!(value > 0.0) || !std::isfinite(value)) json.fail("expected a positive number, got " + json.value().dump());
  return value;
}

std::vector<std::int64_t> intList(const JsonCursor& json) {
  std::vector<std::int64_t> values;
  for (const JsonCursor& item : json.items()) values.push_back(item.asPositiveInt());
  return values;
}

/// "1.00-1.25": the range of one member of the scales.
std::string scaleRange(const ScheduleCorrections& corrections, double MicroBatchScale::*member) {
  double low = corrections.scales.begin()->second.*member;
  double high = low;
  for (const auto& [size, scale] : corrections.scales) {
    low = std::min(low, scale.*member);
    high = std::max(high, scale.*member);
  }
  return twoDecimals(low) + "-" + twoDecimals(high);
}

/// "1.00 us-1.50 us", or "none".
std::string overheadRange(const ScheduleCorrections& corrections) {
  if (corrections.stepOverheadNs.empty()) return "none";
  TimeNs lowNs = corrections.stepOverheadNs.begin()->second;
  TimeNs highNs = lowNs;
  for (const auto& [chunks, ns] : corrections.stepOverheadNs) {
    lowNs = std::min(lowNs, ns);
    highNs = std::max(highNs, ns);
  }
  return formatDuration(lowNs) + "-" + formatDuration(highNs);
}

std::string speedList(const ScheduleCorrections& corrections) {
  std::vector<std::string> speeds;
  for (const double speed : corrections.deviceSpeeds) speeds.push_back(twoDecimals(speed));
  return speeds.empty() ? std::string("1") : joined(speeds);
}

/// Whether some size sets `scale` other than 1 (a calibration fitted before that scale was has
/// none: the loss's, the stage switch's, the first-in-step one).
bool setsScale(const ScheduleCorrections& corrections, double MicroBatchScale::*scale) {
  return std::any_of(corrections.scales.begin(), corrections.scales.end(),
                     [scale](const auto& entry) { return entry.second.*scale != 1.0; });
}

/// "layers chained in the pipeline take ...; device speeds ...; step overhead ...".
std::string describeCorrections(const ScheduleCorrections& corrections) {
  std::string scales = "none";
  if (!corrections.scales.empty()) {
    scales = scaleRange(corrections, &MicroBatchScale::forward) + " (forward) and " +
             scaleRange(corrections, &MicroBatchScale::backward) + " (backward)";
    if (setsScale(corrections, &MicroBatchScale::loss))
      scales += ", the loss " + scaleRange(corrections, &MicroBatchScale::loss) + ",";
    scales += " x their profiled time at micro-batches " + std::to_string(corrections.scales.begin()->first) + "-" +
              std::to_string(corrections.scales.rbegin()->first);
    if (setsScale(corrections, &MicroBatchScale::afterStageSwitch)) {
      scales += "; an op after another stage's op on its device runs " +
                scaleRange(corrections, &MicroBatchScale::afterStageSwitch) + "x one on a device of one stage";
    }
    if (setsScale(corrections, &MicroBatchScale::firstInStep)) {
      scales += "; a stage's first op of a kind in a step runs " +
                scaleRange(corrections, &MicroBatchScale::firstInStep) + "x a later one";
    }
  }
  std::string overheads = overheadRange(corrections);
  if (!corrections.stepOverheadNs.empty())
    overheads += " (grad zeroing, waking the workers, what the simulated ops miss)";
  return "layers chained in the pipeline take " + scales + "; device speeds " + speedList(corrections) +
         "; step overhead " + overheads;
}

/// The same, short: "scales 1.00-1.00 forward, 1.25-1.25 backward, speeds 1, overhead 900 ns-900 ns".
std::string describeCorrectionsBriefly(const ScheduleCorrections& corrections) {
  std::string scales = corrections.scales.empty()
                           ? std::string("none")
                           : scaleRange(corrections, &MicroBatchScale::forward) + " forward, " +
                                 scaleRange(corrections, &MicroBatchScale::backward) + " backward";
  if (setsScale(corrections, &MicroBatchScale::loss))
    scales += ", " + scaleRange(corrections, &MicroBatchScale::loss) + " loss";
  return "scales " + scales + ", speeds " + speedList(corrections) + ", overhead " + overheadRange(corrections);
}

/// scheduleLabel's forms: "gpipe", "1f1b", "zb1p", "zbv", or "interleaved vN", "interleaved-zb vN" with N >= 2.
bool isScheduleLabel(const std::string& text) {
  for (ScheduleKind kind : kScheduleKinds) {
    if (choosesStagesPerDevice(kind)) {
      const std::string prefix = scheduleKindName(kind) + " v";
      if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size() || text.size() > prefix.size() + 6) continue;
      const std::string digits = text.substr(prefix.size());
      if (digits.front() == '0' || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      if (std::stoll(digits) >= 2) return true;
    } else if (text == scheduleKindName(kind)) {
      return true;
    }
  }
  return false;
}

/// `schedule` and `checkpoint` of an object; absent, GPipe's and `never` (a calibration
/// written before shapes timed only those).
ReferenceShape shapeFromJson(const JsonCursor& json) {
  ReferenceShape shape;
  if (json.has("schedule")) {
    const JsonCursor schedule = json.at("schedule");
    shape.schedule = schedule.asString();
    if (!isScheduleLabel(shape.schedule)) {
      schedule.fail("expected a schedule (gpipe, 1f1b, zb1p, zbv, interleaved vN or interleaved-zb vN), got '" +
                    shape.schedule + "'");
    }
  }
  if (json.has("checkpoint")) {
    const JsonCursor checkpoint = json.at("checkpoint");
    try {
      shape.checkpoint = parseCheckpoint(checkpoint.asString());
    } catch (const std::invalid_argument&) {
      checkpoint.fail("expected always, except_last or never, got '" + checkpoint.asString() + "'");
    }
  }
  return shape;
}

nlohmann::json correctionsToJson(const ScheduleCorrections& corrections) {
  nlohmann::json scales = nlohmann::json::array();
  for (const auto& [size, scale] : corrections.scales) {
    nlohmann::json entry = {
        {"micro_batch", size}, {"forward", scale.forward}, {"backward", scale.backward}, {"loss", scale.loss}};
    if (scale.afterStageSwitch != 1.0) entry["after_stage_switch"] = scale.afterStageSwitch;
    if (scale.firstInStep != 1.0) entry["first_in_step"] = scale.firstInStep;
    scales.push_back(std::move(entry));
  }
  nlohmann::json overheads = nlohmann::json::array();
  for (const auto& [chunks, ns] : corrections.stepOverheadNs) overheads.push_back({{"chunks", chunks}, {"ns", ns}});
  return {{"micro_batch_scales", scales}, {"device_speeds", corrections.deviceSpeeds}, {"step_overhead_ns", overheads}};
}

ScheduleCorrections correctionsFromJson(const JsonCursor& json) {
  ScheduleCorrections corrections;
  if (json.has("micro_batch_scales")) {
    for (const JsonCursor& item : json.at("micro_batch_scales").items()) {
      const std::int64_t size = item.at("micro_batch").asPositiveInt();
      if (corrections.scales.count(size) > 0)
        item.at("micro_batch").fail("micro-batch " + std::to_string(size) + " given twice");
      MicroBatchScale& scale = corrections.scales[size];
      scale.forward = positiveNumber(item.at("forward"));
      scale.backward = positiveNumber(item.at("backward"));
      if (item.has("loss")) scale.loss = positiveNumber(item.at("loss"));  // absent: fitted before the loss was
      if (item.has("after_stage_switch")) scale.afterStageSwitch = positiveNumber(item.at("after_stage_switch"));
      if (item.has("first_in_step")) scale.firstInStep = positiveNumber(item.at("first_in_step"));
    }
  }
  if (json.has("device_speeds")) {
    for (const JsonCursor& item : json.at("device_speeds").items())
      corrections.deviceSpeeds.push_back(positiveNumber(item));
  }
  if (json.has("step_overhead_ns")) {
    for (const JsonCursor& item : json.at("step_overhead_ns").items()) {
      const std::int64_t chunks = item.at("chunks").asPositiveInt();
      if (corrections.stepOverheadNs.count(chunks) > 0) {
        item.at("chunks").fail("chunk count " + std::to_string(chunks) + " given twice");
      }
      corrections.stepOverheadNs[chunks] = item.at("ns").asNonNegativeInt();
    }
  }
  return corrections;
}

nlohmann::json provenanceToJson(const CalibrationProvenance& provenance) {
  nlohmann::json references = nlohmann::json::array();
  for (const CalibrationReference& reference : provenance.references) {
    references.push_back({{"schedule", reference.shape.schedule},
                          {"checkpoint", checkpointName(reference.shape.checkpoint)},
                          {"chunks", reference.chunks},
                          {"balance", reference.balance},
                          {"steps", reference.steps},
                          {"step_ns_median", reference.stepNsMedian}});
  }
  return {{"model", provenance.model},
          {"batch", provenance.batch},
          {"devices", provenance.devices},
          {"threads", provenance.threads},
          {"torch_version", provenance.torchVersion},
          {"pipeprof_revision", provenance.pipeprofRevision},
          {"created_at", provenance.createdAt},
          {"rounds", provenance.rounds},
          {"references", references}};
}

std::string optionalString(const JsonCursor& json, const std::string& key) {
  return json.has(key) ? json.at(key).asString() : std::string();
}

std::int64_t optionalCount(const JsonCursor& json, const std::string& key) {
  return json.has(key) ? json.at(key).asNonNegativeInt() : 0;
}

CalibrationProvenance provenanceFromJson(const JsonCursor& json) {
  CalibrationProvenance provenance;
  provenance.model = optionalString(json, "model");
  provenance.batch = optionalCount(json, "batch");
  if (json.has("devices")) {
    for (const JsonCursor& item : json.at("devices").items()) provenance.devices.push_back(item.asString());
  }
  provenance.threads = optionalCount(json, "threads");
  provenance.torchVersion = optionalString(json, "torch_version");
  provenance.pipeprofRevision = optionalString(json, "pipeprof_revision");
  provenance.createdAt = optionalString(json, "created_at");
  provenance.rounds = optionalCount(json, "rounds");
  if (json.has("references")) {
    for (const JsonCursor& item : json.at("references").items()) {
      CalibrationReference reference;
      reference.shape = shapeFromJson(item);
      reference.chunks = item.at("chunks").asPositiveInt();
      if (item.has("balance")) reference.balance = intList(item.at("balance"));
      reference.steps = optionalCount(item, "steps");
      reference.stepNsMedian = optionalCount(item, "step_ns_median");
      provenance.references.push_back(std::move(reference));
    }
  }
  return provenance;
}

}  // namespace

TimeNs ScheduleCorrections::stepOverheadNsFor(std::int64_t chunks) const {
  if (stepOverheadNs.empty()) return 0;
  auto above = stepOverheadNs.upper_bound(chunks);
  return above == stepOverheadNs.begin() ? above->second : std::prev(above)->second;
}

std::string ReferenceShape::label() const { return schedule + " " + std::string(checkpointName(checkpoint)); }

const ReferenceShape* Calibration::correctingShape(const ReferenceShape& shape) const {
  auto own = byShape.find(shape);
  for (const Checkpoint mode : {Checkpoint::Never, Checkpoint::ExceptLast, Checkpoint::Always}) {
    if (own == byShape.end()) own = byShape.find({shape.schedule, mode});
  }
  return own == byShape.end() ? nullptr : &own->first;
}

const ScheduleCorrections& Calibration::correctionsFor(const ReferenceShape& shape) const {
  const ReferenceShape* key = correctingShape(shape);
  return key == nullptr ? *this : byShape.at(*key);
}

std::optional<TimeNs> Calibration::lossColdStartNsFor(const ReferenceShape& shape) const {
  auto own = lossColdStartByShape.find(shape);
  if (own == lossColdStartByShape.end()) {
    const ReferenceShape* correcting = correctingShape(shape);
    if (correcting != nullptr) own = lossColdStartByShape.find(*correcting);
  }
  return own == lossColdStartByShape.end() ? lossColdStartNs : std::optional<TimeNs>(own->second);
}

Calibration Calibration::forShape(const ReferenceShape& shape) const {
  Calibration calibration = *this;
  static_cast<ScheduleCorrections&>(calibration) = correctionsFor(shape);
  calibration.byShape.clear();
  calibration.lossColdStartNs = lossColdStartNsFor(shape);
  calibration.lossColdStartByShape.clear();
  return calibration;
}

Profile calibratedProfile(Profile profile, const Calibration& calibration) {
  if (calibration.lossColdStartNs) profile.loss.coldStartNs = *calibration.lossColdStartNs;
  if (calibration.scales.empty()) return profile;
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) {
      auto scale = calibration.scales.find(cost.microBatch);
      if (scale == calibration.scales.end()) continue;
      cost.forwardNs = scaled(cost.forwardNs, scale->second.forward);
      if (cost.forwardNoGradNs) cost.forwardNoGradNs = scaled(*cost.forwardNoGradNs, scale->second.forward);
      cost.backwardNs = scaled(cost.backwardNs, scale->second.backward);
      if (cost.backwardSplit) {  // I and W: the backward's scale (the references run whole backwards)
        cost.backwardSplit->inputNs = scaled(cost.backwardSplit->inputNs, scale->second.backward);
        cost.backwardSplit->weightNs = scaled(cost.backwardSplit->weightNs, scale->second.backward);
      }
    }
  }
  for (const auto& [size, scale] : calibration.scales) {
    if (scale.afterStageSwitch != 1.0) profile.stageSwitchScales[size] = scale.afterStageSwitch;
    if (scale.firstInStep != 1.0) profile.firstInStepScales[size] = scale.firstInStep;
  }
  for (CostSample& cost : profile.loss.costs) {  // the loss op, and the last stage's recompute that runs it
    auto scale = calibration.scales.find(cost.microBatch);
    if (scale != calibration.scales.end()) cost.forwardNs = scaled(cost.forwardNs, scale->second.loss);
  }
  return profile;
}

Cluster calibratedCluster(Cluster cluster, const Calibration& calibration) {
  for (std::size_t d = 0; d < cluster.devices.size() && d < calibration.deviceSpeeds.size(); ++d) {
    cluster.devices[d].relativeSpeed = calibration.deviceSpeeds[d];
  }
  if (calibration.messageLatencyNs) {
    // The references measured messages between ranks of one host: links between hosts keep theirs.
    for (std::int64_t a = 0; a < cluster.deviceCount() && a < static_cast<std::int64_t>(cluster.links.size()); ++a) {
      std::vector<Link>& row = cluster.links[static_cast<std::size_t>(a)];
      for (std::int64_t b = 0; b < static_cast<std::int64_t>(row.size()); ++b) {
        Link& link = row[static_cast<std::size_t>(b)];
        if (a == b || sim::isZeroCostLink(link) || cluster.hostOf(a) != cluster.hostOf(b)) continue;
        link.latencyNs = *calibration.messageLatencyNs;
      }
    }
  }
  if (calibration.wakeLatencyNs) cluster.wakeLatencyNs = *calibration.wakeLatencyNs;
  return cluster;
}

std::string describeCalibration(const Calibration& calibration) {
  if (calibration.empty()) return "calibration: none (predicting from the raw profile)";
  std::string text = "calibration: " + describeCorrections(calibration);
  for (const auto& [shape, corrections] : calibration.byShape) {
    text += "; " + shape.label() + ": " + describeCorrectionsBriefly(corrections);
  }
  if (calibration.messageLatencyNs) {
    text += "; messages between ranks " + formatDuration(*calibration.messageLatencyNs) + " latency";
  }
  if (calibration.wakeLatencyNs) {
    text += "; a waiting worker wakes " + formatDuration(*calibration.wakeLatencyNs) + " after its data";
  }
  if (!calibration.lossColdStartByShape.empty()) {
    TimeNs least = calibration.lossColdStartByShape.begin()->second;
    TimeNs most = least;
    for (const auto& [shape, ns] : calibration.lossColdStartByShape) {
      least = std::min(least, ns);
      most = std::max(most, ns);
    }
    text += "; a step's first loss takes " + formatDuration(least) + "-" + formatDuration(most) +
            " more than its later ones, by schedule";
    if (calibration.lossColdStartNs) text += " (" + formatDuration(*calibration.lossColdStartNs) + " for the others)";
  } else if (calibration.lossColdStartNs) {
    text += "; a step's first loss takes " + formatDuration(*calibration.lossColdStartNs) + " more than its later ones";
  }
  return text;
}

nlohmann::json toJson(const Calibration& calibration) {
  nlohmann::json json = {{"schema", kCalibrationSchema}};
  json.update(correctionsToJson(calibration));
  if (!calibration.byShape.empty()) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& [shape, corrections] : calibration.byShape) {
      nlohmann::json entry = {{"schedule", shape.schedule}, {"checkpoint", checkpointName(shape.checkpoint)}};
      entry.update(correctionsToJson(corrections));
      shapes.push_back(std::move(entry));
    }
    json["shapes"] = std::move(shapes);
  }
  if (calibration.messageLatencyNs) json["message_latency_ns"] = *calibration.messageLatencyNs;
  if (calibration.wakeLatencyNs) json["wake_latency_ns"] = *calibration.wakeLatencyNs;
  if (calibration.lossColdStartNs) json["loss_cold_start_ns"] = *calibration.lossColdStartNs;
  if (!calibration.lossColdStartByShape.empty()) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& [shape, ns] : calibration.lossColdStartByShape) {
      shapes.push_back({{"schedule", shape.schedule}, {"checkpoint", checkpointName(shape.checkpoint)}, {"ns", ns}});
    }
    json["loss_cold_starts"] = std::move(shapes);
  }
  json["measured"] = provenanceToJson(calibration.provenance);
  return json;
}

Calibration calibrationFromJson(const nlohmann::json& json, const std::string& file, const std::string& jsonPath) {
  JsonCursor root(json, file, jsonPath);
  if (!json.is_object()) root.fail("expected an object with schema '" + std::string(kCalibrationSchema) + "'");
  root.requireSchema(kCalibrationSchema);
  Calibration calibration;
  static_cast<ScheduleCorrections&>(calibration) = correctionsFromJson(root);
  if (root.has("shapes")) {
    for (const JsonCursor& item : root.at("shapes").items()) {
      (void)item.at("schedule");  // required here: throws naming it when it is missing
      const ReferenceShape shape = shapeFromJson(item);
      if (calibration.byShape.count(shape) > 0) item.fail("shape '" + shape.label() + "' given twice");
      calibration.byShape[shape] = correctionsFromJson(item);
    }
  }
  if (root.has("message_latency_ns")) calibration.messageLatencyNs = root.at("message_latency_ns").asNonNegativeInt();
  if (root.has("wake_latency_ns")) calibration.wakeLatencyNs = root.at("wake_latency_ns").asNonNegativeInt();
  if (root.has("loss_cold_start_ns")) {
    calibration.lossColdStartNs = root.at("loss_cold_start_ns").asNonNegativeInt();
  }
  if (root.has("loss_cold_starts")) {
    for (const JsonCursor& item : root.at("loss_cold_starts").items()) {
      (void)item.at("schedule");  // required here: throws naming it when it is missing
      const ReferenceShape shape = shapeFromJson(item);
      if (calibration.lossColdStartByShape.count(shape) > 0) item.fail("shape '" + shape.label() + "' given twice");
      calibration.lossColdStartByShape[shape] = item.at("ns").asNonNegativeInt();
    }
  }
  if (root.has("measured")) calibration.provenance = provenanceFromJson(root.at("measured"));
  return calibration;
}

void writeCalibration(const Calibration& calibration, const std::string& path) {
  writeFileAtomically(path, toJson(calibration).dump(2) + "\n");
}

namespace {

/// A report's "calibration" object (Report::calibration) as a Calibration: see reportCalibration.
Calibration calibrationOfReportJson(const nlohmann::json& json, const std::string& file) {
  if (!json.is_object()) return {};
  if (!json.contains("chained")) return calibrationFromJson(json, file, "$.calibration");
  // Before pipeprof.calibration/v1 the report embedded the calibrated profile and cluster:
  // only the step overheads are still to apply.
  Calibration calibration;
  const JsonCursor chained = JsonCursor(json, file, "$.calibration").at("chained");
  if (chained.value().is_object() && chained.has("step_overhead_ns")) {
    for (const JsonCursor& item : chained.at("step_overhead_ns").items()) {
      calibration.stepOverheadNs[item.at("chunks").asPositiveInt()] = item.at("ns").asNonNegativeInt();
    }
  }
  return calibration;
}

}  // namespace

Calibration readCalibration(const std::string& path) {
  const nlohmann::json json = readJsonFile(path);
  if (!json.is_object() || json.value("schema", std::string()) != kReportSchema) return calibrationFromJson(json, path);
  // A sweep's report: the calibration its predictions used, read without the rest of it.
  const auto calibration = json.find("calibration");
  if (calibration != json.end() && calibration->is_object()) return calibrationOfReportJson(*calibration, path);
  if (calibration != json.end() && !calibration->is_null()) {
    throw FormatError(path, "$.calibration", "expected an object, got " + calibration->dump());
  }
  std::string why = "its sweep predicted from the raw profile";
  if (json.value("calibration_pending", false)) why = "its sweep was stopped before its calibration ended";
  if (json.contains("calibration_error")) why = "its calibration failed: " + json.value("calibration_error", "");
  throw FormatError(
      path, "$.calibration",
      "a sweep report without a calibration (" + why +
          "); give a calibration file from `pipeprof calibrate`, or the report of a sweep that calibrated");
}

Calibration reportCalibration(const Report& report, const std::string& file) {
  return calibrationOfReportJson(report.calibration, file);
}

}  // namespace pipeprof
