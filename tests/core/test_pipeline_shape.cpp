// Tests for pipeline_shape.cpp: p, the shape's checks, its JSON form, and shapes passed by slicing.
#include <pipeprof/core/candidate.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/pipeline_shape.h>
#include <pipeprof/core/schedule.h>

#include <gtest/gtest.h>

namespace pipeprof {
namespace {

PipelineShape shape(std::vector<std::int64_t> balance, ScheduleKind schedule, std::int64_t v, std::int64_t chunks,
                    Checkpoint checkpoint = Checkpoint::ExceptLast) {
  return PipelineShape{std::move(balance), schedule, v, chunks, checkpoint};
}

TEST(PipelineShape, PipelineDevicesAreTheStagesOverV) {
  EXPECT_EQ(shape({2, 6}, ScheduleKind::GPipe, 1, 4).pipelineDevices(), 2);
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::OneFOneB, 1, 4).pipelineDevices(), 4);
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 4).pipelineDevices(), 2);
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 3, 2).pipelineDevices(), 2);
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::Interleaved, 4, 1).pipelineDevices(), 1);
  EXPECT_EQ(shape({8}, ScheduleKind::GPipe, 1, 1).pipelineDevices(), 1);
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 4).stages(), 4);
}

TEST(PipelineShape, AMalformedShapeHasOneDevicePerStage) {
  // v not dividing n (3 stages, v 2) and v < 1: p = n until shapeError() names the problem;
  // the threaded Pipe once said 1 device for the first, the stage runtime 3.
  EXPECT_EQ(shape({1, 1, 1}, ScheduleKind::Interleaved, 2, 4).pipelineDevices(), 3);
  EXPECT_EQ(shape({1, 1, 1}, ScheduleKind::GPipe, 0, 4).pipelineDevices(), 3);
  EXPECT_EQ(shape({1, 1, 1}, ScheduleKind::GPipe, -2, 4).pipelineDevices(), 3);
  EXPECT_EQ(shape({1}, ScheduleKind::Interleaved, 2, 4).pipelineDevices(), 1);
  EXPECT_EQ(shape({}, ScheduleKind::GPipe, 1, 4).pipelineDevices(), 0);
}

TEST(PipelineShape, ScheduleLabel) {
  EXPECT_EQ(shape({2, 6}, ScheduleKind::GPipe, 1, 4).scheduleLabel(), "gpipe");
  EXPECT_EQ(shape({2, 6}, ScheduleKind::OneFOneB, 1, 4).scheduleLabel(), "1f1b");
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 3, 2).scheduleLabel(), "interleaved v3");
}

TEST(PipelineShape, ShapeErrorNamesWhatIsWrong) {
  EXPECT_EQ(shape({}, ScheduleKind::GPipe, 1, 4).shapeError(),
            "balance must have at least one partition (balance: [])");
  EXPECT_EQ(shape({2, 0, 1}, ScheduleKind::GPipe, 1, 4).shapeError(),
            "all balance numbers must be positive integer (balance: [2, 0, 1])");
  EXPECT_EQ(shape({2, 6}, ScheduleKind::GPipe, 1, 0).shapeError(),
            "number of chunks must be positive integer (chunks: 0)");
  EXPECT_EQ(shape({2, 6}, ScheduleKind::GPipe, 0, 4).shapeError(),
            "stages per device must be positive (stages per device: 0)");
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::OneFOneB, 2, 4).shapeError(),
            "1f1b runs one stage per device (stages per device: 2); use the interleaved or interleaved-zb schedule for "
            "more");
  EXPECT_EQ(shape({1, 1, 1, 1}, ScheduleKind::Interleaved, 1, 4).shapeError(),
            "interleaved needs at least 2 stages per device (stages per device: 1)");
  EXPECT_EQ(shape({1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 4).shapeError(),
            "the stages must split evenly over the devices: 5 stages is not a multiple of 2 stages per device");
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 6).shapeError(),
            "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)");
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 8).shapeError(), "");
  EXPECT_EQ(shape({2, 6}, ScheduleKind::OneFOneB, 1, 3).shapeError(), "");
  // The micro-batches that exist decide: 8 chunks asked, but a batch of 6 makes only 6.
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 8).shapeError(6),
            "interleaved needs chunks a multiple of devices (chunks: 6, devices: 4, stages per device: 2)");
  // The same text as scheduleShapeError's.
  EXPECT_EQ(shape({1, 1, 1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 6).shapeError(),
            scheduleShapeError(ScheduleKind::Interleaved, 2, 8, 6));
}

TEST(PipelineShape, ScheduleBuildThrowsTheShapeError) {
  ScheduleSpec spec;
  static_cast<PipelineShape&>(spec) = shape({1, 1, 1, 1, 1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 6);
  try {
    Schedule::build(spec);
    FAIL() << "built a schedule of a malformed shape";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), spec.shapeError());
  }
  spec.chunks = 4;
  EXPECT_EQ(Schedule::build(spec).devices(), 4);
}

TEST(PipelineShapeJson, RoundTripsWithTheCandidateKeys) {
  const PipelineShape interleaved = shape({1, 2, 3, 2}, ScheduleKind::Interleaved, 2, 8, Checkpoint::Never);
  const nlohmann::json json = toJson(interleaved);
  EXPECT_EQ(json, nlohmann::json::parse(R"({"balance": [1, 2, 3, 2], "chunks": 8, "checkpoint": "never",
                                            "schedule": "interleaved", "stages_per_device": 2})"));
  EXPECT_EQ(pipelineShapeFromJson(json, "s.json"), interleaved);
  const PipelineShape gpipe = shape({2, 6}, ScheduleKind::GPipe, 1, 4, Checkpoint::Always);
  EXPECT_EQ(toJson(gpipe), nlohmann::json::parse(R"({"balance": [2, 6], "chunks": 4, "checkpoint": "always",
                                                     "schedule": "gpipe"})"));
  EXPECT_EQ(pipelineShapeFromJson(toJson(gpipe), "s.json"), gpipe);
}

/// The FormatError a shape's JSON text gets as "$.shape" of s.json, or "no error".
std::string shapeJsonError(const std::string& text) {
  try {
    pipelineShapeFromJson(nlohmann::json::parse(text), "s.json", "$.shape");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(PipelineShapeJson, OldFilesLoadAndBadOnesNameThePath) {
  // Written before schedules existed: no schedule, no stages_per_device.
  const nlohmann::json old = nlohmann::json::parse(R"({"balance": [2, 6], "chunks": 4, "checkpoint": "except_last"})");
  EXPECT_EQ(pipelineShapeFromJson(old, "s.json"), shape({2, 6}, ScheduleKind::GPipe, 1, 4));
  EXPECT_EQ(shapeJsonError(R"({"balance": [1, 1, 1], "chunks": 4, "checkpoint": "never", "stages_per_device": 2})"),
            "s.json: $.shape.stages_per_device: expected a divisor of the 3 stages of the balance, got 2");
  EXPECT_EQ(shapeJsonError(R"({"balance": [], "chunks": 4, "checkpoint": "never"})"),
            "s.json: $.shape.balance: expected at least one partition");
  EXPECT_EQ(shapeJsonError(R"({"balance": [2], "checkpoint": "never"})"),
            "s.json: $.shape: missing required field 'chunks'");
  EXPECT_EQ(shapeJsonError("[2, 6]"),
            "s.json: $.shape: expected a pipeline shape object with balance, chunks and checkpoint");
}

TEST(PipelineShapeJson, ZeroBubblesDeferredWeightsRoundTripAndAreChecked) {
  PipelineShape zb = shape({8, 7}, ScheduleKind::ZeroBubble, 1, 8, Checkpoint::Never);
  zb.deferredWeights = {0, 0};
  const nlohmann::json json = toJson(zb);
  EXPECT_EQ(json, nlohmann::json::parse(R"({"balance": [8, 7], "chunks": 8, "checkpoint": "never",
                                            "schedule": "zb1p", "deferred_weights": [0, 0]})"));
  EXPECT_EQ(pipelineShapeFromJson(json, "s.json"), zb);
  EXPECT_NE(pipelineShapeFromJson(json, "s.json"), shape({8, 7}, ScheduleKind::ZeroBubble, 1, 8, Checkpoint::Never));
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = zb;
  EXPECT_EQ(candidate.label(), "[8,7] x8 never zb1p deferred-weights 0,0");
  EXPECT_EQ(zb.orderLabel(), "zb1p deferred-weights 0,0");
  EXPECT_EQ(zb.scheduleLabel(), "zb1p");  // the calibration's reference shapes go by it
  EXPECT_EQ(shapeJsonError(R"({"balance": [8, 7], "chunks": 8, "checkpoint": "never", "schedule": "1f1b",
                      "deferred_weights": [0, 0]})"),
            "s.json: $.shape.deferred_weights: deferred weights go with zb1p, not 1f1b (deferred weights: [0, 0])");
  EXPECT_EQ(shapeJsonError(R"({"balance": [8, 7], "chunks": 8, "checkpoint": "never", "schedule": "zb1p",
                      "deferred_weights": [0, 2]})"),
            "s.json: $.shape.deferred_weights: device 1 defers at most 1 of its W's (torch's order), not 2 "
            "(deferred weights: [0, 2])");
  EXPECT_EQ(shapeJsonError(R"({"balance": [8, 7], "chunks": 8, "checkpoint": "never", "schedule": "zb1p",
                      "deferred_weights": [0, -1]})"),
            "s.json: $.shape.deferred_weights[1]: expected a non-negative integer, got -1");
}

/// Options with fields of their own beside the shape, as TrainingOptions has (a core test cannot
/// include the runtime's).
struct RunOptions : PipelineShape {
  std::int64_t steps = 10;
  double learningRate = 1e-3;
};

TEST(PipelineShape, PassesBetweenTypesBySlicing) {
  const PipelineShape one = shape({1, 1, 1, 1}, ScheduleKind::Interleaved, 2, 4, Checkpoint::Always);
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = one;
  candidate.batch = 64;
  candidate.devices = {1, 0};
  RunOptions options;
  static_cast<PipelineShape&>(options) = candidate;  // the candidate's devices and batch stay behind
  options.steps = 3;
  const ScheduleSpec spec = candidate.scheduleSpec({});
  EXPECT_EQ(static_cast<const PipelineShape&>(candidate), one);
  EXPECT_EQ(static_cast<const PipelineShape&>(options), one);
  EXPECT_EQ(static_cast<const PipelineShape&>(spec), one);
  EXPECT_EQ(static_cast<const PipelineShape&>(options), static_cast<const PipelineShape&>(candidate));
  EXPECT_EQ(options.balance, (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(options.pipelineDevices(), 2);
  EXPECT_EQ(options.steps, 3);
  // Any field of the shape tells them apart.
  options.checkpoint = Checkpoint::Never;
  EXPECT_NE(static_cast<const PipelineShape&>(options), one);
  // A Candidate compares its own fields too.
  Candidate other = candidate;
  other.batch = 32;
  EXPECT_EQ(static_cast<const PipelineShape&>(other), static_cast<const PipelineShape&>(candidate));
  EXPECT_NE(other, candidate);
}

TEST(PipelineShape, TheScheduleSpecOfACandidateRunsTheMicroBatchesThatExist) {
  Candidate candidate;
  static_cast<PipelineShape&>(candidate) = shape({2, 6}, ScheduleKind::OneFOneB, 1, 4, Checkpoint::Never);
  candidate.batch = 3;  // 4 chunks of 3 samples: 3 micro-batches
  const ScheduleSpec spec = candidate.scheduleSpec({}, false);
  EXPECT_EQ(spec.chunks, 3);
  EXPECT_FALSE(spec.training);
  EXPECT_EQ(static_cast<const PipelineShape&>(spec), shape({2, 6}, ScheduleKind::OneFOneB, 1, 3, Checkpoint::Never));
}

}  // namespace
}  // namespace pipeprof
