// Micro-batches: scatter a mini-batch along dim 0 like torch::chunk and gather the outputs by cat.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pipeprof {

/// The tensors one micro-batch carries across a partition boundary (one or several).
using Tensors = std::vector<torch::Tensor>;

/// Splits every input along dim 0 exactly as torch::chunk(chunks) does (so there may be fewer
/// than `chunks` micro-batches, e.g. 5 rows in 4 chunks gives 3). All inputs must have the
/// same positive number of rows; throws std::invalid_argument otherwise.
std::vector<Tensors> scatter(const Tensors& inputs, std::int64_t chunks);

/// Concatenates the k-th tensor of every micro-batch along dim 0.
Tensors gather(const std::vector<Tensors>& microBatches);

/// Rows (dim 0) of the k-th tensor in each micro-batch.
std::vector<std::int64_t> rowsOf(const std::vector<Tensors>& microBatches, std::size_t k);

}  // namespace pipeprof
