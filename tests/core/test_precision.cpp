// Tests for core/precision: names, parsing and element sizes.
#include <pipeprof/core/precision.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

TEST(Precision, NamesRoundTrip) {
  for (Precision precision : {Precision::Fp32, Precision::Bf16, Precision::Fp16}) {
    EXPECT_EQ(parsePrecision(precisionName(precision)), precision);
  }
  EXPECT_EQ(precisionName(Precision::Bf16), "bf16");
}

TEST(Precision, UnknownNameIsNamedWithTheAcceptedOnes) {
  try {
    parsePrecision("half");
    FAIL() << "accepted 'half'";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("'half'"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("fp32, bf16, fp16"));
  }
}

TEST(Precision, ElementBytes) {
  EXPECT_EQ(precisionElementBytes(Precision::Fp32), 4);
  EXPECT_EQ(precisionElementBytes(Precision::Bf16), 2);
  EXPECT_EQ(precisionElementBytes(Precision::Fp16), 2);
}

}  // namespace
}  // namespace pipeprof
