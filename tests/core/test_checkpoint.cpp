// Tests for checkpoint.cpp: names, parsing and torchgpipe's checkpoint_stop.
#include <pipeprof/core/checkpoint.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof {
namespace {

using ::testing::ElementsAre;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

TEST(Checkpoint, NamesRoundTrip) {
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    EXPECT_EQ(parseCheckpoint(checkpointName(mode)), mode);
  }
  EXPECT_EQ(checkpointName(Checkpoint::Always), "always");
  EXPECT_EQ(checkpointName(Checkpoint::ExceptLast), "except_last");
  EXPECT_EQ(checkpointName(Checkpoint::Never), "never");
}

TEST(Checkpoint, ParseErrorListsAcceptedValues) {
  EXPECT_THAT([] { parseCheckpoint("sometimes"); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("invalid checkpoint mode 'sometimes': expected one of always, except_last, never")));
}

TEST(Checkpoint, ParseList) {
  EXPECT_THAT(parseCheckpointList("always,never"), ElementsAre(Checkpoint::Always, Checkpoint::Never));
  EXPECT_THAT(parseCheckpointList("except_last"), ElementsAre(Checkpoint::ExceptLast));
  EXPECT_THAT(parseCheckpointList("never, always"), ElementsAre(Checkpoint::Never, Checkpoint::Always));
  EXPECT_THROW(parseCheckpointList("always,"), std::invalid_argument);
}

TEST(Checkpoint, StopMatchesTorchgpipe) {
  EXPECT_EQ(checkpointStop(Checkpoint::Always, 4, true), 4);
  EXPECT_EQ(checkpointStop(Checkpoint::ExceptLast, 4, true), 3);
  EXPECT_EQ(checkpointStop(Checkpoint::Never, 4, true), 0);
  EXPECT_EQ(checkpointStop(Checkpoint::ExceptLast, 1, true), 0);
  EXPECT_EQ(checkpointStop(Checkpoint::Always, 1, true), 1);
  for (Checkpoint mode : {Checkpoint::Always, Checkpoint::ExceptLast, Checkpoint::Never}) {
    EXPECT_EQ(checkpointStop(mode, 4, false), 0);
  }
}

}  // namespace
}  // namespace pipeprof
