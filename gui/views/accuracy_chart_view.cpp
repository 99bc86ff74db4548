// Predicted against measured: a step-time scatter with the y = x line and error band, and throughput bars.
#include "views/accuracy_chart_view.h"

#include "models/accuracy_model.h"
#include "models/format.h"
#include "views/style.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QHBoxLayout>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace pipeprof::gui {
namespace {

// A "nice" axis maximum above value: 1, 2, 2.5 or 5 times a power of ten.
double niceCeiling(double value) {
  if (value <= 0) return 1.0;
  const double power = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (step * power >= value) return step * power;
  }
  return 10.0 * power;
}

QValueAxis* valueAxis(const QString& title, double max) {
  auto* axis = new QValueAxis;
  axis->setTitleText(title);
  axis->setRange(0.0, niceCeiling(max));
  axis->setTickCount(6);
  axis->setLabelFormat(max >= 100  ? QStringLiteral("%.0f")
                       : max >= 10 ? QStringLiteral("%.1f")
                                   : QStringLiteral("%.2f"));
  return axis;
}

/// The step times' range over the points (max 0 when there is none).
struct StepRange {
  double minMs = std::numeric_limits<double>::max();
  double maxMs = 0.0;
};

/// A point per measured candidate at (predicted, measured) step time, the suggested one on
/// `suggested`, each with its label.
StepRange addMeasuredPoints(const AccuracyModel& model, QScatterSeries* points, QStringList& pointLabels,
                            QScatterSeries* suggested, QStringList& suggestedLabels) {
  StepRange range;
  for (int row = 0; row < model.rowCount(); ++row) {
    const QVariant measured = model.index(row, AccuracyModel::MeasuredStepMs).data();
    if (!measured.isValid()) continue;
    const double predictedMs = model.index(row, AccuracyModel::PredictedStepMs).data().toDouble();
    const double measuredMs = measured.toDouble();
    range.maxMs = std::max({range.maxMs, predictedMs, measuredMs});
    range.minMs = std::min({range.minMs, predictedMs, measuredMs});
    const QVariant error = model.index(row, AccuracyModel::StepErrorPct).data();
    const QString label = AccuracyChartView::tr("%1\npredicted %2 ms, measured %3 ms (%4)")
                              .arg(model.index(row, AccuracyModel::Label).data().toString())
                              .arg(predictedMs, 0, 'f', 2)
                              .arg(measuredMs, 0, 'f', 2)
                              .arg(error.isValid() ? errorText(error.toDouble()) : QString());
    if (model.index(row, 0).data(AccuracyModel::SuggestedRole).toBool()) {
      suggested->append(predictedMs, measuredMs);
      suggestedLabels << label;
    } else {
      points->append(predictedMs, measuredMs);
      pointLabels << label;
    }
  }
  return range;
}

/// Both axes share one range around the points, so y = x is the diagonal.
std::pair<QValueAxis*, QValueAxis*> stepAxes(const StepRange& range) {
  auto* axisX = valueAxis(AccuracyChartView::tr("Predicted step time (ms)"), 1.0);
  if (range.maxMs > 0.0) {
    axisX->setRange(range.minMs * 0.85, range.maxMs * 1.1);
    axisX->applyNiceNumbers();
  }
  const double axisMin = axisX->min();
  const double axisMax = axisX->max();
  auto* axisY = valueAxis(AccuracyChartView::tr("Measured step time (ms)"), 1.0);
  axisY->setRange(axisMin, axisMax);
  axisY->setTickCount(axisX->tickCount());
  for (QValueAxis* axis : {axisX, axisY}) {
    axis->setLabelFormat(axisMax - axisMin >= 20 ? QStringLiteral("%.0f") : QStringLiteral("%.1f"));
  }
  return {axisX, axisY};
}

/// The ±kBand band around y = x over [axisMin, axisMax].
QAreaSeries* errorBand(double axisMin, double axisMax) {
  // QAreaSeries does not own its boundary lines: parent them to it so they go with the chart.
  auto* band = new QAreaSeries;
  auto* upper = new QLineSeries(band);
  auto* lower = new QLineSeries(band);
  for (double x : {axisMin, axisMax}) {
    upper->append(x, x * (1.0 + AccuracyChartView::kBand));
    lower->append(x, x * (1.0 - AccuracyChartView::kBand));
  }
  band->setUpperSeries(upper);
  band->setLowerSeries(lower);
  band->setName(AccuracyChartView::tr("±%1 % error band").arg(AccuracyChartView::kBand * 100.0, 0, 'f', 0));
  QColor bandFill = predictedColor();
  bandFill.setAlpha(55);
  band->setBrush(bandFill);
  band->setPen(Qt::NoPen);
  return band;
}

/// y = x over [axisMin, axisMax], dashed.
QLineSeries* perfectPrediction(double axisMin, double axisMax) {
  auto* diagonal = new QLineSeries;
  for (double x : {axisMin, axisMax}) diagonal->append(x, x);
  diagonal->setName(AccuracyChartView::tr("y = x (perfect prediction)"));
  QPen diagonalPen(QColor(0x55, 0x55, 0x55));
  diagonalPen.setStyle(Qt::DashLine);
  diagonalPen.setWidthF(1.5);
  diagonal->setPen(diagonalPen);
  return diagonal;
}

/// A hovered point of `series` shows its label (labels in the series' order).
auto hoverTip(const QStringList& labels, QScatterSeries* series) {
  return [labels, series](const QPointF& point, bool state) {
    if (!state) {
      QToolTip::hideText();
      return;
    }
    const QList<QPointF> all = series->points();
    const auto found = std::find(all.begin(), all.end(), point);
    if (found != all.end()) QToolTip::showText(QCursor::pos(), labels.value(static_cast<int>(found - all.begin())));
  };
}

}  // namespace

AccuracyChartView::AccuracyChartView(AccuracyModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      summary_(new QLabel(this)),
      scatter_(new QChartView(this)),
      bars_(new QChartView(this)) {
  scatter_->setRenderHint(QPainter::Antialiasing);
  bars_->setRenderHint(QPainter::Antialiasing);
  summary_->setTextFormat(Qt::RichText);
  summary_->setWordWrap(true);
  auto* charts = new QHBoxLayout;
  charts->addWidget(scatter_, 1);
  charts->addWidget(bars_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addLayout(charts, 1);
  setAutoFillBackground(true);
  connect(model_, &QAbstractItemModel::modelReset, this, &AccuracyChartView::rebuild);
  rebuild();
}

void AccuracyChartView::rebuild() {
  summary_->setText(model_->summaryParts().join(QStringLiteral(" · ")));
  rebuildScatter();
  rebuildBars();
}

void AccuracyChartView::rebuildScatter() {
  auto* chart = new QChart;
  styleChart(chart, tr("Step time: measured against predicted"));
  pointLabels_.clear();
  QStringList suggestedLabels;
  auto* points = new QScatterSeries;
  points->setName(tr("Measured candidate"));
  points->setMarkerSize(11);
  points->setColor(predictedColor());
  points->setBorderColor(Qt::white);
  auto* suggested = new QScatterSeries;
  suggested->setName(tr("Suggested"));
  suggested->setMarkerShape(QScatterSeries::MarkerShapeStar);
  suggested->setMarkerSize(20);
  suggested->setColor(measuredColor());
  suggested->setBorderColor(measuredColor().darker(130));
  const StepRange range = addMeasuredPoints(*model_, points, pointLabels_, suggested, suggestedLabels);
  const auto [axisX, axisY] = stepAxes(range);
  chart->addSeries(errorBand(axisX->min(), axisX->max()));
  chart->addSeries(perfectPrediction(axisX->min(), axisX->max()));
  chart->addSeries(points);
  chart->addSeries(suggested);
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  for (QAbstractSeries* series : chart->series()) {
    series->attachAxis(axisX);
    series->attachAxis(axisY);
  }
  if (suggestedLabels.isEmpty()) chart->legend()->markers(suggested).value(0)->setVisible(false);
  if (pointLabels_.isEmpty() && suggestedLabels.isEmpty()) chart->setTitle(tr("Step time: no measured candidates yet"));
  connect(points, &QScatterSeries::hovered, this, hoverTip(pointLabels_, points));
  connect(suggested, &QScatterSeries::hovered, this, hoverTip(suggestedLabels, suggested));
  pointLabels_ << suggestedLabels;
  QChart* old = scatter_->chart();
  scatter_->setChart(chart);
  delete old;
}

void AccuracyChartView::rebuildBars() {
  auto* chart = new QChart;
  styleChart(chart, tr("Throughput per candidate (best predicted on top)"));
  auto* predicted = new QBarSet(tr("Predicted"));
  predicted->setColor(predictedColor());
  predicted->setBorderColor(predictedColor());
  auto* measured = new QBarSet(tr("Measured"));
  measured->setColor(measuredColor());
  measured->setBorderColor(measuredColor());
  QStringList categories;
  double maxValue = 0.0;
  const int rows = std::min(model_->rowCount(), kMaxBars);
  // Horizontal bars stack categories bottom-up: add the best last so it is drawn on top.
  for (int row = rows - 1; row >= 0; --row) {
    QString label = model_->index(row, AccuracyModel::Label).data().toString();
    if (model_->index(row, 0).data(AccuracyModel::SuggestedRole).toBool()) label += QStringLiteral(" ★");
    categories << label;
    const double p = model_->index(row, AccuracyModel::PredictedThroughput).data().toDouble();
    const double m = model_->index(row, AccuracyModel::MeasuredThroughput).data().toDouble();
    predicted->append(p);
    measured->append(m);
    maxValue = std::max({maxValue, p, m});
  }
  auto* series = new QHorizontalBarSeries;
  series->append(predicted);
  series->append(measured);
  series->setBarWidth(0.8);
  chart->addSeries(series);
  auto* axisY = new QBarCategoryAxis;
  axisY->append(categories);
  auto* axisX = valueAxis(tr("Throughput (samples/s)"), std::max(maxValue * 1.05, 1.0));
  chart->addAxis(axisY, Qt::AlignLeft);
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisY);
  series->attachAxis(axisX);
  QChart* old = bars_->chart();
  bars_->setChart(chart);
  delete old;
}

}  // namespace pipeprof::gui
