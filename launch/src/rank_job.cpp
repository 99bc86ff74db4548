// What one rank of a multi-process world runs: a typed job, and its JSON file (pipeprof.rank-job/v1).
#include <pipeprof/launch/rank_job.h>

#include <pipeprof/core/json_file.h>

#include <filesystem>
#include <stdexcept>

namespace pipeprof::launch {
namespace {

nlohmann::json toJson(const ModelSpec& model) {
  nlohmann::json json = {{"name", model.name},
                         {"width", model.options.width},
                         {"depth", model.options.depth},
                         {"seed", model.options.seed},
                         {"threads", model.threads}};
  if (!model.options.inputShape.empty()) json["input_shape"] = model.options.inputShape;
  if (!model.options.inputDtype.empty()) json["input_dtype"] = model.options.inputDtype;
  if (model.options.vocabSize > 0) json["vocab_size"] = model.options.vocabSize;
  if (!model.options.loss.empty()) json["loss"] = model.options.loss;
  if (model.options.numClasses > 0) json["num_classes"] = model.options.numClasses;
  if (model.options.tieEmbeddings) json["tie_embeddings"] = true;
  return json;
}

ModelSpec modelFromJson(const JsonCursor& json) {
  ModelSpec model;
  model.name = json.at("name").asString();
  if (model.name.empty()) json.at("name").fail("expected a zoo model's name or a TorchScript file");
  model.options.width = json.at("width").asNonNegativeInt();
  model.options.depth = json.at("depth").asNonNegativeInt();
  model.options.seed = json.at("seed").asInt();
  model.threads = json.at("threads").asNonNegativeInt();
  if (json.has("input_shape")) {
    for (const JsonCursor& size : json.at("input_shape").items())
      model.options.inputShape.push_back(size.asPositiveInt());
  }
  if (json.has("input_dtype")) model.options.inputDtype = json.at("input_dtype").asString();
  if (json.has("vocab_size")) model.options.vocabSize = json.at("vocab_size").asPositiveInt();
  if (json.has("loss")) model.options.loss = json.at("loss").asString();
  if (json.has("num_classes")) model.options.numClasses = json.at("num_classes").asPositiveInt();
  if (json.has("tie_embeddings")) model.options.tieEmbeddings = json.at("tie_embeddings").asBool();
  return model;
}

}  // namespace

nlohmann::json toJson(const RankJob& job) {
  nlohmann::json json = {{"schema", kRankJobSchema}};
  if (job.kind == RankJobKind::Train) {
    json["kind"] = "train";
    json["model"] = toJson(job.model);
    json["candidate"] = pipeprof::toJson(job.candidate);
    nlohmann::json devices = nlohmann::json::array();
    for (const DeviceDesc& device : job.devices) devices.push_back(device.str());
    json["devices"] = devices;
    json["steps"] = job.steps;
    json["warmup_steps"] = job.warmupSteps;
    json["optimizer"] = pipeprof::toJson(job.optimizer);
    json["precision"] = precisionName(job.precision);
    json["trace_path"] = job.tracePath;
    json["cupti_mode"] = cuptiModeName(job.cuptiMode);
  } else {
    json["kind"] = "link_benchmark";
    json["link_device"] = job.linkDevice;
    json["repeats"] = job.repeats;
  }
  json["timeout_ms"] = job.timeout.count();
  json["cpu_binding"] = cpuBindingName(job.cpuBinding);
  nlohmann::json rankCpus = nlohmann::json::array();
  for (const std::vector<int>& cpus : job.rankCpus) rankCpus.push_back(formatCpuList(cpus));
  json["rank_cpus"] = rankCpus;
  json["result_dir"] = job.resultDir;
  return json;
}

RankJob rankJobFromJson(const nlohmann::json& json, const std::string& file) {
  const JsonCursor root(json, file);
  if (!json.is_object()) root.fail("expected a rank job object with schema \"" + std::string(kRankJobSchema) + "\"");
  root.requireSchema(kRankJobSchema);
  RankJob job;
  const JsonCursor kind = root.at("kind");
  const std::string kindName = kind.asString();
  if (kindName == "train") {
    job.kind = RankJobKind::Train;
    job.model = modelFromJson(root.at("model"));
    job.candidate = candidateFromJson(root.at("candidate").value(), file, "$.candidate");
    const JsonCursor devices = root.at("devices");
    for (const JsonCursor& device : devices.items()) job.devices.push_back(parseAt(device, DeviceDesc::parse));
    const auto pipelineDevices = static_cast<std::size_t>(job.candidate.pipelineDevices());
    if (job.devices.size() != pipelineDevices) {
      devices.fail("expected one device per pipeline device of the candidate (" + std::to_string(pipelineDevices) +
                   "), got " + std::to_string(job.devices.size()));
    }
    job.steps = root.at("steps").asPositiveInt();
    job.warmupSteps = root.at("warmup_steps").asNonNegativeInt();
    job.optimizer = optimizerFromJson(root.at("optimizer"));
    job.precision = parseAt(root.at("precision"), parsePrecision);
    job.tracePath = root.at("trace_path").asString();
    job.cuptiMode = parseAt(root.at("cupti_mode"), parseCuptiMode);
  } else if (kindName == "link_benchmark") {
    job.kind = RankJobKind::LinkBenchmark;
    const JsonCursor device = root.at("link_device");
    job.linkDevice = device.asString();
    if (job.linkDevice != "cpu" && job.linkDevice != "cuda")
      device.fail("expected \"cpu\" or \"cuda\", got \"" + job.linkDevice + "\"");
    job.repeats = static_cast<int>(root.at("repeats").asPositiveInt());
  } else {
    kind.fail("expected \"train\" or \"link_benchmark\", got \"" + kindName + "\"");
  }
  job.timeout = std::chrono::milliseconds(root.at("timeout_ms").asPositiveInt());
  job.cpuBinding = parseAt(root.at("cpu_binding"), parseCpuBinding);
  for (const JsonCursor& cpus : root.at("rank_cpus").items()) {
    const std::string text = cpus.asString();
    job.rankCpus.push_back(text.empty() ? std::vector<int>{} : parseAt(cpus, parseCpuList));
  }
  job.resultDir = root.at("result_dir").asString();
  return job;
}

void writeRankJob(const RankJob& job, const std::string& path) { writeFileAtomically(path, toJson(job).dump(2)); }

RankJob readRankJob(const std::string& path) { return rankJobFromJson(readJsonFile(path), path); }

std::string rankTracePath(const std::string& path, int rank) {
  const std::filesystem::path file(path);
  return (file.parent_path() / (file.stem().string() + ".rank" + std::to_string(rank) + file.extension().string()))
      .string();
}

std::string rankResultPath(const std::string& resultDir, int rank) {
  return (std::filesystem::path(resultDir) / ("rank" + std::to_string(rank) + ".json")).string();
}

std::string rankStagesText(int rank, const Candidate& candidate) {
  const std::int64_t p = candidate.pipelineDevices();
  std::string text;
  for (auto j = static_cast<std::int64_t>(rank); j < static_cast<std::int64_t>(candidate.balance.size()); j += p) {
    text += (text.empty() ? "" : ",") + std::to_string(j);
  }
  return (text.find(',') == std::string::npos ? "stage " : "stages ") + text;
}

std::string rankWithStagesText(int rank, const Candidate& candidate) {
  return "rank " + std::to_string(rank) + " (" + rankStagesText(rank, candidate) + ")";
}

}  // namespace pipeprof::launch
