// Where the selected candidate's step goes, per device, measured beside predicted.
#include "views/breakdown_chart_view.h"

#include "models/breakdown_model.h"
#include "views/style.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QHorizontalStackedBarSeries>
#include <QTableView>
#include <QValueAxis>

#include <algorithm>

namespace pipeprof::gui {
namespace {

/// Compute categories in their op's timeline colour; the idle ones grey, but for waiting in
/// amber, so imbalance stands out.
QColor categoryColor(StepCategory category) {
  switch (category) {
    case StepCategory::Forward: return phaseColor(Phase::Forward);
    case StepCategory::Recompute: return phaseColor(Phase::Recompute);
    case StepCategory::Loss: return phaseColor(Phase::Loss);
    case StepCategory::Backward: return phaseColor(Phase::Backward);
    case StepCategory::BackwardInput: return phaseColor(Phase::Backward).lighter(125);
    case StepCategory::BackwardWeight: return phaseColor(Phase::Backward).darker(125);
    case StepCategory::Optimizer: return phaseColor(Phase::Optimizer);
    case StepCategory::SharedGradients: return phaseColor(Phase::SkipCopy);
    case StepCategory::Bubble: return QColor(0xd4, 0xd4, 0xd4);
    case StepCategory::Waiting: return QColor(0xed, 0xc9, 0x48);
    case StepCategory::Transfer: return phaseColor(Phase::Copy);
    case StepCategory::Overhead: return QColor(0x8a, 0x8a, 0x8a);
  }
  return QColor(0xa0, 0xa0, 0xa0);
}

}  // namespace

BreakdownChartView::BreakdownChartView(BreakdownModel* model, QWidget* parent)
    : CandidateChartPage(model, parent), model_(model) {
  connect(model_, &QAbstractItemModel::modelReset, this, &BreakdownChartView::rebuild);
  rebuild();
}

void BreakdownChartView::rebuild() {
  auto* chart = new QChart;
  const QString label = model_->candidateLabel();
  const int rows = model_->rowCount();
  if (label.isEmpty()) {
    styleChart(chart, tr("Where the step goes: select a candidate"));
  } else if (rows == 0) {
    styleChart(chart, tr("Where the step goes: %1 has no breakdown (not measured)").arg(label));
  } else {
    styleChart(chart, tr("Where the step goes: %1").arg(label));
  }
  const TimeUnit unit = timeUnitFor(static_cast<double>(std::max<qint64>(1, model_->maxStepNs())));
  auto* series = new QHorizontalStackedBarSeries;
  for (int column = BreakdownModel::FirstCategory; column < BreakdownModel::Step; ++column) {
    const StepCategory category = BreakdownModel::categoryOf(column);
    table()->setColumnHidden(column, !model_->used(category));
    if (!model_->used(category)) continue;
    auto* set = new QBarSet(model_->headerData(column, Qt::Horizontal).toString());
    set->setColor(categoryColor(category));
    set->setBorderColor(categoryColor(category));
    // Bottom row first: the chart draws the first category at the bottom, the table lists it first.
    for (int row = rows - 1; row >= 0; --row) {
      set->append(model_->index(row, column).data(BreakdownModel::NsRole).toDouble() / unit.ns);
    }
    series->append(set);
  }
  series->setBarWidth(0.7);
  chart->addSeries(series);
  QStringList bars;
  for (int row = rows - 1; row >= 0; --row) bars << model_->index(row, BreakdownModel::Bar).data().toString();
  auto* axisY = new QBarCategoryAxis;
  axisY->append(bars);
  auto* axisX = new QValueAxis;
  axisX->setTitleText(tr("Time per step (%1)").arg(unit.name));
  axisX->setRange(0.0, std::max(1.0, static_cast<double>(model_->maxStepNs()) / unit.ns * 1.05));
  axisX->setTickCount(6);
  axisX->applyNiceNumbers();
  chart->addAxis(axisY, Qt::AlignLeft);
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisY);
  series->attachAxis(axisX);
  showChart(chart, rows);
}

}  // namespace pipeprof::gui
