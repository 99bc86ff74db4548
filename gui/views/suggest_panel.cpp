// "Suggest": the simulator's search under the user's constraints, on a worker thread, with results.
#include "views/suggest_panel.h"

#include "models/command_line.h"
#include "models/format.h"
#include "models/suggest_worker.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

namespace pipeprof::gui {
namespace {

constexpr std::size_t kScheduleCount = std::size(kScheduleKinds);
// Indexed by ScheduleKind (scheduleCheck relies on it).
static_assert(static_cast<std::size_t>(kScheduleKinds[kScheduleCount - 1]) == kScheduleCount - 1);

}  // namespace

bool SuggestPanel::virtualStagesChecked() const {
  for (ScheduleKind kind : kScheduleKinds) {
    if (choosesStagesPerDevice(kind) && scheduleCheck(kind)->isChecked()) return true;
  }
  return false;
}

SuggestPanel::SuggestPanel(QWidget* parent)
    : QWidget(parent),
      worker_(new SuggestWorker(this)),
      devices_(new QSpinBox(this)),
      memory_(new QLineEdit(this)),
      chunks_(new QLineEdit(QStringLiteral("1,2,4,8"), this)),
      stagesPerDevice_(new QLineEdit(QStringLiteral("2"), this)),
      suggest_(new QPushButton(tr("Suggest"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      results_(new QTableWidget(0, 5, this)),
      tune_(new QPushButton(tr("Tune"), this)),
      copyRun_(new QPushButton(tr("Copy run command"), this)),
      copySweep_(new QPushButton(tr("Copy sweep command"), this)) {
  QFormLayout* form = constraintsForm();
  QHBoxLayout* run = runRow();
  setUpResults();
  auto* actions = new QHBoxLayout;
  actions->addWidget(tune_);
  actions->addWidget(copyRun_);
  actions->addWidget(copySweep_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addLayout(run);
  layout->addWidget(status_);
  layout->addWidget(results_, 1);
  layout->addLayout(actions);
  status_->setWordWrap(true);
  for (QPushButton* button : {tune_, copyRun_, copySweep_}) button->setEnabled(false);
  setEnabled(false);

  connectWorker();
  connectResults();
}

QFormLayout* SuggestPanel::constraintsForm() {
  devices_->setRange(1, 64);
  devices_->setToolTip(tr("Number of pipeline devices p (interleaved: p × v stages, stage j on device j mod p; "
                          "zbv: 2p stages, device d holding stages d and 2p − 1 − d)"));
  memory_->setPlaceholderText(tr("unbounded"));
  memory_->setToolTip(tr("Memory of each device, e.g. 16GiB or 512MiB; empty keeps the report's cluster"));
  chunks_->setToolTip(tr("Chunk counts to try, comma-separated"));
  auto* modes = new QHBoxLayout;
  for (std::size_t m = 0; m < std::size(kAllCheckpoints); ++m) {
    modes_[m] = new QCheckBox(qs(std::string(checkpointName(kAllCheckpoints[m]))), this);
    modes_[m]->setChecked(true);
    modes->addWidget(modes_[m]);
  }
  auto* schedules = new QHBoxLayout;
  for (std::size_t k = 0; k < kScheduleCount; ++k) {
    schedules_[k] = new QCheckBox(qs(scheduleKindName(kScheduleKinds[k])), this);
    schedules_[k]->setChecked(true);
    schedules->addWidget(schedules_[k]);
  }
  schedules->addWidget(new QLabel(tr("v:"), this));
  schedules->addWidget(stagesPerDevice_);
  stagesPerDevice_->setToolTip(
      tr("Stages per device to try for interleaved and interleaved-zb, comma-separated, each at least 2 (zbv runs 2)"));
  stagesPerDevice_->setMaximumWidth(60);
  const auto enableStagesPerDevice = [this] { stagesPerDevice_->setEnabled(virtualStagesChecked()); };
  for (QCheckBox* check : schedules_) connect(check, &QCheckBox::toggled, this, enableStagesPerDevice);
  auto* form = new QFormLayout;
  form->addRow(tr("Devices:"), devices_);
  form->addRow(tr("Memory per device:"), memory_);
  form->addRow(tr("Schedules:"), schedules);
  form->addRow(tr("Chunks:"), chunks_);
  form->addRow(tr("Checkpoint modes:"), modes);
  return form;
}

QHBoxLayout* SuggestPanel::runRow() {
  cancel_->setEnabled(false);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->setFormat(tr("%p %"));
  auto* run = new QHBoxLayout;
  run->addWidget(suggest_);
  run->addWidget(progress_, 1);
  run->addWidget(cancel_);
  return run;
}

void SuggestPanel::setUpResults() {
  results_->setHorizontalHeaderLabels({tr("Candidate"), tr("Schedule"), tr("Step"), tr("Throughput"), tr("Max peak")});
  results_->verticalHeader()->hide();
  results_->setSelectionBehavior(QAbstractItemView::SelectRows);
  results_->setSelectionMode(QAbstractItemView::SingleSelection);
  results_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  results_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  results_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  results_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
}

void SuggestPanel::connectWorker() {
  connect(suggest_, &QPushButton::clicked, this, &SuggestPanel::startSuggest);
  connect(cancel_, &QPushButton::clicked, worker_, &SuggestWorker::cancel);
  connect(worker_, &SuggestWorker::progress, this, [this](qint64 done, qint64 total) {
    progress_->setValue(total > 0 ? static_cast<int>(done * 100 / total) : 0);
    status_->setText(tr("Simulated %1 of %2 candidates…").arg(done).arg(total));
  });
  auto idle = [this] {
    suggest_->setEnabled(true);
    cancel_->setEnabled(false);
  };
  connect(worker_, &SuggestWorker::finished, this, [this, idle] {
    idle();
    progress_->setValue(100);
    showResults();
  });
  connect(worker_, &SuggestWorker::cancelled, this, [this, idle] {
    idle();
    status_->setText(tr("Cancelled."));
  });
  connect(worker_, &SuggestWorker::failed, this, [this, idle](const QString& message) {
    idle();
    status_->setText(QStringLiteral("<span style='color:#c0392b'>%1</span>").arg(message.toHtmlEscaped()));
  });
}

void SuggestPanel::connectResults() {
  connect(results_, &QTableWidget::itemSelectionChanged, this, [this] {
    const bool any = selectedCandidate().has_value();
    for (QPushButton* button : {tune_, copyRun_, copySweep_}) button->setEnabled(any);
  });
  connect(tune_, &QPushButton::clicked, this, [this] {
    if (const auto candidate = selectedCandidate()) emit tuneRequested(*candidate);
  });
  connect(copyRun_, &QPushButton::clicked, this, [this] {
    if (const auto candidate = selectedCandidate())
      QApplication::clipboard()->setText(runCommandLine(environment_, *candidate));
  });
  connect(copySweep_, &QPushButton::clicked, this, [this] {
    if (const auto candidate = selectedCandidate())
      QApplication::clipboard()->setText(sweepCommandLine(environment_, *candidate));
  });
}

void SuggestPanel::setContext(const std::optional<Profile>& profile, const Cluster& cluster,
                              const ReportEnvironment& environment, std::int64_t batch,
                              const Calibration& calibration) {
  profile_ = profile;
  cluster_ = cluster;
  calibration_ = calibration;
  environment_ = environment;
  batch_ = batch;
  devices_->setValue(static_cast<int>(std::max<std::int64_t>(1, cluster.deviceCount())));
  memory_->clear();
  if (!cluster.devices.empty() && cluster.devices.front().memoryBytes) {
    memory_->setText(bytesText(*cluster.devices.front().memoryBytes).remove(QLatin1Char(' ')));
  }
  setEnabled(profile_.has_value());
  status_->setText(profile_ ? tr("Search the schedules, balances, chunks and modes that fit these constraints.")
                            : tr("This report has no embedded profile: nothing to search."));
}

Cluster SuggestPanel::constrainedCluster() const {
  std::optional<Bytes> memory;
  if (!memory_->text().trimmed().isEmpty()) memory = parseBytes(memory_->text().trimmed().toStdString());
  const auto n = static_cast<std::int64_t>(devices_->value());
  Cluster cluster = cluster_;
  if (cluster.deviceCount() != n) {
    const Link link = cluster.deviceCount() >= 2 ? cluster.link(0, 1) : Link{};
    const std::string name = cluster.devices.empty() ? "device" : cluster.devices.front().name;
    const bool processPerDevice = cluster.processPerDevice;
    cluster = Cluster::uniform(n, memory, link.bandwidthBytesPerS, link.latencyNs, name.substr(0, name.find(':')));
    cluster.processPerDevice = processPerDevice;
  }
  for (DeviceSpec& device : cluster.devices) {
    if (memory) device.memoryBytes = memory;
  }
  return cluster;
}

std::optional<SearchSpace> SuggestPanel::searchSpace(QString* error) const {
  SearchSpace space;
  space.batch = batch_;
  space.devices = devices_->value();
  space.chunks.clear();
  space.modes.clear();
  space.schedules.clear();
  space.stagesPerDevice = {1};
  for (std::size_t k = 0; k < kScheduleCount; ++k) {
    if (schedules_[k]->isChecked()) space.schedules.push_back(kScheduleKinds[k]);
  }
  if (space.schedules.empty()) {
    *error = tr("Tick at least one schedule.");
    return std::nullopt;
  }
  try {
    space.chunks = parseBalance(chunks_->text().toStdString());  // the same "1,2,4" list syntax
    if (virtualStagesChecked()) {
      for (std::int64_t v : parseBalance(stagesPerDevice_->text().toStdString())) {
        if (v < 2) {
          *error = tr("Stages per device of interleaved and interleaved-zb must be at least 2, got %1 in \"%2\".")
                       .arg(v)
                       .arg(stagesPerDevice_->text());
          return std::nullopt;
        }
        space.stagesPerDevice.push_back(v);
      }
    }
    if (!memory_->text().trimmed().isEmpty()) parseBytes(memory_->text().trimmed().toStdString());
  } catch (const std::exception& exception) {
    *error = qs(exception.what()).replace(QStringLiteral("balance"), QStringLiteral("list"));
    return std::nullopt;
  }
  for (std::size_t m = 0; m < std::size(kAllCheckpoints); ++m) {
    if (modes_[m]->isChecked()) space.modes.push_back(kAllCheckpoints[m]);
  }
  if (space.modes.empty()) {
    *error = tr("Tick at least one checkpoint mode.");
    return std::nullopt;
  }
  if (profile_ && space.devices > profile_->layerCount()) {
    *error = tr("%1 devices need at least %1 layers; the model has %2.").arg(space.devices).arg(profile_->layerCount());
    return std::nullopt;
  }
  return space;
}

void SuggestPanel::startSuggest() {
  if (!profile_ || worker_->isRunning()) return;
  QString error;
  const std::optional<SearchSpace> space = searchSpace(&error);
  if (!space) {
    status_->setText(QStringLiteral("<span style='color:#c0392b'>%1</span>").arg(error.toHtmlEscaped()));
    return;
  }
  results_->setRowCount(0);
  progress_->setValue(0);
  status_->setText(tr("Searching…"));
  suggest_->setEnabled(false);
  cancel_->setEnabled(true);
  worker_->start(*profile_, constrainedCluster(), *space, calibration_);
}

void SuggestPanel::showResults() {
  const SearchResult& result = worker_->result();
  const int shown = std::min<int>(kShown, static_cast<int>(result.ranked.size()));
  results_->setRowCount(shown);
  for (int row = 0; row < shown; ++row) {
    const RankedCandidate& ranked = result.ranked[static_cast<std::size_t>(row)];
    const std::vector<Bytes>& peaks = ranked.prediction.peakBytes;
    const Bytes peak = peaks.empty() ? 0 : *std::max_element(peaks.begin(), peaks.end());
    const QStringList cells{
        qs(ranked.candidate.label()), scheduleText(ranked.candidate.schedule, ranked.candidate.stagesPerDevice),
        durationText(ranked.prediction.iterationNs), throughputText(ranked.prediction.samplesPerS), bytesText(peak)};
    for (int column = 0; column < cells.size(); ++column) {
      auto* item = new QTableWidgetItem(cells[column]);
      item->setData(Qt::UserRole, row);
      results_->setItem(row, column, item);
    }
  }
  // Rejected candidates include shapes a schedule cannot run, which are never simulated.
  status_->setText(tr("%1 candidates evaluated: %2 fit, %3 rejected. Best first.")
                       .arg(result.evaluated)
                       .arg(result.ranked.size())
                       .arg(result.rejected.size()));
  if (shown > 0) results_->selectRow(0);
}

std::optional<Candidate> SuggestPanel::selectedCandidate() const {
  const QList<QTableWidgetItem*> selected = results_->selectedItems();
  if (selected.isEmpty()) return std::nullopt;
  const auto row = static_cast<std::size_t>(selected.front()->data(Qt::UserRole).toInt());
  const SearchResult& result = worker_->result();
  return row < result.ranked.size() ? std::optional(result.ranked[row].candidate) : std::nullopt;
}

}  // namespace pipeprof::gui
