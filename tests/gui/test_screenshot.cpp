// Runs `pipeprof-gui --screenshot` on the sample report: a PNG of the requested size, or exit 2.
#include "sample.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QProcess>
#include <QTemporaryDir>

namespace {

int runGui(const QStringList& arguments) {
  QProcess process;
  process.start(QStringLiteral(PIPEPROF_BINARY_DIR "/gui/pipeprof-gui"), arguments);
  if (!process.waitForFinished(60000)) return -1;
  return process.exitCode();
}

TEST(Screenshot, RendersAViewToAPngOfTheRequestedSize) {
  QTemporaryDir dir;
  const QString out = dir.filePath(QStringLiteral("memory.png"));
  ASSERT_EQ(runGui({QStringLiteral("--screenshot"), out, QStringLiteral("--view"), QStringLiteral("memory"),
                    QStringLiteral("--size"), QStringLiteral("1200x800"), pipeprof::test::samplePath()}),
            0);
  const QImage image(out);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(1200, 800));
}

TEST(Screenshot, RejectsAnUnknownViewAndAMalformedReport) {
  QTemporaryDir dir;
  EXPECT_EQ(runGui({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")), QStringLiteral("--view"),
                    QStringLiteral("charts"), pipeprof::test::samplePath()}),
            2);
  EXPECT_EQ(runGui({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")),
                    QStringLiteral(PIPEPROF_SOURCE_DIR "/tests/gui/gui_test_main.cpp")}),
            2);
}

}  // namespace
