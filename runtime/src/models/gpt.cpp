// Zoo model "gpt": a decoder-only transformer (embedding, N pre-norm blocks, final norm, head).
#include "models/zoo.h"

#include "stage/rng.h"
#include "stage/shared_parameters.h"

#include <cmath>
#include <string>

namespace pipeprof {
namespace {

constexpr std::int64_t kVocabulary = 256;
constexpr std::int64_t kSequence = 32;
constexpr std::int64_t kHeadWidth = 32;

/// Token embedding plus learned position embedding, as one layer: [B, T] ids -> [B, T, E].
class EmbeddingImpl : public torch::nn::Module {
 public:
  explicit EmbeddingImpl(std::int64_t width)
      : tokens_(register_module("tokens", torch::nn::Embedding(kVocabulary, width))),
        positions_(register_module("positions", torch::nn::Embedding(kSequence, width))) {}
  torch::Tensor forward(const torch::Tensor& ids) {
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
    return tokens_(ids) + positions_(positions).unsqueeze(0);
  }
  /// The token embedding's [vocabulary, width] weight, which a tied head shares.
  const torch::Tensor& tokenWeight() const { return tokens_->weight; }

 private:
  torch::nn::Embedding tokens_;
  torch::nn::Embedding positions_;
};
TORCH_MODULE(Embedding);

/// The output head whose weight is the token embedding's (tied embeddings): logits =
/// x W^T + b with W the embedding's [vocabulary, width] weight. On another pipeline device than
/// the embedding it holds a replica of W (shared_parameters.h).
class TiedHeadImpl : public torch::nn::Module, public ReplicaHolder {
 public:
  explicit TiedHeadImpl(const torch::Tensor& embedding)
      : weight_(register_parameter("weight", embedding)),
        bias_(register_parameter("bias", torch::zeros({embedding.size(0)}))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::nn::functional::linear(x, weight_, bias_); }
  void holdReplica(const torch::Tensor& shared, const torch::Tensor& replica) override {
    if (!weight_.is_same(shared)) return;
    weight_ = replica;
    parameters_["weight"] = replica;
  }

 private:
  torch::Tensor weight_;
  torch::Tensor bias_;
};
TORCH_MODULE(TiedHead);

/// One pre-norm decoder block: x + attention(norm(x)), then x + mlp(norm(x)); causal
/// multi-head self-attention written with basic ops so it runs on LibTorch 1.13.
class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(std::int64_t width)
      : heads_(std::max<std::int64_t>(1, width / kHeadWidth)),
        norm1_(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        qkv_(register_module("qkv", torch::nn::Linear(width, 3 * width))),
        proj_(register_module("proj", torch::nn::Linear(width, width))),
        norm2_(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        fc1_(register_module("fc1", torch::nn::Linear(width, 4 * width))),
        fc2_(register_module("fc2", torch::nn::Linear(4 * width, width))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const std::int64_t b = x.size(0);
    const std::int64_t t = x.size(1);
    const std::int64_t e = x.size(2);
    const std::int64_t d = e / heads_;
    auto qkv = qkv_(norm1_(x)).view({b, t, 3, heads_, d}).permute({2, 0, 3, 1, 4});  // [3, B, H, T, D]
    torch::Tensor scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    const torch::Tensor mask = torch::ones({t, t}, x.options().dtype(torch::kBool)).triu(1);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    torch::Tensor attention = torch::matmul(torch::softmax(scores, -1), qkv[2]);  // [B, H, T, D]
    torch::Tensor y = x + proj_(attention.transpose(1, 2).reshape({b, t, e}));
    return y + fc2_(torch::gelu(fc1_(norm2_(y))));
  }

 private:
  std::int64_t heads_;
  torch::nn::LayerNorm norm1_;
  torch::nn::Linear qkv_;
  torch::nn::Linear proj_;
  torch::nn::LayerNorm norm2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};
TORCH_MODULE(TransformerBlock);

}  // namespace

Model buildGpt(const ModelOptions& options) {
  const std::int64_t width = orDefault(options.width, 128);
  const std::int64_t depth = orDefault(options.depth, 4);
  if (width % std::max<std::int64_t>(1, width / kHeadWidth) != 0) {
    throw std::invalid_argument("gpt width " + std::to_string(width) + " must be a multiple of the head width " +
                                std::to_string(kHeadWidth) + " (or smaller than it)");
  }
  Model model;
  model.name = "gpt";
  {
    SeededRngScope rng(static_cast<std::uint64_t>(options.seed));
    auto& s = model.sequential;
    Embedding embed(width);
    s->push_back("embed", embed);
    for (std::int64_t k = 0; k < depth; ++k) {
      s->push_back("block" + std::to_string(k), TransformerBlock(width));
    }
    s->push_back("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
    if (options.tieEmbeddings) {
      // GPT-2's initialisation of a tied embedding: N(0, 0.02). Embedding's N(0, 1) made the
      // logits so large that the softmax's gradients went subnormal, and the head's backward
      // ran 2.5x slower on them.
      torch::NoGradGuard noGrad;
      torch::nn::init::normal_(embed->tokenWeight(), 0.0, 0.02);
      s->push_back("head", TiedHead(embed->tokenWeight()));
    } else {
      s->push_back("head", torch::nn::Linear(width, kVocabulary));
    }
  }
  model.defaultBatch = 16;
  model.makeBatch = [](std::int64_t batch, std::int64_t seed) {
    at::Generator generator = makeCpuGenerator(static_cast<std::uint64_t>(seed));
    Batch b;
    b.input = torch::randint(0, kVocabulary, {batch, kSequence}, generator, torch::kLong);
    b.target = torch::randint(0, kVocabulary, {batch, kSequence}, generator, torch::kLong);
    return b;
  };
  model.loss = [](const torch::Tensor& output, const torch::Tensor& target) {
    return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}), target.reshape({-1}));
  };
  return model;
}

}  // namespace pipeprof
