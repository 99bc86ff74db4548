// Per-device peak memory of the selected candidate, predicted beside measured, against capacity.
#include "views/memory_chart_view.h"

#include "models/memory_model.h"
#include "views/style.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QHeaderView>
#include <QLegendMarker>
#include <QLineSeries>
#include <QTableView>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace pipeprof::gui {

MemoryChartView::MemoryChartView(MemoryModel* model, QWidget* parent)
    : CandidateChartPage(model, parent), model_(model) {
  table()->horizontalHeader()->setStretchLastSection(true);
  connect(model_, &QAbstractItemModel::modelReset, this, &MemoryChartView::rebuild);
  rebuild();
}

void MemoryChartView::rebuild() {
  auto* chart = new QChart;
  const QString label = model_->candidateLabel();
  styleChart(chart, label.isEmpty() ? tr("Peak memory per device: select a candidate")
                                    : tr("Peak memory per device: %1").arg(label));
  const int n = model_->rowCount();
  const ByteUnit unit = byteUnitFor(static_cast<double>(model_->maxBytes()));
  auto* predicted = new QBarSet(tr("Predicted peak"));
  predicted->setColor(predictedColor());
  predicted->setBorderColor(predictedColor());
  auto* measured = new QBarSet(tr("Measured peak"));
  measured->setColor(measuredColor());
  measured->setBorderColor(measuredColor());
  predicted->setLabelColor(Qt::white);
  measured->setLabelColor(Qt::white);
  QStringList categories;
  for (int j = 0; j < n; ++j) {
    categories << tr("%1 (%2)").arg(model_->index(j, MemoryModel::PipelineDevice).data().toString(),
                                    model_->index(j, MemoryModel::Device).data().toString());
    predicted->append(model_->index(j, MemoryModel::Predicted).data(MemoryModel::BytesRole).toDouble() / unit.divisor);
    measured->append(model_->index(j, MemoryModel::Measured).data(MemoryModel::BytesRole).toDouble() / unit.divisor);
  }
  auto* bars = new QBarSeries;
  bars->append(predicted);
  if (model_->hasMeasurement()) bars->append(measured);
  else delete measured;
  bars->setBarWidth(0.7);
  bars->setLabelsVisible(true);
  bars->setLabelsPosition(QAbstractBarSeries::LabelsInsideEnd);
  bars->setLabelsFormat(QStringLiteral("@value ") + unit.name);
  bars->setLabelsPrecision(3);

  chart->addSeries(bars);

  auto* axisX = new QBarCategoryAxis;
  axisX->append(categories);
  auto* axisY = new QValueAxis;
  axisY->setTitleText(tr("Peak memory (%1)").arg(unit.name));
  const double top = static_cast<double>(model_->maxBytes()) / unit.divisor * 1.15;
  axisY->setRange(0.0, std::max(top, 1.0));
  axisY->setTickCount(6);
  axisY->applyNiceNumbers();
  axisY->setLabelFormat(axisY->max() >= 20 ? QStringLiteral("%.0f") : QStringLiteral("%.1f"));
  chart->addAxis(axisX, Qt::AlignBottom);
  chart->addAxis(axisY, Qt::AlignLeft);
  bars->attachAxis(axisX);
  bars->attachAxis(axisY);

  // Capacity: one short line over each stage's bars, on a hidden axis aligned with the
  // categories (category j spans [j - 0.5, j + 0.5]).
  auto* lineX = new QValueAxis;
  lineX->setRange(-0.5, n - 0.5);
  lineX->setVisible(false);
  chart->addAxis(lineX, Qt::AlignBottom);
  bool legendShown = false;
  for (int j = 0; j < n; ++j) {
    const QVariant capacity = model_->index(j, MemoryModel::Capacity).data(MemoryModel::BytesRole);
    if (!capacity.isValid()) continue;
    auto* line = new QLineSeries;
    line->setName(tr("Device capacity"));
    QPen pen(warningColor());
    pen.setWidthF(2.5);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    const double value = capacity.toDouble() / unit.divisor;
    line->append(j - 0.45, value);
    line->append(j + 0.45, value);
    chart->addSeries(line);
    line->attachAxis(lineX);
    line->attachAxis(axisY);
    if (legendShown) chart->legend()->markers(line).value(0)->setVisible(false);
    legendShown = true;
  }
  showChart(chart, n);
}

}  // namespace pipeprof::gui
