// The training step's arithmetic: fp32, or bf16/fp16 autocast over fp32 weights and gradients.
#pragma once

#include <string_view>

namespace pipeprof {

/// fp32: every op in fp32. bf16, fp16: the forward runs under autocast to that type (the ops
/// autocast lists cast their inputs, weights included, per use); weights, gradients and the
/// optimizer's state stay fp32. fp16 runs on CUDA only, with a gradient scaler.
enum class Precision { Fp32, Bf16, Fp16 };

/// "fp32", "bf16", "fp16".
std::string_view precisionName(Precision precision);

/// Parses one of precisionName's names. Throws std::invalid_argument naming the text and the
/// accepted names.
Precision parsePrecision(std::string_view text);

/// Bytes of one element of the precision's compute type: 4, 2, 2.
int precisionElementBytes(Precision precision);

}  // namespace pipeprof
