// Tests for the cost model: torch::chunk micro-batch sizes and per-stage sums.
#include "cost_model.h"

#include "test_helpers.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof::sim {
namespace {

TEST(ScaleTime, DividesBySpeedAndRounds) {
  EXPECT_EQ(scaleTime(1000, 1.0), 1000);
  EXPECT_EQ(scaleTime(1000, 2.0), 500);
  EXPECT_EQ(scaleTime(1000, 3.0), 333);
  EXPECT_EQ(scaleTime(1001, 2.0), 501);  // 500.5 rounds away from zero
}

TEST(CostModel, TablesArePrefixSumsAtTheMicroBatchSize) {
  const Profile profile = test::makeProfile({{10, 20, 100, 7, 3, 4}, {30, 40, 200, 9, 5, 6}});
  CostModel model(profile);
  const LayerCostTable& table = model.table(3);
  EXPECT_EQ(table.forwardPrefix, (std::vector<TimeNs>{0, 30, 120}));
  EXPECT_EQ(table.backwardPrefix, (std::vector<TimeNs>{0, 60, 180}));
  EXPECT_EQ(table.savedPrefix, (std::vector<Bytes>{0, 300, 900}));
  EXPECT_EQ(table.outputBytes, (std::vector<Bytes>{21, 27}));
  EXPECT_EQ(table.forwardWorkspaceBytes, (std::vector<Bytes>{9, 15}));
  EXPECT_EQ(table.backwardWorkspaceBytes, (std::vector<Bytes>{9, 15}));
  EXPECT_EQ(&model.table(3), &table);               // cached
  EXPECT_EQ(model.staticBytes(0, 2), 2 * (4 + 6));  // params + grads
}

}  // namespace
}  // namespace pipeprof::sim
