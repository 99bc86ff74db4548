// A candidate's predicted and measured timelines as lanes of ops and memory counters on one time axis.
#include "models/timeline_model.h"

#include "models/format.h"
#include "models/report_document.h"

#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/simulator/predictor.h>

#include <QFileInfo>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <tuple>

namespace pipeprof::gui {
namespace {

// j of a stage's compute lane "partition j", else -1.
std::int64_t stageOfLane(const QString& name, bool isCounter) {
  static const QLatin1String prefix("partition ");
  if (isCounter || !name.startsWith(prefix)) return -1;
  bool ok = false;
  const qlonglong j = name.mid(prefix.size()).toLongLong(&ok);
  return ok && j >= 0 ? j : -1;
}

// Compute lanes first (in stage order), then streams, then copies, counters last.
int laneRank(const QString& name, bool isCounter) {
  if (isCounter) return 3;
  if (stageOfLane(name, isCounter) >= 0 || name.startsWith(QLatin1String("partition"))) return 0;
  if (name.contains(QLatin1String("copy"))) return 2;
  return 1;
}

QString spanDetails(const TraceEvent& event, TimeNs relativeStartNs) {
  QString text = QStringLiteral("<b>%1</b><br>%2").arg(qs(event.name).toHtmlEscaped(), qs(phaseName(event.phase)));
  if (event.microBatch >= 0) text += QStringLiteral(" · micro-batch %1").arg(event.microBatch);
  if (event.partition >= 0) text += QStringLiteral(" · stage %1").arg(event.partition);
  text += QStringLiteral("<br>start %1 · duration %2").arg(durationText(relativeStartNs), durationText(event.durationNs));
  text += QStringLiteral("<br>%1 / %2").arg(qs(event.device).toHtmlEscaped(), qs(event.lane).toHtmlEscaped());
  if (event.bytes > 0) text += QStringLiteral("<br>%1 moved").arg(bytesText(event.bytes));
  for (const auto& [key, value] : event.args) {
    text += QStringLiteral("<br>%1: %2").arg(qs(key).toHtmlEscaped(), qs(value).toHtmlEscaped());
  }
  return text;
}

// The events of the median-duration step (by its Step span), with each counter's value at the
// step's start carried in; the trace itself when it has no Step spans.
Trace medianStep(const Trace& trace, QString* note) {
  const std::vector<const TraceEvent*> steps = stepSpans(trace);
  if (steps.empty()) return trace;
  std::vector<const TraceEvent*> byDuration = steps;
  std::stable_sort(byDuration.begin(), byDuration.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->durationNs < b->durationNs; });
  const TraceEvent* chosen = byDuration[(byDuration.size() - 1) / 2];
  const auto position = std::find(steps.begin(), steps.end(), chosen) - steps.begin();
  if (steps.size() > 1) *note = TimelineModel::tr("step %1 of %2 (median)").arg(position + 1).arg(steps.size());
  const TimeNs beginNs = chosen->startNs;
  const TimeNs endNs = chosen->endNs();
  Trace cut;
  cut.metadata = trace.metadata;
  std::map<std::pair<std::string, std::string>, const TraceEvent*> before;  // counter value at beginNs
  for (const TraceEvent& event : trace.events) {
    if (event.kind == EventKind::Counter) {
      if (event.startNs < beginNs) {
        before[{event.device, event.name}] = &event;
      } else if (event.startNs <= endNs) {
        cut.events.push_back(event);
      }
    } else if (event.kind == EventKind::Span && event.phase != Phase::Warmup && event.startNs < endNs &&
               event.endNs() > beginNs) {
      cut.events.push_back(event);
    }
  }
  for (const auto& [key, event] : before) {
    TraceEvent carried = *event;
    carried.startNs = beginNs;
    cut.events.push_back(carried);
  }
  return cut;
}

}  // namespace

TimelineModel::TimelineModel(QObject* parent) : QAbstractTableModel(parent) {}

void TimelineModel::clear() { setTraces(std::nullopt, tr("Select a candidate."), std::nullopt, {}); }

void TimelineModel::setTraces(const std::optional<Trace>& predicted, const QString& predictedMessage,
                              const std::optional<Trace>& measured, const QString& measuredMessage) {
  beginResetModel();
  sections_.clear();
  lanes_.clear();
  addSection(tr("Predicted"), predicted, predictedMessage);
  addSection(tr("Measured"), measured, measuredMessage);
  endResetModel();
}

void TimelineModel::addSection(const QString& title, const std::optional<Trace>& trace, const QString& message) {
  if (!trace && message.isEmpty()) return;
  TimelineSection section;
  section.title = title;
  section.firstLane = static_cast<int>(lanes_.size());
  section.message = message;
  const int sectionIndex = static_cast<int>(sections_.size());
  const std::optional<Trace> step = trace ? std::optional(medianStep(*trace, &section.note)) : std::nullopt;
  if (step && !step->events.empty()) {
    TimeNs originNs = std::numeric_limits<TimeNs>::max();
    for (const TraceEvent& event : step->events) {
      if (event.kind == EventKind::Span || event.kind == EventKind::Counter) originNs = std::min(originNs, event.startNs);
    }
    // (device, rank, stage, lane name) -> lane, so lanes come out grouped by device in a stable
    // order, a device's stages (interleaved: several) in increasing j.
    std::map<std::tuple<QString, int, std::int64_t, QString>, TimelineLane> byKey;
    for (const TraceEvent& event : step->events) {
      if (event.kind != EventKind::Span && event.kind != EventKind::Counter) continue;
      const bool isCounter = event.kind == EventKind::Counter;
      const QString device = qs(event.device);
      const QString name = isCounter ? qs(event.name) : qs(event.lane);
      const std::int64_t stage = stageOfLane(name, isCounter);
      TimelineLane& lane = byKey[{device, laneRank(name, isCounter), stage, name}];
      lane.section = sectionIndex;
      lane.device = device;
      lane.name = name;
      lane.stage = stage;
      lane.label = device + QStringLiteral(" · ") + (stage >= 0 ? tr("stage %1").arg(stage) : name);
      lane.isCounter = isCounter;
      const TimeNs startNs = event.startNs - originNs;
      if (isCounter) {
        lane.counterPoints.emplace_back(startNs, event.value);
        lane.counterMax = std::max(lane.counterMax, event.value);
        section.endNs = std::max(section.endNs, startNs);
      } else {
        TimelineSpan span;
        span.startNs = startNs;
        span.durationNs = event.durationNs;
        span.phase = event.phase;
        span.microBatch = event.microBatch;
        span.partition = event.partition;
        span.name = qs(event.name);
        span.details = spanDetails(event, startNs);
        lane.busyNs += event.durationNs;
        section.endNs = std::max(section.endNs, span.endNs());
        lane.spans.push_back(std::move(span));
      }
    }
    for (auto& [key, lane] : byKey) {
      std::stable_sort(lane.spans.begin(), lane.spans.end(),
                       [](const TimelineSpan& a, const TimelineSpan& b) { return a.startNs < b.startNs; });
      std::stable_sort(lane.counterPoints.begin(), lane.counterPoints.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      lanes_.push_back(std::move(lane));
    }
  } else if (section.message.isEmpty()) {
    section.message = tr("The trace is empty.");
  }
  section.laneCount = static_cast<int>(lanes_.size()) - section.firstLane;
  sections_.push_back(section);
}

TimelineModel::CandidateTraces TimelineModel::readCandidateTraces(const std::shared_ptr<const Report>& report,
                                                                  const QString& reportPath, std::size_t candidate) {
  CandidateTraces traces;
  const CandidateResult& result = report->candidates.at(candidate);
  auto readTrace = [&reportPath](const std::string& stored, std::optional<Trace>& trace, QString& message) {
    const QString path = ReportDocument::resolvePath(reportPath, stored);
    if (!QFileInfo::exists(path)) {
      message = tr("Trace file not found: %1").arg(path);
      return;
    }
    try {
      trace = readChromeTraceFile(path.toStdString());
    } catch (const std::exception& error) {
      message = qs(error.what());
    }
  };
  if (!result.prediction.tracePath.empty()) readTrace(result.prediction.tracePath, traces.predicted, traces.predictedMessage);
  if (!traces.predicted && report->profile && report->cluster) {
    try {
      SimulationOptions options;
      options.recordTrace = true;
      // The report's own inputs (its calibration included): the twin the sweep would have written.
      const Predictor predictor(*report->profile, *report->cluster, reportCalibration(*report, "the report"));
      traces.predicted = predictor.predict(result.candidate, options).trace;
      traces.predictedMessage.clear();
    } catch (const std::exception& error) {
      if (traces.predictedMessage.isEmpty()) traces.predictedMessage = qs(error.what());
    }
  }
  if (!traces.predicted && traces.predictedMessage.isEmpty()) {
    traces.predictedMessage = tr("The report has no predicted trace for this candidate.");
  }
  if (result.measurement && !result.measurement->tracePath.empty()) {
    readTrace(result.measurement->tracePath, traces.measured, traces.measuredMessage);
  } else {
    traces.measuredMessage = result.status == CandidateStatus::Failed ? tr("Measuring failed: %1").arg(qs(result.error))
                             : result.measurement                    ? tr("The measurement has no trace.")
                                                                     : tr("Not measured: %1").arg(qs(result.notMeasuredReason));
  }
  return traces;
}

void TimelineModel::loadCandidate(const ReportDocument& document, std::optional<std::size_t> candidate) {
  ++generation_;  // drops an asynchronous load still in flight
  loading_ = false;
  const std::shared_ptr<const Report> report = document.report();
  if (!report || !candidate || *candidate >= report->candidates.size()) {
    clear();
    return;
  }
  const CandidateTraces traces = readCandidateTraces(report, document.path(), *candidate);
  setTraces(traces.predicted, traces.predictedMessage, traces.measured, traces.measuredMessage);
}

void TimelineModel::loadCandidateAsync(const ReportDocument& document, std::optional<std::size_t> candidate) {
  const std::shared_ptr<const Report> report = document.report();
  if (!report || !candidate || *candidate >= report->candidates.size()) {
    loadCandidate(document, candidate);
    emit loaded();
    return;
  }
  const int generation = ++generation_;
  loading_ = true;
  const QString reportPath = document.path();
  const std::size_t index = *candidate;
  auto* watcher = new QFutureWatcher<CandidateTraces>(this);
  connect(watcher, &QFutureWatcher<CandidateTraces>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;  // a newer selection won
    const CandidateTraces traces = watcher->result();
    loading_ = false;
    setTraces(traces.predicted, traces.predictedMessage, traces.measured, traces.measuredMessage);
    emit loaded();
  });
  watcher->setFuture(QtConcurrent::run([report, reportPath, index] { return readCandidateTraces(report, reportPath, index); }));
}

TimeNs TimelineModel::endNs() const {
  TimeNs end = 0;
  for (const TimelineSection& section : sections_) end = std::max(end, section.endNs);
  return end;
}

int TimelineModel::spanCount() const {
  int count = 0;
  for (const TimelineLane& lane : lanes_) count += static_cast<int>(lane.spans.size());
  return count;
}

int TimelineModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(lanes_.size());
}

int TimelineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  if (role != Qt::DisplayRole) return {};
  const TimelineLane& lane = lanes_[static_cast<std::size_t>(index.row())];
  switch (index.column()) {
    case Section: return sections_[static_cast<std::size_t>(lane.section)].title;
    case Device: return lane.device;
    case Lane: return lane.name;
    case Events: return static_cast<int>(lane.isCounter ? lane.counterPoints.size() : lane.spans.size());
    case Busy: return lane.isCounter ? bytesText(static_cast<Bytes>(lane.counterMax)) : durationText(lane.busyNs);
    default: return {};
  }
}

QVariant TimelineModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Section: return tr("Timeline");
    case Device: return tr("Device");
    case Lane: return tr("Lane");
    case Events: return tr("Events");
    case Busy: return tr("Busy / peak");
    default: return {};
  }
}

}  // namespace pipeprof::gui
