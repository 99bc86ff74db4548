// Shared CLI flags for choosing a model and its batch (--model, --batch, --width, --depth, --seed,
// --threads; a TorchScript model's --input-shape, --input-dtype, --vocab-size, --loss,
// --num-classes) and its devices (--devices, --procs), and the flags' words for what the tuner refuses.
#pragma once

#include "commands.h"

#include <pipeprof/core/device.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/tuner/sweep_setup.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// What the model flags hold after parsing. A flag left out holds 0 ("the model's default");
/// a flag given must be at least 1 (CLI11 refuses 0 and negative values with exit code 2).
struct ModelFlags {
  std::string model = "mlp";   ///< zoo name or TorchScript file (.pt)
  std::int64_t batch = 0;      ///< mini-batch in samples; 0 = the model's default batch
  std::int64_t width = 0;      ///< 0 = the model's default
  std::int64_t depth = 0;      ///< 0 = the model's default
  std::int64_t seed = 0;       ///< parameter initialisation seed
  std::int64_t threads = 0;    ///< LibTorch's intra-op threads (OpenBLAS stays on one); 0 = LibTorch's default
  bool tieEmbeddings = false;  ///< gpt: its head's weight is its embedding's
  /// A TorchScript model's inputs and loss (ModelOptions); empty or 0: its attributes' or the defaults.
  std::vector<std::int64_t> inputShape;
  std::string inputDtype;
  std::int64_t vocabSize = 0;
  std::string loss;
  std::int64_t numClasses = 0;

  /// The model to build (runtime/models.h).
  ModelSpec spec() const;
};

/// Adds --model, --batch, --width, --depth, --seed, --threads and a TorchScript model's task
/// flags (--input-shape, --input-dtype, --vocab-size, --loss, --num-classes) to a subcommand;
/// `threads` describes --threads (how this command chooses them when it is left out).
void addModelFlags(
    CLI::App& command, ModelFlags& flags,
    const std::string& threads = "LibTorch's intra-op threads; OpenBLAS stays on one (default: LibTorch's choice)");

/// Adds --devices (the pipeline devices, e.g. cpu,cpu or cuda:0,cuda:1; `more` goes on saying
/// how this command places its stages on them) with its default shown.
CLI::Option* addDevicesFlag(CLI::App& command, std::string& devices, const std::string& more = "");

/// A CLI11 check for a count flag whose absence means a default: the value given must be an
/// integer of at least 1; the message says what leaving the flag out means.
CLI::Validator atLeastOne(const std::string& whenLeftOut);

/// Builds the model the flags name and applies --threads. Throws std::invalid_argument (exit 2,
/// as a UsageError) for an unknown model or an unreadable file.
Model buildModelFromFlags(const ModelFlags& flags);

/// The batch the flags ask for, or the model's default batch.
std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model);

/// Parses a comma-separated device list ("cpu,cpu", "cuda:0,cuda:1"); UsageError on bad text.
std::vector<DeviceDesc> parseDevicesFlag(const std::string& text);

/// Adds --procs (one process per pipeline device: `procs` says what starts them) and --timeout
/// (`timeout` says what it bounds), as run and sweep take them.
void addProcsFlags(CLI::App& command, int& procs, double& timeoutS, const std::string& procsHelp,
                   const std::string& timeoutHelp);

/// Refuses --procs other than the `devices` pipeline devices --devices (`devicesText`) names.
void checkProcsFlag(int procs, const std::string& devicesText, std::size_t devices);

/// The model flags and --devices (`devicesText`) resolved as sweep and calibrate take them
/// (tuner::resolveSweepModel: --threads, else max(1, cores / devices)). Throws UsageError naming
/// --devices when they cannot run the model.
tuner::SweepModel resolveModelOnDevices(const ModelFlags& flags, const std::string& devicesText);

/// The flags the tuner's fields are set from, by field name ("steps" -> "--steps").
using FlagNames = std::map<std::string, std::string>;

/// The message for a field the tuner refused: the flag `flags` names for it, then the tuner's
/// words ("--steps 0: must be at least 1"); the tuner's message as it is for a field not named.
UsageError usageError(const tuner::ConfigError& error, const FlagNames& flags);
/// The message for an input that does not fit: the file, why, and the flags that fix it.
UsageError usageError(const tuner::SweepInputError& error);

/// Runs `call`; a tuner::ConfigError or tuner::SweepInputError it throws becomes the UsageError
/// usageError() words for it.
template <typename Call>
auto inFlagWords(const FlagNames& flags, Call call) {
  try {
    return call();
  } catch (const tuner::ConfigError& error) {
    throw usageError(error, flags);
  } catch (const tuner::SweepInputError& error) {
    throw usageError(error);
  }
}

}  // namespace pipeprof::cli
