// Tests of SuggestWorker: a search finishes off the GUI thread with progress, and can be cancelled.
#include "models/suggest_worker.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QSignalSpy>

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
  space.partitions = 2;
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space));
  EXPECT_TRUE(worker.isRunning());
  EXPECT_FALSE(worker.start(*report->profile, *report->cluster, space));  // one at a time
  ASSERT_TRUE(finished.wait(20000));
  EXPECT_FALSE(worker.isRunning());
  EXPECT_EQ(cancelled.count(), 0);
  ASSERT_GE(progress.count(), 1);
  EXPECT_EQ(progress.last().at(0).toLongLong(), progress.last().at(1).toLongLong());  // the last report is 100 %
  const SearchResult& result = worker.result();
  EXPECT_EQ(result.evaluated, 7 * 4 * 3);  // balances of 8 layers in 2 parts x chunks x modes
  ASSERT_FALSE(result.ranked.empty());
  for (std::size_t r = 1; r < result.ranked.size(); ++r) {
    EXPECT_GE(result.ranked[r - 1].prediction.samplesPerS, result.ranked[r].prediction.samplesPerS);
  }
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
  space.partitions = 4;
  space.chunks = {1, 2, 4, 8, 16, 32};
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
  space.partitions = 2;
  space.chunks.clear();  // nothing to search
  ASSERT_TRUE(worker.start(*report->profile, *report->cluster, space));
  ASSERT_TRUE(failed.wait(20000));
  EXPECT_FALSE(failed.at(0).at(0).toString().isEmpty());
}

}  // namespace
}  // namespace pipeprof::gui
