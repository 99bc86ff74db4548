// The autograd nodes of a Pipe's outputs: a non-blocking gradient hand-off and the backward.
#include "threaded/pipe_backward.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <stdexcept>

namespace pipeprof {
namespace {

const char* const kAlreadyRan = "the Pipe's backward already ran for this output; call forward again";

/// Receives the gradients of the Pipe's outputs, hands them to the step's backward ops and
/// starts them; returns at once with the gradient of the phony, PipeBackward's input.
class PipeGradientHandoff : public torch::autograd::Node {
 public:
  /// Input r of the node is the gradient of output connected[r] of `outputCount`.
  PipeGradientHandoff(std::shared_ptr<PhaseRun> backward, std::vector<std::size_t> connected, std::size_t outputCount,
                      std::vector<std::vector<std::int64_t>> outputRows)
      : backward_(std::move(backward)),
        connected_(std::move(connected)),
        outputCount_(outputCount),
        outputRows_(std::move(outputRows)) {}

  std::string name() const override { return "pipeprof::PipeGradientHandoff"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    std::shared_ptr<PhaseRun> backward = std::move(backward_);
    if (!backward) {
      throw std::runtime_error(kAlreadyRan);
    }
    backward->step().setOutputGrads(perMicroBatch(grads, backward->step().m()));
    backward->start();
    return {phonyGrad_};
  }

 protected:
  void release_variables() override { backward_.reset(); }

 private:
  /// The gradients per micro-batch and output; undefined where an output got none.
  std::vector<Tensors> perMicroBatch(const torch::autograd::variable_list& grads, std::int64_t m) const {
    std::vector<Tensors> result(static_cast<std::size_t>(m), Tensors(outputCount_));
    for (std::size_t r = 0; r < grads.size(); ++r) {
      if (!grads[r].defined()) {
        continue;
      }
      const std::size_t k = connected_[r];
      std::vector<torch::Tensor> pieces = grads[r].split_with_sizes(outputRows_[k], 0);
      for (std::size_t i = 0; i < result.size(); ++i) {
        result[i][k] = pieces[i];
      }
    }
    return result;
  }

  std::shared_ptr<PhaseRun> backward_;
  std::vector<std::size_t> connected_;
  std::size_t outputCount_;
  std::vector<std::vector<std::int64_t>> outputRows_;
  torch::Tensor phonyGrad_ = torch::empty({0});
};

/// Waits for the step's backward ops and returns the gradients of the Pipe's inputs. Its only
/// input is the phony's (CPU) gradient, so autograd runs it on the thread that called backward().
class PipeBackward : public torch::autograd::Node {
 public:
  PipeBackward(std::shared_ptr<PhaseRun> backward, std::vector<InputInfo> inputs)
      : backward_(std::move(backward)), inputs_(std::move(inputs)) {}

  std::string name() const override { return "pipeprof::PipeBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& /*phonyGrad*/) override {
    std::shared_ptr<PhaseRun> backward = std::move(backward_);
    TORCH_INTERNAL_ASSERT(backward, "PipeBackward ran without its PipeGradientHandoff");
    backward->finish();
    std::vector<Tensors> inputGrads = backward->step().inputGrads();
    backward->step().release();
    torch::autograd::variable_list result;
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      result.push_back(inputGrad(inputGrads, k));
    }
    return result;
  }

 protected:
  void release_variables() override { backward_.reset(); }

 private:
  /// Input k's gradient: its micro-batches' pieces concatenated (zeros for a micro-batch that
  /// got none), or undefined when no micro-batch got one.
  torch::Tensor inputGrad(const std::vector<Tensors>& inputGrads, std::size_t k) const {
    const InputInfo& input = inputs_[k];
    std::vector<torch::Tensor> pieces;
    bool any = false;
    for (const auto& microBatch : inputGrads) {
      pieces.push_back(k < microBatch.size() ? microBatch[k] : torch::Tensor());
      any = any || pieces.back().defined();
    }
    if (!any || !input.requiresGrad) {
      return {};
    }
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i].defined()) {
        auto shape = input.sizes;
        shape[0] = input.rows.at(i);
        pieces[i] = torch::zeros(shape, input.options);
      }
    }
    return pieces.size() == 1 ? pieces.front() : torch::cat(pieces, 0);
  }

  std::shared_ptr<PhaseRun> backward_;
  std::vector<InputInfo> inputs_;
};

}  // namespace

void connectBackward(Tensors& outputs, const Tensors& inputs, std::shared_ptr<PhaseRun> backward,
                     std::vector<std::vector<std::int64_t>> outputRows, std::vector<InputInfo> inputInfos) {
  std::shared_ptr<PipeBackward> blocking(new PipeBackward(backward, std::move(inputInfos)),
                                         torch::autograd::deleteNode);
  blocking->set_next_edges(torch::autograd::collect_next_edges(inputs));
  torch::Tensor phony = torch::empty({0});
  torch::autograd::create_gradient_edge(phony, blocking);

  std::vector<std::size_t> connected;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].is_floating_point() || outputs[k].is_complex()) {
      connected.push_back(k);
    }
  }
  std::shared_ptr<PipeGradientHandoff> handoff(
      new PipeGradientHandoff(std::move(backward), connected, outputs.size(), std::move(outputRows)),
      torch::autograd::deleteNode);
  handoff->set_next_edges(torch::autograd::collect_next_edges(phony));
  for (std::size_t k : connected) {
    torch::autograd::create_gradient_edge(outputs[k], handoff);
  }
}

}  // namespace pipeprof
