// Tests for the Pipe's argument checks, early stop on a failing layer, dropout replay and memory.
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/pipe.h>

#include "pipe_test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>

namespace pipeprof {
namespace {

using test::close;
using test::dropoutModel;
using test::linearTanh;
using test::pipeOptions;

std::string constructionError(torch::nn::Sequential model, std::vector<std::int64_t> balance,
                              PipeOptions options = {}) {
  try {
    Pipe pipe(std::move(model), std::move(balance), std::move(options));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(PipeErrors, ValidationMessagesNameTheBadValues) {
  EXPECT_EQ(constructionError(linearTanh(4), {1, 2}),
            "module and sum of balance have different length (module: 4, sum of balance: 3)");
  EXPECT_EQ(constructionError(linearTanh(4), {5, -1}),
            "all balance numbers must be positive integer (balance: [5, -1])");
  EXPECT_EQ(constructionError(linearTanh(4), {4, 0}), "all balance numbers must be positive integer (balance: [4, 0])");
  EXPECT_EQ(constructionError(linearTanh(4), {2, 2}, pipeOptions({torch::kCPU}, 1, Checkpoint::Never, false)),
            "too few devices to hold given partitions (devices: 1, partitions: 2)");
  EXPECT_EQ(constructionError(linearTanh(4), {2, 2}, pipeOptions({}, 0, Checkpoint::Never, false)),
            "number of chunks must be positive integer (chunks: 0)");

  torch::nn::Linear shared(8, 8);
  torch::nn::Sequential duplicateChildren;
  duplicateChildren->push_back("a", shared);
  duplicateChildren->push_back("b", shared);
  EXPECT_EQ(constructionError(duplicateChildren, {1, 1}), "module with duplicate children is not supported");

  struct ScaleImpl : torch::nn::Module {
    explicit ScaleImpl(const torch::Tensor& scale) : scale(register_parameter("scale", scale)) {}
    torch::Tensor forward(torch::Tensor x) { return x * scale; }
    torch::Tensor scale;
  };
  const torch::Tensor scale = torch::ones({8});
  torch::nn::Sequential duplicateParameters;
  duplicateParameters->push_back("a", std::make_shared<ScaleImpl>(scale));
  duplicateParameters->push_back("b", std::make_shared<ScaleImpl>(scale));
  // Shared by two stages on two devices: a layer that cannot hold a replica is named. In one
  // stage the parameter is simply shared.
  EXPECT_EQ(constructionError(duplicateParameters, {1, 1}),
            "parameter 'a.scale' is shared by layer 'a' (stage 0) and layer 'b' (stage 1) on another pipeline "
            "device, which cannot hold a replica of it (a TorchScript layer or the zoo's tied head can); put both in "
            "one stage");
  EXPECT_EQ(constructionError(duplicateParameters, {2}), "");
}

TEST(PipeErrors, WrongInputsAreRefused) {
  Pipe pipe(linearTanh(2), {1, 1});
  EXPECT_THROW(pipe.forward(std::vector<torch::Tensor>{}), std::invalid_argument);
  EXPECT_THROW(pipe.forward(torch::Tensor()), std::invalid_argument);
  EXPECT_THROW(pipe.forward(torch::ones({})), std::invalid_argument);
  try {
    pipe.forward(torch::empty({2, 8}, torch::TensorOptions().device(torch::kMeta)));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 is on meta but the first stage is on cpu"), std::string::npos)
        << e.what();
  }
}

struct ExpectedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws on its first call while armed; counts its calls.
struct TrapImpl : torch::nn::Module {
  explicit TrapImpl(std::shared_ptr<std::atomic<int>> calls) : calls_(std::move(calls)) {}
  torch::Tensor forward(torch::Tensor x) {
    ++*calls_;
    if (armed) {
      throw ExpectedError("trap sprung");
    }
    return x;
  }
  bool armed = true;
  std::shared_ptr<std::atomic<int>> calls_;
};
TORCH_MODULE(Trap);

struct CounterImpl : torch::nn::Module {
  explicit CounterImpl(std::shared_ptr<std::atomic<int>> calls) : calls_(std::move(calls)) {}
  torch::Tensor forward(torch::Tensor x) {
    ++*calls_;
    return x;
  }
  std::shared_ptr<std::atomic<int>> calls_;
};
TORCH_MODULE(Counter);

TEST(PipeErrors, ALayerExceptionStopsTheScheduleAndIsRethrownNamingTheCell) {
  auto trapCalls = std::make_shared<std::atomic<int>>(0);
  auto counterCalls = std::make_shared<std::atomic<int>>(0);
  Trap trap(trapCalls);
  torch::nn::Sequential model;
  model->push_back("trap", trap);
  model->push_back("counter", Counter(counterCalls));
  Pipe pipe(model, {1, 1}, pipeOptions({}, 4, Checkpoint::ExceptLast, false));
  try {
    pipe.forward(torch::ones({4, 2}));
    FAIL() << "expected PipeError";
  } catch (const PipeError& e) {
    EXPECT_EQ(e.stage(), 0);
    EXPECT_EQ(e.microBatch(), 0);
    EXPECT_EQ(std::string(e.what()), "forward(0,0) on stage 0, micro-batch 0 failed: trap sprung");
    EXPECT_THROW(std::rethrow_if_nested(e), ExpectedError);
  }
  EXPECT_EQ(trapCalls->load(), 1);     // micro-batches 1..3 never ran
  EXPECT_EQ(counterCalls->load(), 0);  // nor did partition 1
  trap->armed = false;                 // the Pipe stays usable
  torch::Tensor output = pipe.forward(torch::ones({4, 2}));
  EXPECT_TRUE(torch::equal(output, torch::ones({4, 2})));
  EXPECT_EQ(counterCalls->load(), 4);
}

TEST(PipeErrors, ABackwardExceptionSurfacesFromBackwardAsAPipeErrorNamingTheCell) {
  struct BadGrad : torch::autograd::Function<BadGrad> {
    static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x * 1; }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext*, torch::autograd::variable_list) {
      throw ExpectedError("bad gradient");
    }
  };
  struct BadGradImpl : torch::nn::Module {
    torch::Tensor forward(torch::Tensor x) { return BadGrad::apply(x); }
  };
  struct Case {
    std::vector<std::int64_t> balance;
    std::string message;  ///< the last micro-batch's backward runs first
  };
  for (const Case& c : {Case{{1, 1}, "backward(1,1) on stage 1, micro-batch 1 failed: bad gradient"},
                        Case{{2}, "backward(1,0) on stage 0, micro-batch 1 failed: bad gradient"}}) {
    SCOPED_TRACE(c.message);
    torch::nn::Sequential model;
    model->push_back("fc", torch::nn::Linear(2, 2));
    model->push_back("bad", std::make_shared<BadGradImpl>());
    Pipe pipe(model, c.balance, pipeOptions({}, 2, Checkpoint::Never, false));
    torch::Tensor output = pipe.forward(torch::ones({2, 2}));
    try {
      output.sum().backward();
      FAIL() << "expected PipeError";
    } catch (const PipeError& e) {
      EXPECT_EQ(e.stage(), static_cast<std::int64_t>(c.balance.size()) - 1);
      EXPECT_EQ(e.microBatch(), 1);
      EXPECT_EQ(std::string(e.what()), c.message);
      EXPECT_THROW(std::rethrow_if_nested(e), ExpectedError);
    }
    torch::NoGradGuard noGrad;  // the Pipe stays usable
    EXPECT_EQ(pipe.forward(torch::ones({2, 2})).size(0), 2);
  }
}

TEST(PipeErrors, DropoutGivesIdenticalGradientsWithAndWithoutCheckpointing) {
  std::vector<std::vector<torch::Tensor>> grads;
  std::vector<torch::Tensor> outputs;
  for (Checkpoint mode : {Checkpoint::Never, Checkpoint::Always, Checkpoint::ExceptLast}) {
    torch::nn::Sequential model = dropoutModel();
    Pipe pipe(model, {2, 2}, pipeOptions({}, 3, mode, false));
    torch::manual_seed(99);
    torch::Tensor output = pipe.forward(torch::ones({6, 16}));
    output.sum().backward();
    outputs.push_back(output.detach());
    grads.emplace_back();
    for (const auto& parameter : pipe.parameters()) {
      grads.back().push_back(parameter.grad());
    }
  }
  EXPECT_GT((outputs[0] == 0).sum().item<std::int64_t>(), 0);  // dropout did drop
  for (std::size_t mode = 1; mode < grads.size(); ++mode) {
    EXPECT_TRUE(torch::equal(outputs[mode], outputs[0]));
    for (std::size_t k = 0; k < grads[0].size(); ++k) {
      EXPECT_TRUE(torch::equal(grads[mode][k], grads[0][k])) << "mode " << mode << " parameter " << k;
    }
  }
}

TEST(PipeErrors, PeakBytesCountParametersGradientsAndActivationsPerPartition) {
  torch::nn::Sequential model = linearTanh(4, 0, 64);
  Pipe pipe(model, {2, 2}, pipeOptions({}, 2, Checkpoint::Never, false));
  const Bytes parameterBytes = (64 * 64 + 64) * 4;
  pipe.forward(torch::randn({32, 64})).sum().backward();
  std::vector<Bytes> peaks = pipe.peakBytes();
  ASSERT_EQ(peaks.size(), 2U);
  for (Bytes peak : peaks) {
    // parameters + their gradients + at least the saved activations of one micro-batch (16 x 64)
    EXPECT_GE(peak, 2 * parameterBytes + 16 * 64 * 4);
    EXPECT_LT(peak, 2 * parameterBytes + 64 * 64 * 4 * 8);
  }
  // Gradients stay alive between steps (not zeroed to None): they are live at the next forward.
  EXPECT_GE(liveBytes(0), parameterBytes);
  // CPU partitions have no caching allocator to read.
  for (const std::optional<Bytes>& devicePeak : pipe.devicePeakBytes()) EXPECT_FALSE(devicePeak.has_value());
}

}  // namespace
}  // namespace pipeprof
