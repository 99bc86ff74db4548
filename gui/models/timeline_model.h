// A candidate's predicted and measured timelines as lanes of ops and memory counters on one time axis.
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/core/trace.h>

#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace pipeprof::gui {

class ReportDocument;

/// One span on a lane; times are relative to the start of its trace.
struct TimelineSpan {
  TimeNs startNs = 0;
  TimeNs durationNs = 0;
  Phase phase = Phase::Other;
  std::int64_t microBatch = -1;
  std::int64_t partition = -1;
  QString name;
  QString details;  ///< rich text for the tooltip

  TimeNs endNs() const { return startNs + durationNs; }
};

/// A row of the timeline: the spans of one (device, lane), or one memory counter of a device.
/// A compute lane holds one stage's ops (the trace's lane "partition j"): under interleaved
/// 1F1B a device has several, one per virtual stage, listed together in stage order.
struct TimelineLane {
  int section = 0;  ///< index into TimelineModel::sections()
  QString device;
  QString name;   ///< the trace's lane name: "partition 2", "copy 0->1", "memory", a stream
  QString label;  ///< what the view shows: "cpu:0 · stage 2", "cpu:0 · copy 0->1"
  std::int64_t stage = -1;  ///< j of a compute lane "partition j", else -1
  bool isCounter = false;
  std::vector<TimelineSpan> spans;                       ///< sorted by start
  std::vector<std::pair<TimeNs, double>> counterPoints;  ///< (time, value), sorted by time
  double counterMax = 0.0;
  TimeNs busyNs = 0;  ///< sum of span durations
};

/// "Predicted" or "Measured": its lanes are a contiguous run of TimelineModel::lanes().
struct TimelineSection {
  QString title;
  int firstLane = 0;
  int laneCount = 0;
  TimeNs endNs = 0;  ///< end of the last event, relative to the trace start
  QString message;   ///< why there is nothing to show (no trace, unreadable file), else empty
  QString note;      ///< e.g. "step 3 of 5 (median)" when one step was cut out of a longer trace
};

/// One row per lane across both sections, Predicted then Measured.
class TimelineModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Section, Device, Lane, Events, Busy, ColumnCount };

  explicit TimelineModel(QObject* parent = nullptr);

  /// Shows the given traces; a missing trace shows its message instead, and a section with
  /// neither trace nor message is left out. A trace with several training steps (host spans
  /// of phase Step, as `pipeprof run` records them) shows only its median step, so that it
  /// lines up with a prediction of one step. Each trace is shifted so that its first event
  /// starts at 0.
  void setTraces(const std::optional<Trace>& predicted, const QString& predictedMessage,
                 const std::optional<Trace>& measured, const QString& measuredMessage);
  /// Reads the candidate's trace files (paths relative to the report). Without a predicted
  /// trace file it simulates the candidate from the report's profile and cluster, if embedded.
  /// A file that cannot be read shows the reader's message in its section.
  void loadCandidate(const ReportDocument& document, std::optional<std::size_t> candidate);
  /// The same with the reading (measured traces with CUPTI kernels can be large) on the Qt
  /// thread pool; the model resets and emits loaded() when done. A newer load or
  /// loadCandidate() supersedes one still in flight.
  void loadCandidateAsync(const ReportDocument& document, std::optional<std::size_t> candidate);
  /// Whether an asynchronous load is in flight.
  bool isLoading() const { return loading_; }
  void clear();

  const std::vector<TimelineLane>& lanes() const { return lanes_; }
  const std::vector<TimelineSection>& sections() const { return sections_; }
  /// The later end of the two sections, in ns (the shared time axis spans [0, endNs]).
  TimeNs endNs() const;
  /// Number of spans over every lane.
  int spanCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  /// An asynchronous load finished (the model has been reset with its traces).
  void loaded();

 private:
  struct CandidateTraces {
    std::optional<Trace> predicted;
    std::optional<Trace> measured;
    QString predictedMessage;
    QString measuredMessage;
  };
  static CandidateTraces readCandidateTraces(const std::shared_ptr<const Report>& report, const QString& reportPath,
                                             std::size_t candidate);
  void addSection(const QString& title, const std::optional<Trace>& trace, const QString& message);

  std::vector<TimelineSection> sections_;
  std::vector<TimelineLane> lanes_;
  int generation_ = 0;
  bool loading_ = false;
};

}  // namespace pipeprof::gui
