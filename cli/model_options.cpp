// Shared CLI flags for choosing a model and its batch, and device-name conversion.
#include "model_options.h"

#include "commands.h"

#include <torch/version.h>

#include <dlfcn.h>

#include <stdexcept>

namespace pipeprof::cli {

namespace {

/// OpenBLAS (Debian's LibTorch uses it for GEMM) keeps its own thread pool besides LibTorch's;
/// when several pipeline workers call GEMM at once on a small machine its threads spin against
/// each other (a 2-partition CPU step measured 10x slower here). Set it too when it is linked in.
void setBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  if (void* symbol = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(symbol)(threads);
  }
}

}  // namespace

void setThreads(std::int64_t threads) {
  torch::set_num_threads(static_cast<int>(threads));
  setBlasThreads(static_cast<int>(threads));
}

void addModelFlags(CLI::App& command, ModelFlags& flags) {
  command.add_option("--model", flags.model, "zoo model name (see `pipeprof models`) or TorchScript file (.pt)")
      ->capture_default_str();
  command.add_option("--batch", flags.batch, "mini-batch size in samples (default: the model's default batch)");
  command.add_option("--width", flags.width, "model width: hidden size / channels (default: the model's)");
  command.add_option("--depth", flags.depth, "model depth: blocks / layers (default: the model's)");
  command.add_option("--seed", flags.seed, "parameter initialisation seed")->capture_default_str();
  command.add_option("--threads", flags.threads, "intra-op threads of LibTorch and OpenBLAS (default: their own choice)");
}

Model buildModelFromFlags(const ModelFlags& flags) {
  if (flags.batch < 0) throw UsageError("--batch must be positive, got " + std::to_string(flags.batch));
  if (flags.threads < 0) throw UsageError("--threads must be positive, got " + std::to_string(flags.threads));
  if (flags.width < 0 || flags.depth < 0) {
    throw UsageError("--width and --depth must be positive (or 0 for the default), got " + std::to_string(flags.width) +
                     " and " + std::to_string(flags.depth));
  }
  if (flags.threads > 0) setThreads(flags.threads);
  ModelOptions options;
  options.width = flags.width;
  options.depth = flags.depth;
  options.seed = flags.seed;
  try {
    return buildModel(flags.model, options);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

std::int64_t batchFromFlags(const ModelFlags& flags, const Model& model) {
  return flags.batch > 0 ? flags.batch : model.defaultBatch;
}

torch::Device torchDevice(const DeviceDesc& device) {
  if (device.type == DeviceType::Cpu) return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    throw UsageError("device " + device.str() + " asked for, but CUDA is not available to LibTorch here; use cpu");
  }
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (device.index < 0 || device.index >= count) {
    throw UsageError("device " + device.str() + " does not exist: " + std::to_string(count) + " CUDA device(s)");
  }
  return torch::Device(torch::kCUDA, static_cast<torch::DeviceIndex>(device.index));
}

std::vector<torch::Device> torchDevices(const std::vector<DeviceDesc>& devices) {
  std::vector<torch::Device> out;
  out.reserve(devices.size());
  for (const DeviceDesc& device : devices) out.push_back(torchDevice(device));
  return out;
}

std::vector<DeviceDesc> parseDevicesFlag(const std::string& text) {
  try {
    return parseDeviceList(text);
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--devices: ") + error.what());
  }
}

std::string torchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace pipeprof::cli
