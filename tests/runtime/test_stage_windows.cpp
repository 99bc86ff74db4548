// Tests for stageWindows (layer_time_profiler.h): the layers a timed pass runs as one stage.
#include "layer_profiling/layer_time_profiler.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace pipeprof::layer_profiling {
namespace {

using Windows = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::vector<CostSample> layersHolding(const std::vector<std::pair<Bytes, Bytes>>& outputAndSaved) {
  std::vector<CostSample> costs;
  for (const auto& [output, saved] : outputAndSaved) {
    CostSample cost;
    cost.outputBytes = output;
    cost.savedBytes = saved;
    costs.push_back(cost);
  }
  return costs;
}

TEST(StageWindows, LayersWithinTheLimitRunAsOneStage) {
  EXPECT_EQ(stageWindows(layersHolding({{10, 20}, {10, 20}, {10, 20}}), 90), (Windows{{0, 3}}));
  EXPECT_EQ(stageWindows(layersHolding({{10, 20}, {10, 20}, {10, 20}})), (Windows{{0, 3}}))
      << "a small model is one window at the default limit";
}

TEST(StageWindows, AWindowEndsBeforeTheLayerThatWouldPassTheLimit) {
  EXPECT_EQ(stageWindows(layersHolding({{10, 20}, {10, 20}, {10, 20}, {5, 0}}), 60), (Windows{{0, 2}, {2, 4}}));
}

TEST(StageWindows, ALayerPastTheLimitIsAWindowOfItsOwn) {
  EXPECT_EQ(stageWindows(layersHolding({{10, 0}, {100, 100}, {10, 0}}), 50), (Windows{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(stageWindows(layersHolding({{1, 0}, {1, 0}}), 0), (Windows{{0, 1}, {1, 2}}));
}

TEST(StageWindows, AModelWithoutLayersHasNone) { EXPECT_TRUE(stageWindows({}).empty()); }

TEST(StageWindows, ALayerHoldingNothingJoinsTheWindowBeforeIt) {
  // An identity (a left-out twin's figures come later: zero here) never opens a window.
  EXPECT_EQ(stageWindows(layersHolding({{40, 20}, {0, 0}, {0, 0}}), 60), (Windows{{0, 3}}));
}

}  // namespace
}  // namespace pipeprof::layer_profiling
