// Tests of SuggestWorker: a search finishes off the GUI thread with progress, and can be cancelled.
#include "models/suggest_worker.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QSignalSpy>

#include <algorithm>

namespace pipeprof::gui {
namespace {

// A space far too big to finish before a cancel sent right after start: 32 layers on 4
// devices (4495 balances) x 6 chunk counts x 3 modes.
Profile bigProfile(const Profile& base) {
  Profile profile = base;
  profile.layers.clear();
  for (int copy = 0; copy < 4; ++copy) {
    for (const LayerProfile& layer : base.layers) profile.layers.push_back(layer);
  }
  return profile;
}

TEST(SuggestWorker, FinishesWithRankedCandidatesAndProgress) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  SuggestWorker worker;
  QSignalSpy finished(&worker, &SuggestWorker::finished);
  QSignalSpy progress(&worker, &SuggestWorker::progress);
  QSignalSpy cancelled(&worker, &SuggestWorker::cancelled);
  SearchSpace space;
  space.batch = 32;
  space.devices = 2;
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space));
  EXPECT_TRUE(worker.isRunning());
  EXPECT_FALSE(worker.start(*report->profile, *report->cluster, space));  // one at a time
  ASSERT_TRUE(finished.wait(20000));
  EXPECT_FALSE(worker.isRunning());
  EXPECT_EQ(cancelled.count(), 0);
  ASSERT_GE(progress.count(), 1);
  EXPECT_EQ(progress.last().at(0).toLongLong(), progress.last().at(1).toLongLong());  // the last report is 100 %
  const SearchResult& result = worker.result();
  // gpipe and 1f1b: balances of 8 layers in 2 parts x chunks x modes; interleaved v2: in 4 parts.
  EXPECT_EQ(result.evaluated, 2 * 7 * 4 * 3 + 35 * 4 * 3);
  ASSERT_FALSE(result.ranked.empty());
  for (std::size_t r = 1; r < result.ranked.size(); ++r) {
    EXPECT_GE(result.ranked[r - 1].prediction.samplesPerS, result.ranked[r].prediction.samplesPerS);
  }
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved}) {
    EXPECT_TRUE(std::any_of(result.ranked.begin(), result.ranked.end(), [kind](const RankedCandidate& ranked) {
      return ranked.candidate.schedule == kind;
    })) << scheduleKindName(kind);
  }
}

TEST(SuggestWorker, SearchesOnlyTheGivenSchedulesAndStagesPerDevice) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  SuggestWorker worker;
  QSignalSpy finished(&worker, &SuggestWorker::finished);
  SearchSpace space;
  space.batch = 32;
  space.devices = 2;
  space.schedules = {ScheduleKind::Interleaved};
  space.stagesPerDevice = {2, 4};
  space.chunks = {2, 3};
  space.modes = {Checkpoint::Never};
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space));
  ASSERT_TRUE(finished.wait(20000));
  const SearchResult& result = worker.result();
  // v = 2: 35 balances of 4 stages, v = 4: 1 balance of 8 stages; x 2 chunk counts.
  EXPECT_EQ(result.evaluated, (35 + 1) * 2);
  ASSERT_FALSE(result.ranked.empty());
  for (const RankedCandidate& ranked : result.ranked) {
    EXPECT_EQ(ranked.candidate.schedule, ScheduleKind::Interleaved);
    EXPECT_EQ(ranked.candidate.chunks, 2);  // 3 micro-batches are not a multiple of 2 devices
    EXPECT_EQ(ranked.candidate.balance.size(), static_cast<std::size_t>(2 * ranked.candidate.stagesPerDevice));
  }
  EXPECT_TRUE(std::any_of(result.rejected.begin(), result.rejected.end(), [](const RankedCandidate& rejected) {
    return rejected.rejection.find("multiple of devices") != std::string::npos;
  }));
}

TEST(SuggestWorker, CancelStopsTheSearchAndDeliversNoResult) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  const Profile profile = bigProfile(*report->profile);
  const Cluster cluster = Cluster::uniform(4, std::nullopt, 10e9, 5000, "cpu");
  SuggestWorker worker;
  QSignalSpy finished(&worker, &SuggestWorker::finished);
  QSignalSpy cancelled(&worker, &SuggestWorker::cancelled);
  QSignalSpy progress(&worker, &SuggestWorker::progress);
  SearchSpace space;
  space.batch = 32;
  space.devices = 4;
  space.chunks = {1, 2, 4, 8, 16, 32};
  space.schedules = {ScheduleKind::GPipe};
  space.enumeration = BalanceEnumeration::All;
  ASSERT_TRUE(worker.start(profile, cluster, space));
  worker.cancel();
  ASSERT_TRUE(cancelled.wait(20000));
  EXPECT_EQ(cancelled.count(), 1);
  EXPECT_EQ(finished.count(), 0);
  EXPECT_FALSE(worker.isRunning());
  EXPECT_TRUE(worker.result().ranked.empty());
  for (const QList<QVariant>& report : progress) EXPECT_LT(report.at(0).toLongLong(), report.at(1).toLongLong());
}

TEST(SuggestWorker, AnInconsistentSpaceFails) {
  const std::shared_ptr<const Report> report = test::sampleReport();
  SuggestWorker worker;
  QSignalSpy failed(&worker, &SuggestWorker::failed);
  SearchSpace space;
  space.batch = 32;
  space.devices = 2;
  space.chunks.clear();  // nothing to search
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space));
  ASSERT_TRUE(failed.wait(20000));
  EXPECT_FALSE(failed.at(0).at(0).toString().isEmpty());
}

}  // namespace
}  // namespace pipeprof::gui
