// Tests of ReportDocument: loading, failures that keep the state, path resolution, live reload.
#include "models/report_document.h"

#include "sample.h"

#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

namespace pipeprof::gui {
namespace {

void writeText(const QString& path, const QByteArray& text) {
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
  file.write(text);
}

TEST(ReportDocument, OpensTheSampleAndEmitsReportChanged) {
  ReportDocument document;
  QSignalSpy changed(&document, &ReportDocument::reportChanged);
  QSignalSpy failed(&document, &ReportDocument::loadFailed);
  ASSERT_TRUE(document.open(test::samplePath()));
  EXPECT_EQ(changed.count(), 1);
  EXPECT_EQ(failed.count(), 0);
  ASSERT_TRUE(document.hasReport());
  EXPECT_EQ(document.report()->candidates.size(), static_cast<std::size_t>(test::kSampleCandidates));
  EXPECT_EQ(document.path(), QFileInfo(test::samplePath()).absoluteFilePath());
}

TEST(ReportDocument, ResolvesTracePathsAgainstTheReportDirectory) {
  ReportDocument document;
  ASSERT_TRUE(document.open(test::samplePath()));
  const QString dir = QFileInfo(test::samplePath()).absolutePath();
  EXPECT_EQ(document.resolvePath("sample/c0-predicted.json"), dir + QStringLiteral("/sample/c0-predicted.json"));
  EXPECT_EQ(document.resolvePath("/abs/trace.json"), QStringLiteral("/abs/trace.json"));
  EXPECT_EQ(document.resolvePath(""), QString());
}

TEST(ReportDocument, MalformedFileEmitsTheReadersMessageAndKeepsTheReport) {
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("bad.json"));
  writeText(bad, "{\"schema\": \"pipeprof.report/v1\", \"candidates\": [");
  ReportDocument document;
  ASSERT_TRUE(document.open(test::samplePath()));
  const std::shared_ptr<const Report> before = document.report();
  const QString pathBefore = document.path();
  QSignalSpy changed(&document, &ReportDocument::reportChanged);
  QSignalSpy failed(&document, &ReportDocument::loadFailed);
  EXPECT_FALSE(document.open(bad));
  ASSERT_EQ(failed.count(), 1);
  EXPECT_EQ(failed.at(0).at(0).toString(), bad);
  EXPECT_TRUE(failed.at(0).at(1).toString().contains(QStringLiteral("bad.json"))) << failed.at(0).at(1).toString().toStdString();
  EXPECT_EQ(changed.count(), 0);
  EXPECT_EQ(document.report(), before);
  EXPECT_EQ(document.path(), pathBefore);
}

TEST(ReportDocument, ForeignFileIsRejectedWithItsSchema) {
  QTemporaryDir dir;
  const QString foreign = dir.filePath(QStringLiteral("profile.json"));
  writeText(foreign, "{\"schema\": \"pipeprof.profile/v1\"}");
  ReportDocument document;
  QSignalSpy failed(&document, &ReportDocument::loadFailed);
  EXPECT_FALSE(document.open(foreign));
  ASSERT_EQ(failed.count(), 1);
  EXPECT_TRUE(failed.at(0).at(1).toString().contains(QStringLiteral("schema"))) << failed.at(0).at(1).toString().toStdString();
  EXPECT_FALSE(document.hasReport());
  EXPECT_TRUE(document.path().isEmpty());
}

TEST(ReportDocument, ReloadPicksUpARewrittenReportAndKeepsItOnFailure) {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("report.json"));
  Report report = *test::sampleReport();
  writeReport(report, path.toStdString());
  ReportDocument document;
  document.setWatching(false);
  ASSERT_TRUE(document.open(path));
  report.candidates.resize(2);
  report.updateSuggestion();
  writeReport(report, path.toStdString());
  ASSERT_TRUE(document.reload());
  EXPECT_EQ(document.report()->candidates.size(), 2u);

  QSignalSpy reloadFailed(&document, &ReportDocument::reloadFailed);
  writeText(path, "not json");
  EXPECT_FALSE(document.reload());
  EXPECT_EQ(reloadFailed.count(), 1);
  EXPECT_EQ(document.report()->candidates.size(), 2u);
}

TEST(ReportDocument, WatcherReloadsWhenTheSweepRewritesTheFile) {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("report.json"));
  Report report = *test::sampleReport();
  writeReport(report, path.toStdString());
  ReportDocument document;
  document.setReloadDelayMs(10);
  ASSERT_TRUE(document.open(path));
  QSignalSpy changed(&document, &ReportDocument::reportChanged);
  report.candidates.resize(4);
  report.updateSuggestion();
  writeReport(report, path.toStdString());  // atomic: a rename over the watched file
  ASSERT_TRUE(changed.wait(5000));
  EXPECT_EQ(document.report()->candidates.size(), 4u);
}

}  // namespace
}  // namespace pipeprof::gui
