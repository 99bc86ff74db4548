// A page about one candidate: a candidate picker above a chart above a table that shows every
// row (the Memory and Step breakdown tabs).
#pragma once

#include <QWidget>

QT_BEGIN_NAMESPACE
class QAbstractItemModel;
class QChart;
class QChartView;
class QTableView;
QT_END_NAMESPACE

namespace pipeprof::gui {

class CandidatePicker;

class CandidateChartPage : public QWidget {
  Q_OBJECT

 public:
  CandidatePicker* picker() const { return picker_; }
  QChartView* chartView() const { return chart_; }
  QWidget* exportTarget() const;

 protected:
  /// The table shows `model`.
  CandidateChartPage(QAbstractItemModel* model, QWidget* parent);

  QTableView* table() const { return table_; }
  /// Shows `chart` (taking it, and deleting the one before) and sizes the table to show its
  /// `rows` rows without scrolling, leaving the rest of the page to the chart.
  void showChart(QChart* chart, int rows);

 private:
  CandidatePicker* picker_;
  QChartView* chart_;
  QTableView* table_;
};

}  // namespace pipeprof::gui
