// Where LibTorch runs: version, intra-op threads (LibTorch's; OpenBLAS on one), host memory reuse, torch devices.
#include <pipeprof/runtime/torch_environment.h>

#include <torch/version.h>

#include <dlfcn.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace pipeprof {
namespace {

/// OpenBLAS's own pool, when OpenBLAS is linked in (Debian's LibTorch uses it for GEMM).
void setBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  if (void* symbol = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(symbol)(threads);
  }
}

}  // namespace

void setIntraOpThreads(std::int64_t threads) {
  if (threads < 1) throw std::invalid_argument("intra-op threads must be at least 1, got " + std::to_string(threads));
  torch::set_num_threads(static_cast<int>(threads));
  keepBlasOnOneThread();
}

void keepBlasOnOneThread() { setBlasThreads(1); }

bool keepFreedHostMemory() {
#ifdef __GLIBC__
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return false;
  constexpr int kTrimThresholdBytes = 1 << 30;
  constexpr int kMmapThresholdBytes = 32 << 20;  // glibc refuses more on 64-bit hosts
  // A thread arena's heaps are 64 MiB (glibc's HEAP_MAX_SIZE on 64-bit hosts). glibc unmaps an
  // emptied heap unless the heap before it has less than the top pad free, whatever the trim
  // threshold: a pad of a whole heap keeps every one.
  constexpr int kTopPadBytes = 64 << 20;
  return mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 && mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1 &&
         mallopt(M_TOP_PAD, kTopPadBytes) == 1;
#else
  return false;
#endif
}

std::string torchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

torch::Device torchDevice(const DeviceDesc& device) {
  if (device.type == DeviceType::Cpu) return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    throw std::invalid_argument("device " + device.str() +
                                " asked for, but CUDA is not available to LibTorch here; use cpu");
  }
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (device.index < 0 || device.index >= count) {
    throw std::invalid_argument("device " + device.str() + " does not exist: " + std::to_string(count) +
                                " CUDA device(s)");
  }
  return torch::Device(torch::kCUDA, static_cast<torch::DeviceIndex>(device.index));
}

std::vector<torch::Device> torchDevices(const std::vector<DeviceDesc>& devices) {
  std::vector<torch::Device> out;
  out.reserve(devices.size());
  for (const DeviceDesc& device : devices) out.push_back(torchDevice(device));
  return out;
}

}  // namespace pipeprof
