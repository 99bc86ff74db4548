// Tuning: edit schedule, stages per device, balance, chunks and mode (or drag boundaries) and see the prediction at
// once.
#include "views/tuning_panel.h"

#include "models/format.h"
#include "models/timeline_model.h"
#include "models/tuning_model.h"
#include "views/balance_editor.h"
#include "views/candidate_picker.h"
#include "views/suggest_panel.h"
#include "views/timeline_canvas.h"

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/custom_order.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>

namespace pipeprof::gui {
namespace {

QString versus(double now, double base, bool higherIsBetter) {
  if (base <= 0) return {};
  const double pct = (now - base) / base * 100.0;
  if (std::abs(pct) < 0.05) return QStringLiteral(" <span style='color:#777'>(same)</span>");
  const bool better = higherIsBetter ? pct > 0 : pct < 0;
  return QStringLiteral(" <span style='color:%1'>(%2)</span>").arg(better ? "#2e7d32" : "#c0392b", errorText(pct));
}

}  // namespace

TuningPanel::TuningPanel(QWidget* parent)
    : QWidget(parent),
      model_(new TuningModel(this)),
      timeline_(new TimelineModel(this)),
      picker_(new CandidatePicker(this)),
      balance_(new QLineEdit(this)),
      chunks_(new QSpinBox(this)),
      mode_(new QComboBox(this)),
      schedule_(new QComboBox(this)),
      scheduleFile_(new QPushButton(tr("Order file…"), this)),
      stagesPerDevice_(new QSpinBox(this)),
      optimizer_(new QComboBox(this)),
      configuration_(new QGroupBox(tr("Configuration"), this)),
      error_(new QLabel(this)),
      prediction_(new QLabel(this)),
      editor_(new BalanceEditor(model_, this)),
      canvas_(new TimelineCanvas(timeline_, this)),
      suggest_(new SuggestPanel(this)) {
  setUpControls();
  layOut();
  connectControls();
  connectModel();
  showPrediction();
}

void TuningPanel::setUpControls() {
  balance_->setToolTip(
      tr("Layers per stage, e.g. 3,5 — p × v stages, stage j on device j mod p (zbv: d and 2p − 1 − d); the prediction "
         "updates as you type"));
  for (ScheduleKind kind : kScheduleKinds) schedule_->addItem(qs(scheduleKindName(kind)), static_cast<int>(kind));
  schedule_->setToolTip(tr("gpipe: all forwards, then all backwards; 1f1b: one forward one backward; interleaved: "
                           "1F1B over v stages per device; zb1p, interleaved-zb, zbv: zero bubble (each backward "
                           "split into input and weight gradients)"));
  stagesPerDevice_->setRange(2, 64);
  stagesPerDevice_->setToolTip(
      tr("Stages per device v (interleaved and interleaved-zb; zbv runs 2): the balance then has p × v stages"));
  stagesPerDevice_->setEnabled(false);
  chunks_->setRange(1, 4096);
  chunks_->setToolTip(tr("Micro-batches per mini-batch"));
  for (Checkpoint mode : kAllCheckpoints) mode_->addItem(qs(std::string(checkpointName(mode))), static_cast<int>(mode));
  for (OptimizerKind kind : kOptimizerKinds)
    optimizer_->addItem(qs(std::string(optimizerName(kind))), static_cast<int>(kind));
  optimizer_->setToolTip(tr("The optimizer of the training step predicted: its state on every device and its step "
                            "after the pipeline. The kinds the profile measured the steps of can be picked "
                            "(`pipeprof profile` measures all four)"));
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #c0392b"));
  prediction_->setTextFormat(Qt::RichText);
  prediction_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  prediction_->setWordWrap(true);
}

void TuningPanel::layOut() {
  auto* configuration = configuration_;
  auto* form = new QFormLayout(configuration);
  form->addRow(tr("Start from:"), picker_);
  auto* schedule = new QHBoxLayout;
  schedule->addWidget(schedule_, 1);
  schedule->addWidget(scheduleFile_);
  schedule->addWidget(new QLabel(tr("stages per device:"), this));
  schedule->addWidget(stagesPerDevice_);
  form->addRow(tr("Schedule:"), schedule);
  form->addRow(tr("Balance:"), balance_);
  form->addRow(tr("Chunks:"), chunks_);
  auto* step = new QHBoxLayout;  // the checkpoint mode and the optimizer share a row
  step->addWidget(mode_, 1);
  step->addWidget(new QLabel(tr("optimizer:"), this));
  step->addWidget(optimizer_);
  form->addRow(tr("Checkpoint:"), step);
  form->addRow(error_);
  auto* predicted = new QGroupBox(tr("Prediction"), this);
  (new QVBoxLayout(predicted))->addWidget(prediction_);
  auto* suggest = new QGroupBox(tr("Suggest"), this);
  (new QVBoxLayout(suggest))->addWidget(suggest_);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(configuration);
  leftLayout->addWidget(predicted);
  leftLayout->addWidget(suggest, 1);
  left->setMinimumWidth(420);
  left->setMaximumWidth(520);

  auto* layers = new QGroupBox(tr("Layers and stages — drag a boundary to move layers between stages"), this);
  (new QVBoxLayout(layers))->addWidget(editor_);
  auto* timeline = new QGroupBox(tr("Predicted timeline of the edited configuration"), this);
  (new QVBoxLayout(timeline))->addWidget(canvas_);
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(layers);
  right->addWidget(timeline);
  right->setStretchFactor(0, 1);
  right->setStretchFactor(1, 1);
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(left);
  layout->addWidget(right, 1);
}

void TuningPanel::connectControls() {
  connect(picker_, &CandidatePicker::candidatePicked, this, [this](std::size_t c) { loadCandidate(c); });
  connect(balance_, &QLineEdit::textEdited, this, [this](const QString& text) {
    try {
      model_->setBalance(parseBalance(text.toStdString()));
    } catch (const std::exception& exception) {
      error_->setText(qs(exception.what()));
    }
  });
  connect(chunks_, &QSpinBox::valueChanged, this, [this](int chunks) {
    if (chunks != model_->candidate().chunks) model_->setChunks(chunks);
  });
  connect(mode_, &QComboBox::currentIndexChanged, this, [this](int row) {
    const auto mode = static_cast<Checkpoint>(mode_->itemData(row).toInt());
    if (mode != model_->candidate().checkpoint) model_->setCheckpoint(mode);
  });
  scheduleFile_->setToolTip(tr("Run an order of your own: a schedule CSV as torch.distributed.pipelining writes it "
                               "(one row per rank, e.g. 0F0,0F1,0B0,0B1; `pipeprof schedule export` writes one). "
                               "Its rows are the devices; it fixes the stages per device and the chunks"));
  connect(scheduleFile_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Schedule order"), QString(), tr("Schedule CSV (*.csv);;All files (*)"));
    if (!path.isEmpty()) model_->setScheduleFile(path);
  });
  connect(schedule_, &QComboBox::currentIndexChanged, this, [this](int row) {
    const auto kind = static_cast<ScheduleKind>(schedule_->itemData(row).toInt());
    stagesPerDevice_->setEnabled(choosesStagesPerDevice(kind));
    const Candidate& edited = model_->edited();
    if (kind == ScheduleKind::Custom) {
      if (!edited.order) scheduleFile_->click();  // back to custom: which order?
      return;
    }
    if (kind != edited.schedule) model_->setSchedule(kind, stagesPerDevice_->value());
  });
  connect(stagesPerDevice_, &QSpinBox::valueChanged, this, [this](int v) {
    const Candidate& edited = model_->edited();
    if (choosesStagesPerDevice(edited.schedule) && v != edited.stagesPerDevice) {
      model_->setSchedule(edited.schedule, v);
    }
  });
  connect(optimizer_, &QComboBox::currentIndexChanged, this,
          [this](int row) { setOptimizer(static_cast<OptimizerKind>(optimizer_->itemData(row).toInt())); });
}

void TuningPanel::connectModel() {
  connect(model_, &TuningModel::invalidEdit, this, [this](const QString& message) {
    error_->setText(message);
    syncControls();  // e.g. the balance of p * v stages that a schedule edit made
  });
  connect(model_, &TuningModel::predictionChanged, this, [this] {
    error_->clear();
    syncControls();
    showPrediction();
    if (model_->hasInputs()) timeline_->setTraces(model_->trace(), {}, std::nullopt, {});
    else timeline_->clear();
  });
  connect(suggest_, &SuggestPanel::tuneRequested, this,
          [this](const Candidate& candidate) { loadCandidate(candidate, tr("suggestion")); });
}

void TuningPanel::setReport(std::shared_ptr<const Report> report, bool reloaded) {
  const bool sameProfile = reloaded && report_ && report &&
                           report_->profile.has_value() == report->profile.has_value() &&
                           report_->environment.model == report->environment.model &&
                           report_->candidates.size() <= report->candidates.size();
  report_ = std::move(report);
  std::optional<std::size_t> suggested;
  if (report_)
    suggested = report_->suggestion.bestMeasured ? report_->suggestion.bestMeasured : report_->suggestion.bestPredicted;
  picker_->setReport(report_.get(), suggested);
  if (sameProfile) return;  // a live reload of the same sweep: keep the user's edits
  calibration_ = {};
  calibrationError_.clear();
  profile_ = report_ ? report_->profile : std::nullopt;
  {
    // The optimizers the profile can stand for, its own picked.
    const QSignalBlocker blocker(optimizer_);
    auto* items = qobject_cast<QStandardItemModel*>(optimizer_->model());
    for (int row = 0; row < optimizer_->count(); ++row) {
      const auto kind = static_cast<OptimizerKind>(optimizer_->itemData(row).toInt());
      if (items) items->item(row)->setEnabled(profile_ && profile_->predictsOptimizer(kind));
    }
    if (profile_)
      optimizer_->setCurrentIndex(optimizer_->findData(static_cast<int>(profile_->environment.optimizer.kind)));
    optimizer_->setEnabled(profile_.has_value());
  }
  showTrainingStep();
  try {
    if (report_) calibration_ = reportCalibration(*report_, "the report");
  } catch (const std::exception& exception) {
    calibrationError_ = tr("%1; predicting from the raw profile").arg(qs(exception.what()));
  }
  suggest_->setContext(profile_, suggestCluster(), report_ ? report_->environment : ReportEnvironment{},
                       report_ ? report_->environment.batch : 1, calibration_);
  model_->clear();
  basePrediction_.reset();
  error_->setText(calibrationError_);
}

void TuningPanel::loadCandidate(std::size_t candidate) {
  if (!report_ || candidate >= report_->candidates.size()) return;
  picker_->setCurrentCandidate(candidate);
  loadCandidate(report_->candidates[candidate].candidate, qs(report_->candidates[candidate].candidate.label()));
  const CandidateResult& result = report_->candidates[candidate];
  reportIterationNs_ = result.prediction.iterationNs;
  if (result.predictionBeforeDrift) reportBeforeDriftNs_ = result.predictionBeforeDrift->iterationNs;
  showPrediction();
}

void TuningPanel::loadCandidate(const Candidate& candidate, const QString& origin) {
  if (!report_ || !profile_) {
    error_->setText(tr("This report has no embedded profile, so there is nothing to simulate."));
    return;
  }
  try {
    basePrediction_.reset();
    reportIterationNs_.reset();
    reportBeforeDriftNs_.reset();
    baseLabel_ = origin;
    model_->setInputs(*profile_, clusterFor(candidate), candidate, calibration_);
    basePrediction_ = model_->prediction();
    showPrediction();
  } catch (const std::exception& exception) {
    error_->setText(qs(exception.what()));
  }
}

Cluster TuningPanel::clusterFor(const Candidate& candidate) const {
  // Without a cluster in the report: one unbounded device per stage, instant links.
  return report_ && report_->cluster
             ? *report_->cluster
             : Cluster::uniform(static_cast<std::int64_t>(candidate.balance.size()), std::nullopt, 0.0, 0);
}

Cluster TuningPanel::suggestCluster() const {
  if (!report_) return {};
  if (report_->cluster) return *report_->cluster;
  return Cluster::uniform(std::max<std::int64_t>(1, static_cast<std::int64_t>(report_->environment.devices.size())),
                          std::nullopt, 0.0, 0, "device");
}

void TuningPanel::setOptimizer(OptimizerKind kind) {
  if (!report_ || !report_->profile) return;
  try {
    // The hyperparameters the profile measured every kind's step with.
    profile_ = withOptimizer(*report_->profile, report_->profile->environment.optimizer.asKind(kind));
  } catch (const std::exception& exception) {
    error_->setText(qs(exception.what()));
    return;
  }
  showTrainingStep();
  suggest_->setContext(profile_, suggestCluster(), report_->environment, report_->environment.batch, calibration_);
  if (!model_->hasInputs()) return;
  // The edited candidate again, for this optimizer; its changes stay against the same start.
  try {
    model_->setInputs(*profile_, model_->cluster(), model_->candidate(), calibration_);
  } catch (const std::exception& exception) {
    error_->setText(qs(exception.what()));
  }
}

bool TuningPanel::tuningTheReportsStep() const {
  return report_ && report_->profile && profile_ &&
         profile_->environment.optimizer.kind == report_->profile->environment.optimizer.kind;
}

void TuningPanel::showTrainingStep() {
  if (!report_) {
    configuration_->setTitle(tr("Configuration"));
    configuration_->setToolTip(QString());
    return;
  }
  // The training step predicted: the profile's precision and the optimizer picked (at first
  // the profile's; a report without a profile names the one it measured).
  const OptimizerSpec& optimizer = profile_ ? profile_->environment.optimizer : report_->environment.optimizer;
  const Precision precision = profile_ ? profile_->environment.precision : report_->environment.precision;
  configuration_->setTitle(tr("Configuration (%1)").arg(trainingStepName(optimizer.kind, precision)));
  configuration_->setToolTip(tr("Predicted for the training step %1. Layer times and saved bytes are the "
                                "profile's precision's; to tune another precision, sweep again with --precision.")
                                 .arg(gui::trainingStepText(optimizer, precision)));
}

QString TuningPanel::errorText() const { return error_->text(); }

QString TuningPanel::predictionText() const { return prediction_->text(); }

QString TuningPanel::trainingStepText() const {
  const QString title = configuration_->title();
  const qsizetype open = title.indexOf(QLatin1Char('('));
  return open < 0 ? QString() : title.mid(open + 1, title.size() - open - 2);
}

// The controls show the last edited configuration (valid or not), so an invalid schedule edit
// stays on screen with its reason until the user fixes it.
void TuningPanel::syncControls() {
  const Candidate& candidate = model_->edited();
  if (!balance_->hasFocus()) balance_->setText(qs(formatBalance(candidate.balance)));
  const QSignalBlocker chunksBlocker(chunks_);
  chunks_->setMaximum(static_cast<int>(std::max<std::int64_t>(1, candidate.batch)));
  chunks_->setValue(static_cast<int>(candidate.chunks));
  const QSignalBlocker modeBlocker(mode_);
  mode_->setCurrentIndex(mode_->findData(static_cast<int>(candidate.checkpoint)));
  const QSignalBlocker scheduleBlocker(schedule_);
  const int custom = schedule_->findData(static_cast<int>(ScheduleKind::Custom));
  if (candidate.order && custom < 0) {  // listed once a file is loaded: picking another family drops it
    schedule_->addItem(qs(scheduleKindName(ScheduleKind::Custom)), static_cast<int>(ScheduleKind::Custom));
  }
  schedule_->setCurrentIndex(schedule_->findData(static_cast<int>(candidate.schedule)));
  scheduleFile_->setText(candidate.order ? qs(std::filesystem::path(candidate.order->source).filename().string())
                                         : tr("Order file…"));
  const QSignalBlocker stagesBlocker(stagesPerDevice_);
  stagesPerDevice_->setEnabled(choosesStagesPerDevice(candidate.schedule));
  if (hasVirtualStages(candidate.schedule)) stagesPerDevice_->setValue(static_cast<int>(candidate.stagesPerDevice));
}

void TuningPanel::showPrediction() {
  if (!model_->hasInputs()) {
    prediction_->setText(tr("Pick a candidate to start from."));
    return;
  }
  const Prediction& p = model_->prediction();
  const Prediction* base = basePrediction_ ? &*basePrediction_ : nullptr;
  QString text = QStringLiteral("<table cellspacing='2'>");
  auto row = [&text](const QString& name, const QString& value) {
    text += QStringLiteral("<tr><td>%1</td><td>&nbsp;&nbsp;<b>%2</b></td></tr>").arg(name, value);
  };
  row(tr("Step time"), durationText(p.iterationNs) + (base ? versus(static_cast<double>(p.iterationNs),
                                                                    static_cast<double>(base->iterationNs), false)
                                                           : QString()));
  row(tr("Throughput"),
      throughputText(p.samplesPerS) + (base ? versus(p.samplesPerS, base->samplesPerS, true) : QString()));
  const Candidate& shown = model_->candidate();
  QString schedule = scheduleText(shown.schedule, shown.stagesPerDevice) +
                     tr(", %1 stages on %2 devices").arg(shown.balance.size()).arg(shown.pipelineDevices());
  if (!shown.deferredWeights.empty()) {  // zb1p within 1F1B's memory (the search's)
    schedule += tr(", W's deferred per device: %1").arg(qs(formatBalance(shown.deferredWeights)));
  }
  row(tr("Schedule"), schedule);
  row(tr("Bubble"), QStringLiteral("%1 %").arg(p.bubbleFraction * 100.0, 0, 'f', 1));
  const Cluster& cluster = model_->cluster();
  // One peak per pipeline device d (its cluster device is candidate.deviceOf(d), d < p).
  const auto stages = static_cast<std::size_t>(model_->candidate().balance.size());
  for (std::size_t j = 0; j < p.peakBytes.size() && j < stages; ++j) {
    const std::int64_t device = model_->candidate().deviceOf(static_cast<std::int64_t>(j));
    QString value = bytesText(p.peakBytes[j]);
    if (device < cluster.deviceCount() && cluster.devices[static_cast<std::size_t>(device)].memoryBytes) {
      const Bytes capacity = *cluster.devices[static_cast<std::size_t>(device)].memoryBytes;
      value += tr(" of %1").arg(bytesText(capacity));
      if (p.peakBytes[j] > capacity) value = QStringLiteral("<span style='color:#c0392b'>%1</span>").arg(value);
    }
    row(tr("Peak, device %1").arg(j), value);
  }
  row(tr("Fits"), p.fits ? tr("yes") : QStringLiteral("<span style='color:#c0392b'>%1</span>").arg(tr("no")));
  text += QStringLiteral("</table>");
  if (!baseLabel_.isEmpty())
    text += tr("<span style='color:#777'>changes against %1</span>").arg(baseLabel_.toHtmlEscaped());
  if (!calibrationError_.isEmpty()) {
    text += QStringLiteral("<br><span style='color:#c0392b'>%1</span>").arg(calibrationError_.toHtmlEscaped());
  }
  if (!tuningTheReportsStep()) {
    text += tr("<br><span style='color:#777'>predicted for %1; the report measured and predicted %2</span>")
                .arg(qs(std::string(optimizerName(profile_->environment.optimizer.kind))),
                     qs(std::string(optimizerName(report_->profile->environment.optimizer.kind))));
  } else if (reportBeforeDriftNs_ && reportIterationNs_) {
    // The panel predicts with the report's profile, cluster and calibration: the report's
    // prediction before its drift factor. The sweep then scaled it by what it measured.
    const double factor =
        static_cast<double>(*reportIterationNs_) / static_cast<double>(std::max<TimeNs>(1, *reportBeforeDriftNs_));
    text += tr("<br><span style='color:#777'>the report predicts %1 with this calibration")
                .arg(durationText(*reportBeforeDriftNs_));
    if (*reportIterationNs_ != *reportBeforeDriftNs_) {
      text += tr(", and %1 after its drift factor (x%2: the machine's speed while the sweep measured)")
                  .arg(durationText(*reportIterationNs_))
                  .arg(factor, 0, 'f', 3);
    }
    text += QStringLiteral("</span>");
  } else if (reportIterationNs_ && base && *reportIterationNs_ != base->iterationNs) {
    text += tr("<br><span style='color:#777'>the report says %1 (written before reports kept their prediction "
               "before the drift factor)</span>")
                .arg(durationText(*reportIterationNs_));
  }
  prediction_->setText(text);
}

}  // namespace pipeprof::gui
