// Tests for statistics.cpp: the median of timings and of ratios, pooled variance, shrinkage.
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

TEST(Median, OfRatiosIsTheMiddleOneOrTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(median({1.2, 0.8, 1.0}), 1.0);
  EXPECT_DOUBLE_EQ(median({1.15, 0.9}), (0.9 + 1.15) / 2.0);
  EXPECT_DOUBLE_EQ(median({3.0, 0.5, 2.0, 1.0}), 1.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(PooledVariance, IsTheDeviationsFromEachGroupsMeanOverValuesLessGroups) {
  // Group 1: mean 2, squares 1 + 1; group 2: mean 10, squares 4 + 0 + 4; a lone value adds
  // nothing. 10 over (6 - 3) degrees of freedom.
  EXPECT_DOUBLE_EQ(*pooledVariance({{1, {1.0, 3.0}}, {2, {8.0, 10.0, 12.0}}, {3, {5.0}}}), 10.0 / 3.0);
  EXPECT_DOUBLE_EQ(*pooledVariance({{1, {2.0, 2.0}}}), 0.0);
}

TEST(PooledVariance, NoGroupOfTwoValuesGivesNone) {
  EXPECT_FALSE(pooledVariance({{1, {1.0}}, {2, {4.0}}}).has_value());
  EXPECT_FALSE(pooledVariance({}).has_value());
}

TEST(ShrinkageShare, KeepsThePriorsShareOfTheTotalVariance) {
  EXPECT_DOUBLE_EQ(shrinkageShare(0.1, 0.01), 0.5);
  EXPECT_DOUBLE_EQ(shrinkageShare(0.1, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(shrinkageShare(0.0, 0.04), 0.0);
}

}  // namespace
}  // namespace pipeprof
