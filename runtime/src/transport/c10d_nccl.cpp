// The NCCL group of a CUDA LibTorch: ProcessGroupNCCL for ranks on CUDA devices.
#include "transport/c10d_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace pipeprof::c10d_detail {

std::unique_ptr<PointToPointGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 const at::Device& /*device*/, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return std::make_unique<GroupAdapter<c10d::ProcessGroupNCCL>>(
      c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options));
}

}  // namespace pipeprof::c10d_detail
