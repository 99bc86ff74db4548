// Tests of the command lines the GUI copies for a candidate.
#include "models/command_line.h"

#include "sample.h"

#include <gtest/gtest.h>

namespace pipeprof::gui {
namespace {

TEST(CommandLine, RunAndSweepNameTheCandidateExactly) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  const Candidate& candidate = report->candidates[test::kSampleSuggested].candidate;
  EXPECT_EQ(runCommandLine(report->environment, candidate),
            QStringLiteral("pipeprof run --model mlp --devices cpu,cpu --batch 32 --balance 5,3 --chunks 4 "
                           "--checkpoint never --trace trace.json"));
  EXPECT_EQ(sweepCommandLine(report->environment, candidate),
            QStringLiteral("pipeprof sweep --model mlp --devices cpu,cpu --batch 32 --balances 5,3 --chunks 4 "
                           "--checkpoint never --measure all -o report.json"));
}

TEST(CommandLine, OtherSchedulesNameTheScheduleAndStagesPerDevice) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  Candidate candidate = report->candidates[test::kSampleOneFOneB].candidate;
  EXPECT_EQ(runCommandLine(report->environment, candidate),
            QStringLiteral("pipeprof run --model mlp --devices cpu,cpu --batch 32 --balance 4,4 --chunks 4 "
                           "--checkpoint except_last --schedule 1f1b --stages-per-device 1 --trace trace.json"));
  candidate.balance = {2, 2, 2, 2};
  candidate.schedule = ScheduleKind::Interleaved;
  candidate.stagesPerDevice = 2;
  EXPECT_EQ(sweepCommandLine(report->environment, candidate),
            QStringLiteral("pipeprof sweep --model mlp --devices cpu,cpu --batch 32 --balances 2,2,2,2 --chunks 4 "
                           "--checkpoint except_last --schedules interleaved --stages-per-device 2 --measure all "
                           "-o report.json"));
}

TEST(CommandLine, QuotesArgumentsTheShellWouldSplit) {
  ReportEnvironment environment;
  environment.model = "my model.pt";
  environment.batch = 8;
  Candidate candidate;
  candidate.balance = {1, 1};
  EXPECT_EQ(runCommandLine(environment, candidate),
            QStringLiteral("pipeprof run --model 'my model.pt' --batch 8 --balance 1,1 --chunks 1 "
                           "--checkpoint except_last --trace trace.json"));
}

}  // namespace
}  // namespace pipeprof::gui
