// Tests of tuner/reference_traces: the calibration's reference pipelines kept as traces and read back.
#include <pipeprof/tuner/reference_traces.h>

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class ReferenceTraces : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pipeprof_reference_traces_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

ReferenceRun run(ScheduleKind schedule, std::int64_t chunks, TimeNs stepNs) {
  ReferenceRun reference;
  reference.candidate.schedule = schedule;
  reference.candidate.balance = {2, 1};
  reference.candidate.chunks = chunks;
  reference.candidate.batch = 8;
  reference.candidate.checkpoint = Checkpoint::ExceptLast;
  TraceEvent step;
  step.kind = EventKind::Span;
  step.phase = Phase::Step;
  step.name = "step";
  step.device = "cpu:0";
  step.durationNs = stepNs;
  reference.trace.events.push_back(step);
  return reference;
}

TEST_F(ReferenceTraces, ReadBackInTheOrderTheyRanWithTheirCandidates) {
  const std::string dir = referenceTracesDir(dir_.string());
  EXPECT_EQ(fs::path(dir).filename(), "calibration");
  // Written out of order, and more than ten: the order is the index, not the file name's.
  for (std::size_t k = 12; k-- > 0;) {
    writeReferenceTrace(run(k % 2 == 0 ? ScheduleKind::GPipe : ScheduleKind::OneFOneB, 1 + static_cast<std::int64_t>(k),
                            1000 + static_cast<TimeNs>(k)),
                        k, dir);
  }
  std::ofstream(fs::path(dir) / "notes.txt") << "not a trace";
  const std::vector<ReferenceRun> runs = readReferenceTraces(dir);
  ASSERT_EQ(runs.size(), 12U);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    EXPECT_EQ(runs[k].candidate.chunks, 1 + static_cast<std::int64_t>(k));
    EXPECT_EQ(runs[k].candidate.schedule, k % 2 == 0 ? ScheduleKind::GPipe : ScheduleKind::OneFOneB);
    EXPECT_EQ(runs[k].candidate.balance, (std::vector<std::int64_t>{2, 1}));
    EXPECT_EQ(runs[k].candidate.checkpoint, Checkpoint::ExceptLast);
    ASSERT_EQ(runs[k].trace.events.size(), 1U);
    EXPECT_EQ(runs[k].trace.events.front().durationNs, 1000 + static_cast<TimeNs>(k));
    EXPECT_EQ(runs[k].trace.metadata.count("reference_candidate"), 0U);
  }
}

TEST_F(ReferenceTraces, AMissingOrEmptyDirectoryAndAForeignTraceAreNamed) {
  const std::string dir = referenceTracesDir(dir_.string());
  EXPECT_THAT([&] { readReferenceTraces(dir); },
              ThrowsMessage<std::runtime_error>(HasSubstr("no such directory of reference traces")));
  fs::create_directories(dir);
  EXPECT_THAT([&] { readReferenceTraces(dir); }, ThrowsMessage<std::runtime_error>(HasSubstr("holds no reference")));
  // A candidate's measured trace copied in: it names no reference candidate.
  writeChromeTraceFile(run(ScheduleKind::GPipe, 2, 10).trace, (fs::path(dir) / "b2-1_m2.measured.json").string());
  EXPECT_THAT([&] { readReferenceTraces(dir); },
              ThrowsMessage<FormatError>(HasSubstr("b2-1_m2.measured.json: $.otherData: names no reference")));
}

}  // namespace
}  // namespace pipeprof::tuner
