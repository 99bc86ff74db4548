// Where the selected candidate's step goes: per device, its measured and predicted step as
// stacked bars by category (compute by op kind, bubble, waiting, transfer, overhead).
#pragma once

#include "views/candidate_chart_page.h"

namespace pipeprof::gui {

class BreakdownModel;

/// A horizontal stacked bar chart and a table over BreakdownModel, rebuilt whenever the model
/// resets.
class BreakdownChartView : public CandidateChartPage {
  Q_OBJECT

 public:
  BreakdownChartView(BreakdownModel* model, QWidget* parent = nullptr);

 private:
  void rebuild();

  BreakdownModel* model_;
};

}  // namespace pipeprof::gui
