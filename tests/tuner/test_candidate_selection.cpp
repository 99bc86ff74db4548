// Tests of tuner/candidate_selection: --measure parsing and the spread rule of top:N.
#include <pipeprof/tuner/candidate_selection.h>

#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof::tuner {
namespace {

Candidate make(std::vector<std::int64_t> balance, std::int64_t chunks, Checkpoint mode) {
  Candidate candidate;
  candidate.balance = std::move(balance);
  candidate.chunks = chunks;
  candidate.checkpoint = mode;
  candidate.batch = 8;
  return candidate;
}

std::vector<Candidate> ranked() {
  return {make({2, 2}, 1, Checkpoint::Never),  make({2, 2}, 2, Checkpoint::Never),
          make({2, 2}, 1, Checkpoint::Always), make({1, 3}, 1, Checkpoint::Never),
          make({3, 1}, 2, Checkpoint::Always), make({2, 2}, 2, Checkpoint::Always)};
}

TEST(ParseMeasurePolicy, AcceptsTopAllNone) {
  const MeasurePolicy top = parseMeasurePolicy("top:12");
  EXPECT_EQ(top.kind, MeasureKind::Top);
  EXPECT_EQ(top.count, 12);
  EXPECT_EQ(parseMeasurePolicy("all").kind, MeasureKind::All);
  EXPECT_EQ(parseMeasurePolicy("none").kind, MeasureKind::None);
}

TEST(ParseMeasurePolicy, RejectsMalformedTextNamingIt) {
  for (const char* text : {"top:0", "top:", "top:x", "top:-3", "best", "", "top:1.5"}) {
    try {
      parseMeasurePolicy(text);
      FAIL() << "accepted '" << text << "'";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("'" + std::string(text) + "'"), std::string::npos) << error.what();
    }
  }
}

TEST(SelectForMeasurement, TopTakesAThirdByRankThenSpreads) {
  // Picks 0 and 1 (ceil(4/3)) by rank; then [3,1] x2 always (score 1), then [1,3] x1 never (score 3,
  // ahead of [2,2] x1 always with 4 and [2,2] x2 always with 5).
  EXPECT_EQ(selectForMeasurement(ranked(), {MeasureKind::Top, 4}), (std::vector<std::size_t>{0, 1, 4, 3}));
}

TEST(SelectForMeasurement, TopOneIsTheBestPredicted) {
  EXPECT_EQ(selectForMeasurement(ranked(), {MeasureKind::Top, 1}), (std::vector<std::size_t>{0}));
}

TEST(SelectForMeasurement, TopBeyondTheListTakesEveryCandidate) {
  std::vector<std::size_t> picked = selectForMeasurement(ranked(), {MeasureKind::Top, 10});
  std::sort(picked.begin(), picked.end());
  EXPECT_EQ(picked, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
}

TEST(SelectForMeasurement, TopSpreadsOverSchedules) {
  // top:3 takes 0 by rank; then the scores (balance + chunks + mode + schedule counts) are
  // 1: 1+0+1+1 = 3, 2: 0+1+1+1 = 3, 3 (1f1b): 1+1+1+0 = 3, 4 (interleaved v2): 0+1+1+0 = 2 -> 4;
  // then 1: 1+0+2+1 = 4, 2: 0+2+2+1 = 5, 3: 1+2+2+0 = 5 -> 1.
  std::vector<Candidate> candidates = {make({2, 2}, 2, Checkpoint::Never), make({2, 2}, 4, Checkpoint::Never),
                                       make({1, 3}, 2, Checkpoint::Never), make({2, 2}, 2, Checkpoint::Never),
                                       make({1, 1, 1, 1}, 2, Checkpoint::Never)};
  candidates[3].schedule = ScheduleKind::OneFOneB;
  candidates[4].schedule = ScheduleKind::Interleaved;
  candidates[4].stagesPerDevice = 2;
  EXPECT_EQ(selectForMeasurement(candidates, {MeasureKind::Top, 3}), (std::vector<std::size_t>{0, 4, 1}));
}

TEST(SelectForMeasurement, AllAndNone) {
  EXPECT_EQ(selectForMeasurement(ranked(), {MeasureKind::All, 0}), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(selectForMeasurement(ranked(), {MeasureKind::None, 0}).empty());
  EXPECT_TRUE(selectForMeasurement({}, {MeasureKind::Top, 3}).empty());
}

}  // namespace
}  // namespace pipeprof::tuner
