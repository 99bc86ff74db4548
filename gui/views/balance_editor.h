// The layer list as bars of per-layer time and memory, with stage boundaries to drag.
#pragma once

#include <QWidget>

namespace pipeprof::gui {

class TuningModel;

/// Each layer is a column: compute time (forward + backward) grows up, memory (saved
/// activations + parameter state) grows down; stages are coloured bands headed by their
/// totals. Dragging a boundary calls TuningModel::moveBoundary, which re-simulates at once.
class BalanceEditor : public QWidget {
  Q_OBJECT

 public:
  explicit BalanceEditor(TuningModel* model, QWidget* parent = nullptr);

  /// Widget x of the boundary after stage `boundary` (for tests and drags).
  double boundaryX(int boundary) const;

  QSize sizeHint() const override { return {800, 260}; }
  QSize minimumSizeHint() const override { return {300, 180}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  double left() const { return kAxisWidth; }
  double columnWidth() const;
  int layerAt(double x) const;
  int boundaryNear(double x) const;

  static constexpr int kAxisWidth = 124;
  static constexpr int kHeaderHeight = 40;
  static constexpr int kFooterHeight = 22;

  TuningModel* model_;
  int dragging_ = -1;
};

}  // namespace pipeprof::gui
