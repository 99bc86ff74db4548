// Tests of cli/schedule_options: the schedule flags' validation, labels and trace-file slugs.
#include "schedule_options.h"

#include "commands.h"

#include <gtest/gtest.h>

#include <string>

namespace pipeprof::cli {
namespace {

/// The UsageError message of `call`, or "" when it does not throw one.
template <typename Call>
std::string usageError(Call call) {
  try {
    call();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

/// The shape applyScheduleFlags makes of a default one.
PipelineShape applied(const ScheduleFlags& flags) {
  PipelineShape shape;
  applyScheduleFlags(flags, shape);
  return shape;
}

TEST(ApplyScheduleFlags, DefaultsToOneStagePerDeviceAndTwoForInterleaved) {
  ScheduleFlags flags;
  EXPECT_EQ(applied(flags).schedule, ScheduleKind::GPipe);
  EXPECT_EQ(applied(flags).stagesPerDevice, 1);
  flags.schedule = "1f1b";
  EXPECT_EQ(applied(flags).schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(applied(flags).stagesPerDevice, 1);
  flags.schedule = "interleaved";
  EXPECT_EQ(applied(flags).schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(applied(flags).stagesPerDevice, 2);
  flags.stagesPerDevice = "3";
  EXPECT_EQ(applied(flags).stagesPerDevice, 3);
}

TEST(ApplyScheduleFlags, BadValuesNameTheValueAndTheFix) {
  struct Case {
    std::string schedule;
    std::string v;
    std::string message;
  };
  const Case cases[] = {
      {"pipedream", "",
       "--schedule pipedream: unknown schedule; expected gpipe, 1f1b, interleaved, zb1p, interleaved-zb or zbv"},
      {"interleaved", "0", "--stages-per-device 0: give a positive count"},
      {"interleaved", "two", "--stages-per-device two: give a positive count"},
      {"gpipe", "2", "--stages-per-device 2: --schedule gpipe runs one stage per device; add --schedule interleaved"},
      {"interleaved", "1", "--stages-per-device 1: --schedule interleaved needs at least 2 stages per device"},
      {"zb1p", "2", "--stages-per-device 2: --schedule zb1p runs one stage per device; add --schedule interleaved-zb"},
      {"interleaved-zb", "1",
       "--stages-per-device 1: --schedule interleaved-zb needs at least 2 stages per device "
       "(one stage per device is --schedule zb1p)"},
  };
  for (const Case& c : cases) {
    ScheduleFlags flags;
    flags.schedule = c.schedule;
    flags.stagesPerDevice = c.v;
    const std::string message = usageError([&] { applied(flags); });
    EXPECT_NE(message.find(c.message), std::string::npos) << c.schedule << " " << c.v << ": " << message;
  }
}

TEST(ApplyScheduleFlags, DeferredWeightsGoWithZbOnePOneCountPerDevice) {
  ScheduleFlags flags;
  flags.schedule = "zb1p";
  flags.deferredWeights = "0,0";
  PipelineShape shape = applied(flags);
  EXPECT_EQ(shape.deferredWeights, (std::vector<std::int64_t>{0, 0}));
  shape.balance = {8, 7};
  shape.chunks = 8;
  EXPECT_EQ(usageError([&] { checkScheduleShape(shape, 64, 2, "--devices cpu,cpu"); }), "");
  shape.deferredWeights = {0, 2};
  EXPECT_EQ(usageError([&] { checkScheduleShape(shape, 64, 2, "--devices cpu,cpu"); }),
            "--deferred-weights 0,2: device 1 defers at most 1 of its W's (torch's order), not 2 (deferred weights: "
            "[0, 2])");
  shape.deferredWeights = {0, 0, 0};
  EXPECT_NE(usageError([&] { checkScheduleShape(shape, 64, 0, ""); }).find("name 3 devices but the pipeline has 2"),
            std::string::npos);
  flags.deferredWeights = "0,x";
  EXPECT_EQ(usageError([&] { applied(flags); }),
            "--deferred-weights 0,x: expected one count per device, comma-separated, e.g. 0,1");
  flags.deferredWeights = "0,-1";
  EXPECT_NE(usageError([&] { applied(flags); }).find("expected one count per device"), std::string::npos);
  flags.schedule = "1f1b";
  flags.deferredWeights = "0,0";
  EXPECT_EQ(usageError([&] { applied(flags); }),
            "--deferred-weights 0,0: only zb1p defers its W's by a count per device, not --schedule 1f1b; drop "
            "--deferred-weights or add --schedule zb1p");
}

/// An interleaved v = 2 shape of `balance` in `chunks` chunks.
PipelineShape interleaved(std::vector<std::int64_t> balance, std::int64_t chunks) {
  return PipelineShape{std::move(balance), ScheduleKind::Interleaved, 2, chunks};
}

TEST(CheckScheduleShape, BalanceLengthMustBeDevicesTimesV) {
  EXPECT_EQ(usageError([&] { checkScheduleShape(interleaved({1, 1, 1, 1}, 4), 8, 2, "--devices cpu,cpu"); }), "");
  EXPECT_EQ(usageError([&] {
              checkScheduleShape(interleaved({2, 2}, 4), 8, 2, "--devices cpu,cpu");
            }),
            "--balance 2,2 has 2 stages but --devices cpu,cpu names 2 devices and --schedule interleaved runs 2 "
            "stages per device (--stages-per-device 2): give 4 entries (2 x 2)");
  // Without a device count (simulate): n must be a multiple of v.
  EXPECT_NE(usageError([&] {
              checkScheduleShape(interleaved({1, 1, 1}, 4), 8, 0, "");
            }).find("--balance 1,1,1 has 3 stages, not a multiple of 2"),
            std::string::npos);
}

TEST(CheckScheduleShape, InterleavedChunksMustBeAMultipleOfTheDevices) {
  const std::string message = usageError([&] {
    checkScheduleShape(interleaved({1, 1, 1, 1}, 3), 8, 2, "--devices cpu,cpu");
  });
  EXPECT_NE(message.find("--chunks 3: interleaved needs chunks a multiple of devices (chunks: 3, devices: 2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("give --chunks a multiple of 2"), std::string::npos) << message;
  // 4 chunks of a batch of 6 make only 3 micro-batches (of 2 samples): the message says so.
  const std::string fewer = usageError([&] {
    checkScheduleShape(interleaved({1, 1, 1, 1}, 4), 6, 2, "--devices cpu,cpu");
  });
  EXPECT_NE(fewer.find("batch 6 in chunks of 2 samples makes only 3 micro-batches"), std::string::npos) << fewer;
  // 1F1B runs any chunk count.
  EXPECT_EQ(usageError([&] {
              checkScheduleShape(PipelineShape{{2, 2}, ScheduleKind::OneFOneB, 1, 3}, 8, 2, "--devices cpu,cpu");
            }),
            "");
}

TEST(ApplyScheduleListFlags, DefaultsSearchEveryScheduleWithOneAndTwoStagesPerDevice) {
  SearchSpace space;
  space.schedules.clear();
  applyScheduleListFlags(ScheduleListFlags{}, space);
  EXPECT_EQ(space.schedules,
            (std::vector<ScheduleKind>{ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                                       ScheduleKind::ZeroBubble, ScheduleKind::InterleavedZeroBubble,
                                       ScheduleKind::ZeroBubbleV}));
  EXPECT_EQ(space.stagesPerDevice, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(stageCounts(space, 3), (std::vector<std::int64_t>{3, 6}));
}

TEST(ApplyScheduleListFlags, BadListsAreUsageErrors) {
  SearchSpace space;
  EXPECT_NE(usageError([&] {
              applyScheduleListFlags({"gpipe,zigzag", "1,2"}, space);
            })
                .find("--schedules gpipe,zigzag: invalid schedule 'zigzag': expected gpipe, 1f1b, interleaved, zb1p, "
                      "interleaved-zb or zbv"),
            std::string::npos);
  EXPECT_NE(usageError([&] {
              applyScheduleListFlags({"interleaved", "1,0"}, space);
            }).find("--stages-per-device 1,0: expected comma-separated positive counts"),
            std::string::npos);
  EXPECT_NE(usageError([&] {
              applyScheduleListFlags({"interleaved", "1"}, space);
            }).find("--schedules interleaved needs a count of 2 or more"),
            std::string::npos);
  EXPECT_NE(usageError([&] {
              applyScheduleListFlags({"gpipe,interleaved", "1"}, space);
            }).find("drop interleaved"),
            std::string::npos);
  EXPECT_NE(usageError([&] {
              applyScheduleListFlags({"zb1p,interleaved-zb", "1"}, space);
            }).find("interleaved-zb (in --schedules zb1p,interleaved-zb) needs a count of 2 or more"),
            std::string::npos);
  applyScheduleListFlags({"1f1b,interleaved", "2,3"}, space);
  EXPECT_EQ(stageCounts(space, 2), (std::vector<std::int64_t>{2, 4, 6}));
}

}  // namespace
}  // namespace pipeprof::cli
