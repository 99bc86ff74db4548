// The math libraries' workspaces on CUDA devices: LibTorch 2.x's cuBLAS and cuBLASLt workspaces,
// one per (cuBLAS handle, stream) pair -- handles are per host thread -- allocated through the
// caching allocator and kept until cleared (emptyCache does not free them).
#pragma once

#include <pipeprof/core/units.h>

#include <torch/torch.h>

#include <vector>

namespace pipeprof {

/// Synchronises the CUDA devices among `devices` and frees every library workspace LibTorch
/// keeps (for every thread and stream of the process, not only these devices': LibTorch clears
/// them all at once). A sweep measuring candidates one after another calls it between them, so
/// the pool streams a Pipe used do not keep their workspaces into the next candidate's peak.
/// Nothing happens without a CUDA device among `devices` or in builds without CUDA.
void clearLibraryWorkspaces(const std::vector<torch::Device>& devices);

/// The device memory the libraries keep for one (host thread, stream) pair on `device`: the
/// growth of the caching allocator's allocated bytes, once the tensors are freed, when a fresh
/// thread runs matrix multiplications (a bias-add GEMM, cuBLASLt's, and a plain one, cuBLAS's)
/// on a stream after clearLibraryWorkspaces. 0 for a CPU device and in builds without CUDA.
/// Throws what LibTorch throws when the device cannot run them.
Bytes measureLibraryWorkspaceBytes(const torch::Device& device);

}  // namespace pipeprof
