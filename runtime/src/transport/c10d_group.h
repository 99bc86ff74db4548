// The c10d process group behind C10dTransport, Gloo or NCCL, as one small interface.
//
// c10d's types appear only here and in c10d_*.cpp; the rest of pipeprof sees Transport.
// The Gloo group lives in c10d_transport.cpp; the NCCL one in c10d_nccl.cpp, or in
// c10d_nccl_unavailable.cpp when this LibTorch was built without NCCL (CMake picks the file).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <memory>
#include <vector>

namespace pipeprof::c10d_detail {

/// The point-to-point calls of a c10d process group (ProcessGroup in LibTorch 1.x, Backend in 2.x).
class PointToPointGroup {
 public:
  virtual ~PointToPointGroup() = default;
  virtual c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int toRank, int tag) = 0;
  virtual c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int fromRank, int tag) = 0;
  virtual c10::intrusive_ptr<c10d::Work> barrier() = 0;
};

/// Adapts any c10d group type with send/recv/barrier.
template <typename Group>
class GroupAdapter final : public PointToPointGroup {
 public:
  explicit GroupAdapter(c10::intrusive_ptr<Group> group) : group_(std::move(group)) {}
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int toRank, int tag) override {
    return group_->send(tensors, toRank, tag);
  }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int fromRank, int tag) override {
    return group_->recv(tensors, fromRank, tag);
  }
  c10::intrusive_ptr<c10d::Work> barrier() override { return group_->barrier(); }

 private:
  c10::intrusive_ptr<Group> group_;
};

/// A ProcessGroupNCCL of `size` ranks over `store` for the CUDA `device`. Throws
/// std::invalid_argument when this LibTorch has no NCCL.
std::unique_ptr<PointToPointGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 const at::Device& device, std::chrono::milliseconds timeout);

}  // namespace pipeprof::c10d_detail
