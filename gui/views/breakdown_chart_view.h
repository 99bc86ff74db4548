// Where the selected candidate's step goes: per device, its measured and predicted step as
// stacked bars by category (compute by op kind, bubble, waiting, transfer, overhead).
#pragma once

#include <QWidget>

QT_BEGIN_NAMESPACE
class QChartView;
class QTableView;
QT_END_NAMESPACE

namespace pipeprof::gui {

class BreakdownModel;
class CandidatePicker;

/// A horizontal stacked bar chart and a table over BreakdownModel, rebuilt whenever the model
/// resets.
class BreakdownChartView : public QWidget {
  Q_OBJECT

 public:
  BreakdownChartView(BreakdownModel* model, QWidget* parent = nullptr);

  CandidatePicker* picker() const { return picker_; }
  QChartView* chartView() const { return chart_; }
  QWidget* exportTarget() const;

 private:
  void rebuild();

  BreakdownModel* model_;
  CandidatePicker* picker_;
  QChartView* chart_;
  QTableView* table_;
};

}  // namespace pipeprof::gui
