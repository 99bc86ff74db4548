// The math libraries' workspaces on CUDA devices (LibTorch 2.x CUDA builds): cleared through
// ATen, measured as the caching allocator's growth from one fresh (thread, stream) pair.
//
// LibTorch 2.x keeps a cuBLAS workspace per (cuBLAS handle, stream) in
// ATen/cuda/CublasHandlePool.cpp (getChosenWorkspaceSize(): 32 MiB on Hopper; cuBLASLt's size is
// getCUDABlasLtWorkspaceSize()). Neither size function is in the installed headers of 2.6, so the
// workspace is measured, not read: whatever a pair keeps -- cuBLAS's, and cuBLASLt's where the
// version keeps one per pair rather than per call -- is what the measurement sees.
#include <pipeprof/runtime/library_workspaces.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <exception>
#include <set>
#include <thread>

namespace pipeprof {
namespace {

c10::DeviceIndex indexOf(const torch::Device& device) { return device.has_index() ? device.index() : 0; }

Bytes allocatedBytes(c10::DeviceIndex index) {
  constexpr std::size_t kAggregate = 0;  // StatType::AGGREGATE: all pools together
  return static_cast<Bytes>(c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[kAggregate].current);
}

}  // namespace

void clearLibraryWorkspaces(const std::vector<torch::Device>& devices) {
  std::set<c10::DeviceIndex> cuda;
  for (const torch::Device& device : devices) {
    if (device.is_cuda()) cuda.insert(indexOf(device));
  }
  if (cuda.empty()) return;
  // A workspace may still be in use by kernels in flight on its stream.
  for (c10::DeviceIndex index : cuda) {
    c10::cuda::CUDAGuard guard(index);
    c10::cuda::device_synchronize();
  }
  at::cuda::clearCublasWorkspaces();
}

Bytes measureLibraryWorkspaceBytes(const torch::Device& device) {
  if (!device.is_cuda()) return 0;
  const c10::DeviceIndex index = indexOf(device);
  clearLibraryWorkspaces({device});  // every (handle, stream) pair is fresh again
  Bytes workspace = 0;
  std::exception_ptr error;
  // A thread of its own: its cuBLAS handle and the stream make a pair no other code uses.
  std::thread measuring([&] {
    try {
      c10::cuda::CUDAGuard onDevice(index);
      at::NoGradGuard noGrad;
      c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, index);
      c10::cuda::CUDAStreamGuard onStream(stream);
      const auto options = at::TensorOptions().device(device).dtype(at::kFloat);
      const at::Tensor input = at::ones({16, 64}, options);
      const at::Tensor weight = at::ones({64, 64}, options);
      const at::Tensor bias = at::ones({64}, options);
      stream.synchronize();
      const Bytes before = allocatedBytes(index);
      {
        const at::Tensor withBias = at::addmm(bias, input, weight.t());  // cuBLASLt where 2.x uses it
        const at::Tensor plain = at::mm(input, weight);                  // cuBLAS
        stream.synchronize();
      }
      workspace = std::max<Bytes>(0, allocatedBytes(index) - before);
    } catch (...) {
      error = std::current_exception();
    }
  });
  measuring.join();
  if (error) std::rethrow_exception(error);
  // The measuring pair's workspace is of no use to anyone: free it.
  clearLibraryWorkspaces({device});
  return workspace;
}

}  // namespace pipeprof
