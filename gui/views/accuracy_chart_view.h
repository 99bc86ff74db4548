// Predicted against measured: a step-time scatter with the y = x line and error band, and throughput bars.
#pragma once

#include <QStringList>
#include <QWidget>

QT_BEGIN_NAMESPACE
class QChartView;
class QLabel;
QT_END_NAMESPACE

namespace pipeprof::gui {

class AccuracyModel;

/// Rebuilt from AccuracyModel whenever it resets. Hovering a point names its candidate.
class AccuracyChartView : public QWidget {
  Q_OBJECT

 public:
  /// Relative half-width of the error band around y = x (0.10 = ±10 %).
  static constexpr double kBand = 0.10;
  /// Throughput bars show at most this many candidates (best predicted first).
  static constexpr int kMaxBars = 12;

  AccuracyChartView(AccuracyModel* model, QWidget* parent = nullptr);

  QWidget* exportTarget() const { return const_cast<AccuracyChartView*>(this); }
  QChartView* scatterView() const { return scatter_; }
  QChartView* barsView() const { return bars_; }
  /// Number of points on the scatter (measured candidates).
  int pointCount() const { return static_cast<int>(pointLabels_.size()); }

 private:
  void rebuild();
  void rebuildScatter();
  void rebuildBars();

  AccuracyModel* model_;
  QLabel* summary_;
  QChartView* scatter_;
  QChartView* bars_;
  QStringList pointLabels_;
};

}  // namespace pipeprof::gui
