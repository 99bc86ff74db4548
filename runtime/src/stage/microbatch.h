// Micro-batches: scatter a mini-batch along dim 0 like torch::chunk and gather the outputs by cat.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// The tensors one micro-batch carries across a stage boundary (one or several).
using Tensors = std::vector<torch::Tensor>;

/// Splits every input along dim 0 exactly as torch::chunk(chunks) does (so there may be fewer
/// than `chunks` micro-batches, e.g. 5 rows in 4 chunks gives 3). All inputs must have the
/// same positive number of rows; throws std::invalid_argument otherwise.
std::vector<Tensors> scatter(const Tensors& inputs, std::int64_t chunks);

/// Concatenates the k-th tensor of every micro-batch along dim 0.
Tensors gather(const std::vector<Tensors>& microBatches);

/// Rows (dim 0) of the k-th tensor in each micro-batch.
std::vector<std::int64_t> rowsOf(const std::vector<Tensors>& microBatches, std::size_t k);

/// A micro-batch's loss as a step sums it: the loss function's result `loss`, checked to be a
/// scalar, times `weight` (the micro-batch's share of the mini-batch's rows, so that a mean over
/// its rows sums to the mini-batch's mean). A new scalar: scratch memory the result holds
/// (LibTorch 1.13's mean-reduced MSE keeps its unreduced buffer) goes with the result. Throws
/// std::invalid_argument when `loss` is undefined or not one element.
torch::Tensor weighMicroBatchLoss(const torch::Tensor& loss, double weight);

}  // namespace pipeprof
