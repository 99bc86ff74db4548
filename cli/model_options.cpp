// Shared CLI flags for choosing a model, its batch and its devices, and their words for the tuner's refusals.
#include "model_options.h"

#include <pipeprof/runtime/torch_environment.h>

#include <stdexcept>

namespace pipeprof::cli {

ModelSpec ModelFlags::spec() const {
  ModelSpec spec;
  spec.name = model;
  spec.options.width = width;
  spec.options.depth = depth;
  spec.options.seed = seed;
  spec.threads = threads;
  spec.options.tieEmbeddings = tieEmbeddings;
  spec.options.inputShape = inputShape;
  spec.options.inputDtype = inputDtype;
  spec.options.vocabSize = vocabSize;
  spec.options.loss = loss;
  spec.options.numClasses = numClasses;
  return spec;
}

CLI::Validator atLeastOne(const std::string& whenLeftOut) {
  return CLI::Validator(
      [whenLeftOut](std::string& text) -> std::string {
        std::int64_t value = 0;
        if (CLI::detail::lexical_cast(text, value) && value >= 1) return "";
        return "must be an integer of at least 1, got " + text + " (leave the flag out for " + whenLeftOut + ")";
      },
      "INT>=1");
}

void addModelFlags(CLI::App& command, ModelFlags& flags, const std::string& threads) {
  command.add_option("--model", flags.model, "zoo model name (see `pipeprof models`) or TorchScript file (.pt)")
      ->capture_default_str();
  command.add_option("--batch", flags.batch, "mini-batch size in samples (default: the model's default batch)")
      ->check(atLeastOne("the model's default batch"));
  command.add_option("--width", flags.width, "model width: hidden size / channels (default: the model's)")
      ->check(atLeastOne("the model's width"));
  command.add_option("--depth", flags.depth, "model depth: blocks / layers (default: the model's)")
      ->check(atLeastOne("the model's depth"));
  command.add_option("--seed", flags.seed, "parameter initialisation seed")->capture_default_str();
  command.add_option("--threads", flags.threads, threads)->check(atLeastOne("the default thread count"));
  command.add_flag("--tie-embeddings", flags.tieEmbeddings,
                   "gpt: its head's weight is its token embedding's, replicated on the stages' devices and its "
                   "gradients summed once per step");
  const std::string imported = "TorchScript models: ";
  command
      .add_option("--input-shape", flags.inputShape,
                  imported + "one sample's shape, e.g. 3,64,64 (default: the module's pipeprof_input_shape)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  command
      .add_option("--input-dtype", flags.inputDtype,
                  imported + "float samples or long token ids (default: pipeprof_input_dtype, else float)")
      ->check(CLI::IsMember({"float", "long"}));
  command
      .add_option("--vocab-size", flags.vocabSize,
                  imported + "token ids are drawn below it (default: pipeprof_vocab_size)")
      ->check(atLeastOne("the module's pipeprof_vocab_size"));
  command
      .add_option("--loss", flags.loss,
                  imported + "mse (the output's mean square), cross_entropy (against labels) or next_token "
                             "(logits against the inputs shifted by one) (default: pipeprof_loss, else mse)")
      ->check(CLI::IsMember({"mse", "cross_entropy", "next_token"}));
  command
      .add_option("--num-classes", flags.numClasses,
                  imported + "labels of cross_entropy are drawn below it (default: pipeprof_num_classes)")
      ->check(atLeastOne("the module's pipeprof_num_classes"));
}

CLI::Option* addDevicesFlag(CLI::App& command, std::string& devices, const std::string& more) {
  return command.add_option("--devices", devices, "The pipeline devices, e.g. cpu,cpu or cuda:0,cuda:1" + more)
      ->capture_default_str();
}

Model buildModelFromFlags(const ModelFlags& flags) {
  // std::invalid_argument (unknown model, bad file, a sample shape it cannot take): exit 2 as a UsageError
  Model model = buildModel(flags.spec());
  checkSamplesFit(model);
  return model;
}

std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model) {
  return flags.batch > 0 ? flags.batch : model.defaultBatch;
}

std::vector<DeviceDesc> parseDevicesFlag(const std::string& text) {
  return parseFlag("--devices", [&] { return parseDeviceList(text); });
}

void addProcsFlags(CLI::App& command, int& procs, double& timeoutS, const std::string& procsHelp,
                   const std::string& timeoutHelp) {
  command.add_option("--procs", procs, procsHelp)->check(atLeastOne("threads of one process"));
  command.add_option("--timeout", timeoutS, timeoutHelp)->capture_default_str();
}

void checkProcsFlag(int procs, const std::string& devicesText, std::size_t devices) {
  if (static_cast<std::size_t>(procs) == devices) return;
  throw UsageError("--procs " + std::to_string(procs) + " but --devices " + devicesText + " names " +
                   std::to_string(devices) + " pipeline devices: one process runs each device");
}

tuner::SweepModel resolveModelOnDevices(const ModelFlags& flags, const std::string& devicesText) {
  std::vector<DeviceDesc> devices = parseDevicesFlag(devicesText);
  return inFlagWords({{"devices", "--devices"}},
                     [&] { return tuner::resolveSweepModel(flags.spec(), std::move(devices), flags.batch); });
}

UsageError usageError(const tuner::ConfigError& error, const FlagNames& flags) {
  const auto flag = flags.find(error.field());
  return UsageError(flag == flags.end() ? std::string(error.what()) : flag->second + error.rest());
}

UsageError usageError(const tuner::SweepInputError& error) {
  using Input = tuner::SweepInputError::Input;
  switch (error.input()) {
    case Input::ResumedReport:
      return UsageError("--resume: " + error.path() + " is from another sweep (" + error.reason() +
                        "); use another -o or drop --resume");
    case Input::ResumedProfile:
      return UsageError("the profile of " + error.path() + " does not fit this sweep: " + error.reason() +
                        "; use another -o or drop --resume");
    case Input::CachedProfile:
      return UsageError("cached profile " + error.path() + " does not fit: " + error.reason() +
                        "; delete it or name another --profile to re-profile");
    case Input::ResumedCalibration: break;
  }
  return UsageError("--calibration: a resumed sweep keeps its report's calibration; drop one");
}

}  // namespace pipeprof::cli
