// Tests of tuner/reference_traces: the calibration's reference pipelines kept as traces and read back.
#include <pipeprof/tuner/reference_traces.h>

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>

#include "support/scratch_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace pipeprof::tuner {
namespace {

namespace fs = std::filesystem;

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class ReferenceTraces : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"reference_traces"};
  const fs::path dir_ = scratch_.path();
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
    ReferenceRun reference = run(k % 2 == 0 ? ScheduleKind::GPipe : ScheduleKind::OneFOneB,
                                 1 + static_cast<std::int64_t>(k), 1000 + static_cast<TimeNs>(k));
    reference.atS = k == 5 ? -1.0 : 0.1 * static_cast<double>(k);  // run 5's moment unknown
    writeReferenceTrace(reference, k, dir);
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
    EXPECT_EQ(runs[k].atS, k == 5 ? -1.0 : 0.1 * static_cast<double>(k)) << "read back exactly";
    EXPECT_EQ(runs[k].trace.metadata.count("reference_at_s"), 0U);
  }
}

TEST_F(ReferenceTraces, AMomentThatIsNoTimeIsNamed) {
  const std::string dir = referenceTracesDir(dir_.string());
  ReferenceRun reference = run(ScheduleKind::GPipe, 2, 10);
  reference.atS = 1.5;
  writeReferenceTrace(reference, 0, dir);
  ASSERT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  const fs::path path = fs::directory_iterator(dir)->path();
  Trace trace = readChromeTraceFile(path.string());
  EXPECT_EQ(trace.metadata.at("reference_at_s"), "1.5");
  for (const char* bad : {"soon", "-2", "1.5s", ""}) {
    trace.metadata["reference_at_s"] = bad;
    writeChromeTraceFile(trace, path.string());
    EXPECT_THAT([&] { readReferenceTraces(dir); },
                ThrowsMessage<FormatError>(HasSubstr("$.otherData.reference_at_s: expected when the reference ran")))
        << bad;
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
