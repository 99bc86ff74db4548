// Per-device peak memory of the selected candidate, predicted beside measured, against capacity.
#pragma once

#include <QWidget>

QT_BEGIN_NAMESPACE
class QChartView;
class QTableView;
QT_END_NAMESPACE

namespace pipeprof::gui {

class CandidatePicker;
class MemoryModel;

/// A bar chart and a table over MemoryModel, rebuilt whenever the model resets.
class MemoryChartView : public QWidget {
  Q_OBJECT

 public:
  MemoryChartView(MemoryModel* model, QWidget* parent = nullptr);

  CandidatePicker* picker() const { return picker_; }
  QChartView* chartView() const { return chart_; }
  QWidget* exportTarget() const;

 private:
  void rebuild();

  MemoryModel* model_;
  CandidatePicker* picker_;
  QChartView* chart_;
  QTableView* table_;
};

}  // namespace pipeprof::gui
