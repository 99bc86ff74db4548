// Widget tests of the timeline canvas: fit, zoom around the cursor, hit testing for tooltips.
#include "views/timeline_canvas.h"

#include "models/report_document.h"
#include "models/timeline_model.h"

#include "sample.h"

#include <gtest/gtest.h>

namespace pipeprof::gui {
namespace {

TEST(TimelineCanvas, FitsZoomsAndFindsTheOpUnderTheCursor) {
  ReportDocument document;
  ASSERT_TRUE(document.open(test::samplePath()));
  TimelineModel model;
  model.loadCandidate(document, test::kSampleSuggested);
  TimelineCanvas canvas(&model);
  canvas.resize(1000, 600);
  canvas.show();
  canvas.fitAll();
  EXPECT_LE(canvas.viewStartNs(), 0);
  EXPECT_GE(canvas.viewEndNs(), model.endNs());
  const TimeNs width = canvas.viewEndNs() - canvas.viewStartNs();
  canvas.zoomBy(2.0, 600);
  EXPECT_NEAR(static_cast<double>(canvas.viewEndNs() - canvas.viewStartNs()), width / 2.0, width * 0.01);
  canvas.fitAll();
  // The first op of partition 0 starts at 0: find it just right of the plot's left edge, in
  // the first lane under the ruler and the section header.
  const TimelineSpan* span = nullptr;
  for (int y = 0; y < 120 && span == nullptr; y += 2) span = canvas.spanAt(QPoint(212, y));
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->name, QStringLiteral("forward(0,0)"));
  EXPECT_TRUE(span->details.contains(QStringLiteral("micro-batch 0")));
  EXPECT_EQ(canvas.spanAt(QPoint(5, 60)), nullptr);  // the label column
}

}  // namespace
}  // namespace pipeprof::gui
