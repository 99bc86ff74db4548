// The NCCL group of a LibTorch built without NCCL: a clear refusal.
#include "transport/c10d_group.h"

#include <stdexcept>

namespace pipeprof::c10d_detail {

std::unique_ptr<PointToPointGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& /*store*/, int /*rank*/,
                                                 int /*size*/, const at::Device& device,
                                                 std::chrono::milliseconds /*timeout*/) {
  throw std::invalid_argument("a rank on " + device.str() +
                              " needs NCCL, but this LibTorch was built without it; use CPU devices (Gloo) or build "
                              "pipeprof against a CUDA LibTorch with NCCL");
}

}  // namespace pipeprof::c10d_detail
