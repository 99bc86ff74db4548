// The GUI's colours and chart styling, one place so every view reads the same.
#pragma once

#include <pipeprof/core/trace.h>

#include <QColor>
#include <QString>

QT_BEGIN_NAMESPACE
class QChart;
QT_END_NAMESPACE

namespace pipeprof::gui {

/// Fill colour of an op by phase (forward blue, recompute orange, backward green, copies
/// grey-brown, ...): the timeline and its legend use these.
QColor phaseColor(Phase phase);
/// Series colours: predicted (blue) and measured (orange), used by every chart.
QColor predictedColor();
QColor measuredColor();
/// Capacity lines and errors.
QColor warningColor();
/// Stage background bands in the balance editor, cycling.
QColor stageColor(int j);

/// Light theme, readable fonts, legend at the bottom, no animations.
void styleChart(QChart* chart, const QString& title);

/// A value axis unit for bytes: "B", "KiB", "MiB" or "GiB" so that maxBytes reads 1..1023,
/// and the divisor for it.
struct ByteUnit {
  QString name;
  double divisor = 1.0;
};
ByteUnit byteUnitFor(double maxBytes);

/// A duration unit for a time axis: "ns", "us", "ms" or "s" and its size in ns.
struct TimeUnit {
  QString name;
  double ns = 1.0;
};
TimeUnit timeUnitFor(double maxNs);

}  // namespace pipeprof::gui
