// Shared CLI flags for choosing a model and its batch (--model, --batch, --width, --depth, --seed,
// --threads) and for turning device names into torch devices.
#pragma once

#include <pipeprof/core/device.h>
#include <pipeprof/runtime/models.h>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// What the model flags hold after parsing.
struct ModelFlags {
  std::string model = "mlp";   ///< zoo name or TorchScript file (.pt)
  std::int64_t batch = 0;      ///< mini-batch in samples; 0 = the model's default batch
  std::int64_t width = 0;      ///< 0 = the model's default
  std::int64_t depth = 0;      ///< 0 = the model's default
  std::int64_t seed = 0;       ///< parameter initialisation seed
  std::int64_t threads = 0;    ///< intra-op threads (LibTorch and OpenBLAS); 0 = leave their defaults
};

/// Adds --model, --batch, --width, --depth, --seed and --threads to a subcommand.
void addModelFlags(CLI::App& command, ModelFlags& flags);

/// Sets LibTorch's intra-op threads and, when OpenBLAS is linked in, OpenBLAS's own pool.
void setThreads(std::int64_t threads);

/// Builds the model the flags name and applies --threads. Throws UsageError for an unknown
/// model, an unreadable file or a non-positive batch/threads value.
Model buildModelFromFlags(const ModelFlags& flags);

/// The batch the flags ask for, or the model's default batch.
std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model);

/// torch::Device for "cpu" / "cuda:N". Throws UsageError when CUDA is not available or the
/// index is out of range, naming the device and how many CUDA devices there are.
torch::Device torchDevice(const DeviceDesc& device);
std::vector<torch::Device> torchDevices(const std::vector<DeviceDesc>& devices);

/// Parses a comma-separated device list ("cpu,cpu", "cuda:0,cuda:1"); UsageError on bad text.
std::vector<DeviceDesc> parseDevicesFlag(const std::string& text);

/// LibTorch's version, e.g. "1.13.0".
std::string torchVersion();

}  // namespace pipeprof::cli
