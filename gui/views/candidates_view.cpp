// The candidates table with its filter bar and accuracy summary.
#include "views/candidates_view.h"

#include "models/candidates_filter_model.h"
#include "models/candidates_model.h"
#include "models/command_line.h"
#include "models/format.h"

#include <pipeprof/core/accuracy.h>

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QTableView>
#include <QVBoxLayout>

namespace pipeprof::gui {

CandidatesView::CandidatesView(CandidatesModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      proxy_(new CandidatesFilterModel(this)),
      filter_(new QLineEdit(this)),
      status_(new QComboBox(this)),
      schedule_(new QComboBox(this)),
      summary_(new QLabel(this)),
      table_(new QTableView(this)),
      details_(new QLabel(this)) {
  proxy_->setSourceModel(model_);

  filter_->setPlaceholderText(tr("Filter by balance, chunks, mode, schedule or status, e.g. \"x8\" or \"[2,6]\""));
  filter_->setClearButtonEnabled(true);
  status_->addItem(tr("All statuses"), -1);
  status_->addItem(tr("Measured"), static_cast<int>(CandidateStatus::Measured));
  status_->addItem(tr("Predicted only"), static_cast<int>(CandidateStatus::Predicted));
  status_->addItem(tr("Failed"), static_cast<int>(CandidateStatus::Failed));
  schedule_->addItem(tr("All schedules"), -1);
  for (ScheduleKind kind : kScheduleKinds) {
    schedule_->addItem(qs(scheduleKindName(kind)), static_cast<int>(kind));
  }
  schedule_->setToolTip(
      tr("Keep one schedule family (interleaved, interleaved-zb: every number of stages per device; zbv runs 2)"));
  summary_->setTextFormat(Qt::RichText);
  summary_->setWordWrap(true);

  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(CandidatesModel::Rank, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Filter:"), this));
  bar->addWidget(filter_, 1);
  bar->addWidget(status_);
  bar->addWidget(schedule_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  details_->setTextFormat(Qt::RichText);
  details_->setWordWrap(true);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setMinimumHeight(110);
  details_->setFrameShape(QFrame::StyledPanel);
  details_->setMargin(6);
  layout->addWidget(details_);

  connect(filter_, &QLineEdit::textChanged, proxy_, &CandidatesFilterModel::setFilterText);
  connect(status_, &QComboBox::currentIndexChanged, this, [this](int row) {
    const int status = status_->itemData(row).toInt();
    proxy_->setStatusFilter(status < 0 ? std::nullopt : std::optional(static_cast<CandidateStatus>(status)));
  });
  connect(schedule_, &QComboBox::currentIndexChanged, this, [this](int row) {
    const int kind = schedule_->itemData(row).toInt();
    proxy_->setScheduleFilter(kind < 0 ? std::nullopt : std::optional(static_cast<ScheduleKind>(kind)));
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    showDetails(current.isValid() ? std::optional(static_cast<std::size_t>(
                                        current.data(CandidatesModel::CandidateIndexRole).toULongLong()))
                                  : std::nullopt);
    if (settingSelection_ || !current.isValid()) return;
    emit candidateSelected(static_cast<std::size_t>(current.data(CandidatesModel::CandidateIndexRole).toULongLong()));
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    emit tuneRequested(static_cast<std::size_t>(index.data(CandidatesModel::CandidateIndexRole).toULongLong()));
  });
  connect(table_, &QTableView::customContextMenuRequested, this, &CandidatesView::showContextMenu);
  connect(model_, &QAbstractItemModel::modelReset, this, &CandidatesView::refreshSummary);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] { showDetails(std::nullopt); });
  refreshSummary();
  showDetails(std::nullopt);
}

void CandidatesView::setCurrentCandidate(std::optional<std::size_t> candidate) {
  settingSelection_ = true;
  const QModelIndex source = candidate ? model_->indexOfCandidate(*candidate) : QModelIndex();
  const QModelIndex index = proxy_->mapFromSource(source);
  if (index.isValid()) {
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(index);
  } else {
    table_->selectionModel()->clearSelection();
  }
  settingSelection_ = false;
}

QWidget* CandidatesView::exportTarget() const { return table_; }

void CandidatesView::refreshSummary() {
  const Report* report = model_->report();
  if (report == nullptr) {
    summary_->setText(tr("Open a report written by <tt>pipeprof sweep</tt>: File &gt; Open, or drop it here."));
    return;
  }
  const AccuracySummary accuracy = summarizeAccuracy(*report);
  QStringList parts;
  parts << tr("<b>%1</b> candidates, <b>%2</b> measured").arg(report->candidates.size()).arg(accuracy.measuredCount);
  if (const std::optional<std::size_t> best = model_->suggested()) {
    parts << tr("suggested: <b>%1</b> (%2)")
                 .arg(qs(report->candidates[*best].candidate.label()).toHtmlEscaped(),
                      report->suggestion.bestMeasured ? tr("best measured") : tr("best predicted"));
  }
  if (accuracy.stepTimeMapePct) parts << tr("step-time MAPE %1 %").arg(*accuracy.stepTimeMapePct, 0, 'f', 1);
  if (accuracy.spearman) parts << tr("rank correlation %1").arg(*accuracy.spearman, 0, 'f', 2);
  if (!report->complete) parts << tr("<span style='color:#c0392b'>sweep still running or interrupted</span>");
  summary_->setText(parts.join(QStringLiteral(" · ")));
}

QString CandidatesView::detailsText() const { return details_->text(); }

void CandidatesView::showDetails(std::optional<std::size_t> candidate) {
  const Report* report = model_->report();
  if (report == nullptr || !candidate || *candidate >= report->candidates.size()) {
    details_->setText(tr("<span style='color:#777'>Select a candidate to see its details; double-click to tune it, "
                         "right-click to copy its command line.</span>"));
    return;
  }
  const CandidateResult& result = report->candidates[*candidate];
  const Prediction& p = result.prediction;
  QStringList lines;
  lines << tr("<b>%1</b> · %2 schedule · batch %3 · %4")
               .arg(qs(result.candidate.label()).toHtmlEscaped())
               .arg(scheduleText(result.candidate.schedule, result.candidate.stagesPerDevice))
               .arg(result.candidate.batch)
               .arg(qs(candidateStatusName(result.status)));
  QStringList busy;
  for (std::size_t j = 0; j < p.busyNs.size(); ++j) {
    busy << tr("device %1 busy %2, peak %3%4")
                .arg(j)
                .arg(durationText(p.busyNs[j]))
                .arg(j < p.peakBytes.size() ? bytesText(p.peakBytes[j]) : QString())
                .arg(j < p.peakOp.size() && !p.peakOp[j].empty() ? tr(" at %1").arg(qs(p.peakOp[j]).toHtmlEscaped())
                                                                 : QString());
  }
  lines << tr("Predicted: step %1, %2, bubble %3 %, %4; %5")
               .arg(durationText(p.iterationNs), throughputText(p.samplesPerS))
               .arg(p.bubbleFraction * 100.0, 0, 'f', 1)
               .arg(p.fits ? tr("fits") : tr("<span style='color:#c0392b'>does not fit</span>"),
                    busy.join(QStringLiteral("; ")));
  if (const std::optional<Measurement>& m = result.measurement) {
    const bool partly = result.status != CandidateStatus::Measured;
    lines << tr("%1: median step %2 over %3 steps in %4 round(s) (min %5, max %6), each after %7 warm-up, %8")
                 .arg(partly ? tr("Measured so far (%1)").arg(qs(result.notMeasuredReason).toHtmlEscaped())
                             : tr("Measured"))
                 .arg(durationText(m->stepNsMedian))
                 .arg(m->stepNs.size())
                 .arg(m->rounds)
                 .arg(durationText(m->stepNsMin), durationText(m->stepNsMax))
                 .arg(m->warmupSteps)
                 .arg(throughputText(m->samplesPerS));
  } else if (result.status == CandidateStatus::Failed) {
    lines << tr("<span style='color:#c0392b'>Measuring failed: %1</span>").arg(qs(result.error).toHtmlEscaped());
  } else if (!result.notMeasuredReason.empty()) {
    lines << tr("Not measured: %1").arg(qs(result.notMeasuredReason).toHtmlEscaped());
  }
  details_->setText(lines.join(QStringLiteral("<br>")));
}

void CandidatesView::showContextMenu(const QPoint& position) {
  const QModelIndex index = table_->indexAt(position);
  const Report* report = model_->report();
  if (!index.isValid() || report == nullptr) return;
  const auto candidate = static_cast<std::size_t>(index.data(CandidatesModel::CandidateIndexRole).toULongLong());
  const CandidateResult& result = report->candidates[candidate];
  QMenu menu(this);
  menu.addAction(tr("Tune this candidate"), this, [this, candidate] { emit tuneRequested(candidate); });
  menu.addSeparator();
  menu.addAction(tr("Copy `pipeprof run` command"), this, [report, &result] {
    QApplication::clipboard()->setText(runCommandLine(report->environment, result.candidate));
  });
  menu.addAction(tr("Copy `pipeprof sweep` command"), this, [report, &result] {
    QApplication::clipboard()->setText(sweepCommandLine(report->environment, result.candidate));
  });
  menu.exec(table_->viewport()->mapToGlobal(position));
}

}  // namespace pipeprof::gui
