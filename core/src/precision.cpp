// The training step's arithmetic: names and sizes of the precisions.
#include <pipeprof/core/precision.h>

#include <stdexcept>
#include <string>

namespace pipeprof {

std::string_view precisionName(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return "fp32";
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
  }
  return "unknown";
}

Precision parsePrecision(std::string_view text) {
  for (Precision precision : {Precision::Fp32, Precision::Bf16, Precision::Fp16}) {
    if (text == precisionName(precision)) return precision;
  }
  throw std::invalid_argument("invalid precision '" + std::string(text) + "': expected one of fp32, bf16, fp16");
}

int precisionElementBytes(Precision precision) { return precision == Precision::Fp32 ? 4 : 2; }

}  // namespace pipeprof
