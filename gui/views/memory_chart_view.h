// Per-device peak memory of the selected candidate, predicted beside measured, against capacity.
#pragma once

#include "views/candidate_chart_page.h"

namespace pipeprof::gui {

class MemoryModel;

/// A bar chart and a table over MemoryModel, rebuilt whenever the model resets.
class MemoryChartView : public CandidateChartPage {
  Q_OBJECT

 public:
  MemoryChartView(MemoryModel* model, QWidget* parent = nullptr);

 private:
  void rebuild();

  MemoryModel* model_;
};

}  // namespace pipeprof::gui
