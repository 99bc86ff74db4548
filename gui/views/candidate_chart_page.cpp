// A candidate picker, a chart and a table: the layout the per-candidate tabs share.
#include "views/candidate_chart_page.h"

#include "views/candidate_picker.h"

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace pipeprof::gui {

CandidateChartPage::CandidateChartPage(QAbstractItemModel* model, QWidget* parent)
    : QWidget(parent), picker_(new CandidatePicker(this)), chart_(new QChartView(this)), table_(new QTableView(this)) {
  chart_->setRenderHint(QPainter::Antialiasing);
  table_->setModel(model);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Candidate:"), this));
  bar->addWidget(picker_);
  bar->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  layout->addWidget(table_);
}

QWidget* CandidateChartPage::exportTarget() const { return chart_; }

void CandidateChartPage::showChart(QChart* chart, int rows) {
  table_->setFixedHeight(table_->horizontalHeader()->height() + 2 * table_->frameWidth() +
                         std::max(1, rows) * table_->verticalHeader()->defaultSectionSize() + 2);
  QChart* old = chart_->chart();
  chart_->setChart(chart);
  delete old;
}

}  // namespace pipeprof::gui
