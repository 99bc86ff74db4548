// Tests for statistics.cpp: the median of timings.
#include <pipeprof/core/statistics.h>

#include <gtest/gtest.h>

namespace pipeprof {
namespace {

TEST(MedianNs, OddCountTakesTheMiddleOne) {
  EXPECT_EQ(medianNs({30, 10, 20}), 20);
  EXPECT_EQ(medianNs({7}), 7);
}

TEST(MedianNs, EvenCountTakesTheMeanOfTheMiddleTwo) {
  EXPECT_EQ(medianNs({40, 10, 30, 20}), 25);
  EXPECT_EQ(medianNs({1, 2}), 1);  // rounded down
  EXPECT_EQ(medianNs({5, 5, 9, 9}), 7);
}

TEST(MedianNs, NoSamplesGiveZero) { EXPECT_EQ(medianNs({}), 0); }

}  // namespace
}  // namespace pipeprof
