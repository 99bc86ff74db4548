// Micro-batches: scatter a mini-batch along dim 0 like torch::chunk and gather the outputs by cat.
#include "stage/microbatch.h"

#include <stdexcept>
#include <string>

namespace pipeprof {

std::vector<Tensors> scatter(const Tensors& inputs, std::int64_t chunks) {
  if (inputs.empty()) {
    throw std::invalid_argument("the Pipe needs at least one input tensor (got none)");
  }
  std::int64_t rows = -1;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const torch::Tensor& input = inputs[k];
    if (!input.defined()) {
      throw std::invalid_argument("input " + std::to_string(k) + " is an undefined tensor");
    }
    if (input.dim() == 0) {
      throw std::invalid_argument("input " + std::to_string(k) +
                                  " is a scalar; inputs are split along dim 0 and need a batch dimension");
    }
    if (rows >= 0 && input.size(0) != rows) {
      throw std::invalid_argument("inputs must share their batch size (dim 0): input 0 has " + std::to_string(rows) +
                                  " rows, input " + std::to_string(k) + " has " + std::to_string(input.size(0)));
    }
    rows = input.size(0);
  }
  if (rows == 0) {
    throw std::invalid_argument("the input batch is empty (0 rows along dim 0)");
  }
  std::vector<Tensors> microBatches;
  for (const torch::Tensor& input : inputs) {
    auto pieces = input.chunk(chunks, 0);
    microBatches.resize(pieces.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      microBatches[i].push_back(pieces[i]);
    }
  }
  return microBatches;
}

Tensors gather(const std::vector<Tensors>& microBatches) {
  Tensors outputs;
  if (microBatches.empty()) {
    return outputs;
  }
  for (std::size_t k = 0; k < microBatches.front().size(); ++k) {
    std::vector<torch::Tensor> pieces;
    pieces.reserve(microBatches.size());
    for (const Tensors& microBatch : microBatches) {
      pieces.push_back(microBatch.at(k));
    }
    outputs.push_back(pieces.size() == 1 ? pieces.front() : torch::cat(pieces, 0));
  }
  return outputs;
}

std::vector<std::int64_t> rowsOf(const std::vector<Tensors>& microBatches, std::size_t k) {
  std::vector<std::int64_t> rows;
  for (const Tensors& microBatch : microBatches) {
    rows.push_back(microBatch.at(k).size(0));
  }
  return rows;
}

torch::Tensor weighMicroBatchLoss(const torch::Tensor& loss, double weight) {
  if (!loss.defined() || loss.numel() != 1) {
    throw std::invalid_argument("the loss function must return a scalar (it returned " +
                                (loss.defined() ? std::to_string(loss.numel()) + " elements" : std::string("nothing")) +
                                ")");
  }
  return loss.reshape({}) * weight;
}

}  // namespace pipeprof
