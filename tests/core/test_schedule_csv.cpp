// Tests for schedule_csv.cpp: torch's action CSV read and written, and pipeprof's generated
// orders against PyTorch 2.6's own (tests/fixtures/pytorch-2.6-schedules).
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule_csv.h>

#include "schedule_test_util.h"
#include "support/fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::string fixture(const std::string& name) {
  std::ifstream file(test::fixturePath("pytorch-2.6-schedules/" + name));
  EXPECT_TRUE(file) << name;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

Schedule buildExceptLast(ScheduleKind kind, std::int64_t p, std::int64_t m, std::int64_t v) {
  return test::uniformSchedule(kind, p, m, v, Checkpoint::ExceptLast);
}

TEST(ScheduleAction, ParsesAndPrintsEachType) {
  EXPECT_EQ(parseAction("3I0"), (ScheduleAction{3, OpKind::BackwardInput, 0}));
  EXPECT_EQ(parseAction(" 12W7 "), (ScheduleAction{12, OpKind::BackwardWeight, 7}));
  EXPECT_EQ(parseAction("0F1"), (ScheduleAction{0, OpKind::Forward, 1}));
  EXPECT_EQ(parseAction("1B2"), (ScheduleAction{1, OpKind::Backward, 2}));
  EXPECT_EQ(actionText({2, OpKind::BackwardWeight, 5}), "2W5");
  for (const char* bad : {"", "F0", "0X1", "0F", "0F1x", "a0F1", "0RECV_F1"}) {
    EXPECT_THAT([&] { parseAction(bad); }, ThrowsMessage<std::invalid_argument>(HasSubstr("<stage><F|B|I|W>"))) << bad;
  }
}

TEST(ScheduleCsv, ReadsRowsPerRankSkippingIdleCells) {
  const RankActions ranks = readScheduleCsv("0F0,,0B0\r\n,1F0,1B0\n\n", "order.csv");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0], (std::vector<ScheduleAction>{{0, OpKind::Forward, 0}, {0, OpKind::Backward, 0}}));
  EXPECT_EQ(ranks[1], (std::vector<ScheduleAction>{{1, OpKind::Forward, 0}, {1, OpKind::Backward, 0}}));
  EXPECT_EQ(writeScheduleCsv(ranks), "0F0,0B0\n1F0,1B0\n");
}

TEST(ScheduleCsv, NamesTheFileRankAndColumnOfABadCell) {
  EXPECT_THAT([] { readScheduleCsv("0F0,0B0\n1F0,1Q0\n", "order.csv"); },
              ThrowsMessage<FormatError>(HasSubstr("order.csv: $.rank[1][1]: invalid action '1Q0'")));
  EXPECT_THAT([] { readScheduleCsv(",,\n\n", "empty.csv"); },
              ThrowsMessage<FormatError>(HasSubstr("empty.csv: $: expected one row of actions per rank")));
}

TEST(ScheduleCsv, WritesWhatItReads) {
  const RankActions ranks = scheduleActions(buildExceptLast(ScheduleKind::InterleavedZeroBubble, 2, 4, 2));
  EXPECT_EQ(readScheduleCsv(writeScheduleCsv(ranks), "round trip"), ranks);
}

TEST(ScheduleCsv, LeavesOutRecomputesAndLosses) {
  EXPECT_EQ(writeScheduleCsv(scheduleActions(buildExceptLast(ScheduleKind::ZeroBubble, 2, 2, 1))),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
}

// PyTorch 2.6's own orders: interleaved 1F1B, interleaved zero bubble and ZBV at every fixture
// shape are what pipeprof generates for the same schedule.
TEST(PytorchSchedules, GeneratedOrdersEqualPytorchs) {
  struct Case {
    const char* file;
    ScheduleKind kind;
    std::int64_t p, m, v;
  };
  for (const Case& c : {Case{"interleaved_1f1b_p2_m4_v2.csv", ScheduleKind::Interleaved, 2, 4, 2},
                        Case{"interleaved_1f1b_p2_m8_v2.csv", ScheduleKind::Interleaved, 2, 8, 2},
                        Case{"interleaved_1f1b_p4_m8_v2.csv", ScheduleKind::Interleaved, 4, 8, 2},
                        Case{"interleaved_1f1b_p4_m16_v2.csv", ScheduleKind::Interleaved, 4, 16, 2},
                        Case{"interleaved_zero_bubble_p2_m4_v2.csv", ScheduleKind::InterleavedZeroBubble, 2, 4, 2},
                        Case{"interleaved_zero_bubble_p2_m8_v2.csv", ScheduleKind::InterleavedZeroBubble, 2, 8, 2},
                        Case{"interleaved_zero_bubble_p4_m8_v2.csv", ScheduleKind::InterleavedZeroBubble, 4, 8, 2},
                        Case{"interleaved_zero_bubble_p4_m16_v2.csv", ScheduleKind::InterleavedZeroBubble, 4, 16, 2},
                        Case{"zbv_zero_bubble_p2_m4_v2.csv", ScheduleKind::ZeroBubbleV, 2, 4, 2},
                        Case{"zbv_zero_bubble_p2_m8_v2.csv", ScheduleKind::ZeroBubbleV, 2, 8, 2},
                        Case{"zbv_zero_bubble_p4_m8_v2.csv", ScheduleKind::ZeroBubbleV, 4, 8, 2},
                        Case{"zbv_zero_bubble_p4_m16_v2.csv", ScheduleKind::ZeroBubbleV, 4, 16, 2}}) {
    EXPECT_EQ(writeScheduleCsv(scheduleActions(buildExceptLast(c.kind, c.p, c.m, c.v))),
              writeScheduleCsv(readScheduleCsv(fixture(c.file), c.file)))
        << c.file;
  }
}

}  // namespace
}  // namespace pipeprof
