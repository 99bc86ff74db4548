// Paints a TimelineModel: a lane per device and stream, ops coloured by phase, zoom, pan and tooltips.
#pragma once

#include <pipeprof/core/units.h>

#include <QWidget>

#include <vector>

namespace pipeprof::gui {

class TimelineModel;
struct TimelineSpan;

/// Sections (Predicted, Measured) one above the other on one time axis. Mouse wheel zooms
/// around the cursor, dragging pans, a double click fits everything; hovering an op shows
/// its details.
class TimelineCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineCanvas(TimelineModel* model, QWidget* parent = nullptr);

  /// Zooms by factor (> 1 zooms in) keeping the time under widget x fixed.
  void zoomBy(double factor, double anchorX);
  void fitAll();
  /// Visible time range, in ns from the start of the traces.
  TimeNs viewStartNs() const { return static_cast<TimeNs>(viewStartNs_); }
  TimeNs viewEndNs() const;
  /// The op under a widget position, or nullptr.
  const TimelineSpan* spanAt(const QPoint& position) const;

  QSize sizeHint() const override { return {900, 420}; }
  QSize minimumSizeHint() const override { return {400, 200}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Row {
    enum Kind { Header, Lane, Message } kind = Lane;
    int section = 0;
    int lane = -1;
    int top = 0;
    int height = 0;
  };
  void layoutRows();
  double plotLeft() const { return kLabelWidth; }
  double plotWidth() const;
  double xOf(double ns) const { return plotLeft() + (ns - viewStartNs_) / nsPerPixel_; }
  double nsAt(double x) const { return viewStartNs_ + (x - plotLeft()) * nsPerPixel_; }
  void paintRuler(QPainter& painter);
  void paintLane(QPainter& painter, const Row& row);
  void paintLegend(QPainter& painter);
  const Row* rowAt(int y) const;

  static constexpr int kLabelWidth = 200;
  static constexpr int kRulerHeight = 30;
  static constexpr int kLegendHeight = 26;
  static constexpr int kHeaderHeight = 24;

  TimelineModel* model_;
  std::vector<Row> rows_;
  double counterMax_ = 0.0;
  double viewStartNs_ = 0.0;
  double nsPerPixel_ = 1.0;
  bool userZoomed_ = false;
  bool dragging_ = false;
  QPoint dragStart_;
  double dragStartNs_ = 0.0;
};

}  // namespace pipeprof::gui
