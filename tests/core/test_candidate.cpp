// Tests for candidate.cpp: labels, balance text, schedule specs and the JSON form.
#include <pipeprof/core/candidate.h>
#include <pipeprof/core/custom_order.h>
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pipeprof {
namespace {

using ::testing::ElementsAre;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

Candidate example() {
  Candidate candidate;
  candidate.balance = {2, 6};
  candidate.chunks = 8;
  candidate.checkpoint = Checkpoint::ExceptLast;
  candidate.batch = 64;
  return candidate;
}

TEST(Candidate, LabelAndDevices) {
  Candidate candidate = example();
  EXPECT_EQ(candidate.label(), "[2,6] x8 except_last");
  EXPECT_EQ(candidate.deviceOf(1), 1);
  candidate.devices = {3, 1};
  EXPECT_EQ(candidate.deviceOf(0), 3);
  EXPECT_EQ(candidate.deviceOf(1), 1);
  EXPECT_THROW(candidate.deviceOf(2), std::out_of_range);
}

TEST(Candidate, InterleavedStagesLoopOverThePipelineDevices) {
  Candidate candidate = example();
  candidate.balance = {1, 2, 3, 2};
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  EXPECT_EQ(candidate.label(), "[1,2,3,2] x8 except_last interleaved v2");
  EXPECT_EQ(candidate.pipelineDevices(), 2);
  EXPECT_EQ(candidate.deviceOf(2), 0);
  EXPECT_EQ(candidate.deviceOf(3), 1);
  candidate.devices = {5, 4};
  EXPECT_EQ(candidate.deviceOf(2), 5);
  EXPECT_EQ(candidate.deviceOf(1), 4);
  EXPECT_THROW(candidate.deviceOf(4), std::out_of_range);
  ScheduleSpec spec = candidate.scheduleSpec({});
  EXPECT_EQ(spec.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(spec.stagesPerDevice, 2);
  candidate.schedule = ScheduleKind::OneFOneB;
  candidate.stagesPerDevice = 1;
  EXPECT_EQ(candidate.label(), "[1,2,3,2] x8 except_last 1f1b");
}

TEST(CandidateJson, ScheduleAndStagesPerDeviceRoundTrip) {
  Candidate candidate = example();
  candidate.balance = {1, 2, 3, 2};
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  candidate.devices = {1, 0};
  nlohmann::json json = toJson(candidate);
  EXPECT_EQ(json["schedule"], "interleaved");
  EXPECT_EQ(json["stages_per_device"], 2);
  EXPECT_EQ(candidateFromJson(json, "r.json"), candidate);
  // A candidate written before schedules existed is a GPipe one with one stage per device.
  EXPECT_FALSE(toJson(example()).contains("stages_per_device"));
  nlohmann::json old = toJson(example());
  old.erase("schedule");
  EXPECT_EQ(candidateFromJson(old, "r.json"), example());
}

TEST(Candidate, ScheduleSpec) {
  ScheduleSpec spec = example().scheduleSpec({{"s", 0, 3}}, false);
  EXPECT_THAT(spec.balance, ElementsAre(2, 6));
  EXPECT_EQ(spec.chunks, 8);
  EXPECT_EQ(spec.checkpoint, Checkpoint::ExceptLast);
  EXPECT_FALSE(spec.training);
  ASSERT_EQ(spec.skips.size(), 1u);
  EXPECT_EQ(spec.skips[0].popLayer, 3);
  EXPECT_TRUE(example().scheduleSpec({}).training);
}

TEST(Candidate, ScheduleSpecHasTheMicroBatchesThatExist) {
  Candidate candidate = example();
  candidate.batch = 5;
  candidate.chunks = 4;  // torch::chunk: sizes 2, 2, 1
  EXPECT_EQ(candidate.scheduleSpec({}).chunks, 3);
  candidate.batch = 3;  // fewer samples than chunks: sizes 1, 1, 1
  EXPECT_EQ(candidate.scheduleSpec({}).chunks, 3);
}

TEST(MicroBatching, SplitsLikeTorchChunk) {
  auto check = [](std::int64_t batch, std::int64_t chunks, std::int64_t size, std::int64_t count, std::int64_t last) {
    const MicroBatching split = microBatching(batch, chunks);
    EXPECT_EQ(split.chunkSize, size) << batch << "/" << chunks;
    EXPECT_EQ(split.count, count) << batch << "/" << chunks;
    EXPECT_EQ(split.lastSize, last) << batch << "/" << chunks;
  };
  check(8, 4, 2, 4, 2);
  check(10, 4, 3, 4, 1);
  check(10, 3, 4, 3, 2);
  check(9, 4, 3, 3, 3);  // torch.chunk(9 samples, 4) gives 3 chunks of 3
  check(3, 8, 1, 3, 1);  // batch < chunks: fewer micro-batches
  check(1, 1, 1, 1, 1);
  check(64, 8, 8, 8, 8);
  check(5, 4, 2, 3, 1);
  check(1, 8, 1, 1, 1);
  EXPECT_THROW(microBatching(0, 1), std::invalid_argument);
  EXPECT_THROW(microBatching(4, 0), std::invalid_argument);
}

TEST(Balance, ACountListTakesItsMinimum) {
  EXPECT_EQ(parseCountList("0, 2", 0), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(parseCountList("0,2", 1), std::nullopt);
  for (const char* text : {"", "0,,1", "0,-1", "0,x", "+1"}) EXPECT_EQ(parseCountList(text, 0), std::nullopt) << text;
}

TEST(Balance, ParseAndFormat) {
  EXPECT_THAT(parseBalance("2,3,3"), ElementsAre(2, 3, 3));
  EXPECT_THAT(parseBalance(" 4 , 1"), ElementsAre(4, 1));
  EXPECT_EQ(formatBalance({2, 3, 3}), "2,3,3");
  for (const char* text : {"", "2,,3", "2,0", "a", "2,3,", "-1"}) {
    EXPECT_THAT([&] { parseBalance(text); },
                ThrowsMessage<std::invalid_argument>(StrEq("invalid balance '" + std::string(text) +
                                                           "': expected comma-separated positive layer counts, "
                                                           "e.g. 2,3,3")))
        << text;
  }
}

TEST(Balance, FromSplitPointsWhereStagesBegin) {
  const std::vector<std::string> layers{"a", "b", "c", "d", "e"};
  EXPECT_THAT(balanceFromSplitPoints(layers, "c,e"), ElementsAre(2, 2, 1));
  EXPECT_THAT(balanceFromSplitPoints(layers, " b "), ElementsAre(1, 4));
  EXPECT_THAT([&] { balanceFromSplitPoints(layers, "c,x"); },
              ThrowsMessage<std::invalid_argument>(StrEq("no layer is named 'x'; the layers are: a, b, c, d, e")));
  EXPECT_THAT(
      [&] { balanceFromSplitPoints(layers, "a"); },
      ThrowsMessage<std::invalid_argument>(StrEq("'a' is the first layer: the first stage begins there anyway")));
  EXPECT_THAT([&] { balanceFromSplitPoints(layers, "d,c"); },
              ThrowsMessage<std::invalid_argument>(
                  StrEq("'c' does not come after 'd': give the split points in layer order, each once")));
  EXPECT_THROW(balanceFromSplitPoints(layers, "c,c"), std::invalid_argument);
  EXPECT_THROW(balanceFromSplitPoints(layers, ""), std::invalid_argument);
}

TEST(CandidateJson, RoundTrip) {
  Candidate candidate = example();
  nlohmann::json json = toJson(candidate);
  EXPECT_EQ(
      json,
      nlohmann::json::parse(
          R"J({"balance": [2, 6], "chunks": 8, "checkpoint": "except_last", "batch": 64, "schedule": "gpipe"})J"));
  EXPECT_EQ(candidateFromJson(json, "r.json"), candidate);
  candidate.devices = {1, 0};
  candidate.checkpoint = Checkpoint::Always;
  EXPECT_EQ(toJson(candidate)["devices"], nlohmann::json::array({1, 0}));
  EXPECT_EQ(candidateFromJson(toJson(candidate), "r.json"), candidate);
}

std::string candidateErrorAfter(void (*edit)(nlohmann::json&)) {
  nlohmann::json json = toJson(example());
  edit(json);
  try {
    candidateFromJson(json, "r.json", "$.candidates[2].candidate");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(CandidateJson, RejectsMalformedInput) {
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["checkpoint"] = "sometimes"; }),
            "r.json: $.candidates[2].candidate.checkpoint: invalid checkpoint mode 'sometimes': expected one of "
            "always, except_last, never");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["balance"][1] = 0; }),
            "r.json: $.candidates[2].candidate.balance[1]: expected a positive integer, got 0");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["balance"] = nlohmann::json::array(); }),
            "r.json: $.candidates[2].candidate.balance: expected at least one partition");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j.erase("chunks"); }),
            "r.json: $.candidates[2].candidate: missing required field 'chunks'");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["schedule"] = "zb"; }),
            "r.json: $.candidates[2].candidate.schedule: invalid schedule 'zb': expected gpipe, 1f1b, interleaved, "
            "zb1p, interleaved-zb or zbv");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["devices"] = {0}; }),
            "r.json: $.candidates[2].candidate.devices: expected one device per pipeline device (2), got 1");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["stages_per_device"] = 3; }),
            "r.json: $.candidates[2].candidate.stages_per_device: expected a divisor of the 2 stages of the balance, "
            "got 3");
  EXPECT_EQ(candidateErrorAfter([](nlohmann::json& j) { j["batch"] = -1; }),
            "r.json: $.candidates[2].candidate.batch: expected a positive integer, got -1");
}

TEST(CandidateSlug, IsFileNameSafeAndKeepsTheGpipeSlug) {
  Candidate candidate;
  candidate.balance = {2, 6};
  candidate.chunks = 8;
  candidate.checkpoint = Checkpoint::ExceptLast;
  EXPECT_EQ(candidateSlug(candidate), "b2-6_m8_except_last");
  candidate.schedule = ScheduleKind::OneFOneB;
  EXPECT_EQ(candidateSlug(candidate), "b2-6_m8_except_last_1f1b");
  candidate.balance = {1, 1, 1, 1};
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  candidate.checkpoint = Checkpoint::Never;
  EXPECT_EQ(candidateSlug(candidate), "b1-1-1-1_m8_never_interleaved-v2");
  candidate.balance = {8, 7};
  candidate.schedule = ScheduleKind::ZeroBubble;
  candidate.stagesPerDevice = 1;
  EXPECT_EQ(candidateSlug(candidate), "b8-7_m8_never_zb1p");
  candidate.deferredWeights = {0, 0};
  EXPECT_EQ(candidateSlug(candidate), "b8-7_m8_never_zb1p-deferred-0-0");
}

// Two custom orders of one balance and chunk count get two names (a digest of their actions),
// the same on every run.
TEST(CandidateSlug, NamesACustomOrderByADigestOfItsActions) {
  Candidate candidate;
  candidate.balance = {1, 1};
  candidate.checkpoint = Checkpoint::Never;
  runCustomOrder(candidate, makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", "a.csv"), "a.csv"));
  const std::string gpipeLike = candidateSlug(candidate);
  EXPECT_THAT(gpipeLike, testing::MatchesRegex("b1-1_m2_never_custom-[0-9a-f]{8}"));
  runCustomOrder(candidate, makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n", "b.csv"), "b.csv"));
  EXPECT_NE(candidateSlug(candidate), gpipeLike);
  runCustomOrder(candidate, makeCustomOrder(readScheduleCsv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", "c.csv"), "c.csv"));
  EXPECT_EQ(candidateSlug(candidate), gpipeLike) << "the same actions, another file";
}

}  // namespace
}  // namespace pipeprof
