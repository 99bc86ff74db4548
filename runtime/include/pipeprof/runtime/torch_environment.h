// Where LibTorch runs: its version, its intra-op threads (OpenBLAS kept on one), host memory reuse, and torch
// devices for device names.
#pragma once

#include <pipeprof/core/device.h>

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof {

/// Sets LibTorch's intra-op threads (ATen's OpenMP team of each thread that runs ops) and keeps
/// OpenBLAS, when it is linked in, on one thread (keepBlasOnOneThread). Two pools that both spin
/// on the same cores fight: with two threads each, a one-device mlp step took a median of
/// 143-322 ms against 44-55 ms with ATen's two threads and OpenBLAS on one (docs/runtime.md,
/// "Threads"). Throws std::invalid_argument for threads < 1.
void setIntraOpThreads(std::int64_t threads);

/// Gives OpenBLAS's own pool one thread, when OpenBLAS is linked in (Debian's LibTorch calls it
/// for GEMM; LibTorch's thread setting does not reach it). Its pool is one per process: pipeline
/// workers calling GEMM at once are serialised through it, and its threads spin beside ATen's.
/// LibTorch's intra-op threads are then the only ones. pipeprof's CLI and rank worker call it at
/// start-up, for every command, whatever OPENBLAS_NUM_THREADS says.
void keepBlasOnOneThread();

/// Makes glibc's malloc keep the memory a training step frees for the next step. By default it
/// returns the top of the heap to the system once 128 KiB there are free, and serves blocks of
/// 128 KiB and more with mmap (a threshold it raises as such blocks are freed), so every step
/// faults its activations' pages in again: a rank of the 2-rank mlp pipeline took ~800 minor
/// faults per step, the threaded Pipe ~280. Sets M_TRIM_THRESHOLD to 1 GiB, M_MMAP_THRESHOLD
/// to 32 MiB (glibc's largest) and M_TOP_PAD to 64 MiB, unless GLIBC_TUNABLES sets a glibc.malloc
/// tunable (the user's choice wins). The top pad is what keeps a worker thread's memory: glibc
/// unmaps a thread arena's emptied 64 MiB heap whatever the trim threshold, unless the pad is a
/// heap's size (resnet [17,29] x1 zb1p ran 300-345 ms a step without it, 83 ms with it).
/// Returns whether it set them (false without glibc too).
/// pipeprof's CLI calls it at start-up, for every command: the profiler, the threaded Pipe and
/// every rank see the same allocator.
bool keepFreedHostMemory();

/// LibTorch's version, e.g. "1.13.0".
std::string torchVersion();

/// torch::Device for "cpu" / "cuda:N". Throws std::invalid_argument when CUDA is not available
/// or the index is out of range, naming the device and how many CUDA devices there are.
torch::Device torchDevice(const DeviceDesc& device);
std::vector<torch::Device> torchDevices(const std::vector<DeviceDesc>& devices);

}  // namespace pipeprof
