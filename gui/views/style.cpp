// The GUI's colours and chart styling, one place so every view reads the same.
#include "views/style.h"

#include <QChart>
#include <QFont>
#include <QLegend>

namespace pipeprof::gui {

QColor phaseColor(Phase phase) {
  switch (phase) {
    case Phase::Forward: return QColor(0x4e, 0x79, 0xa7);
    case Phase::Recompute: return QColor(0xf2, 0x8e, 0x2b);
    case Phase::Backward: return QColor(0x59, 0xa1, 0x4f);
    case Phase::Copy: return QColor(0x9c, 0x75, 0x5f);
    case Phase::SkipCopy: return QColor(0xb0, 0x7a, 0xa1);
    case Phase::Loss: return QColor(0xd3, 0x72, 0x95);
    case Phase::Kernel: return QColor(0x76, 0xb7, 0xb2);
    case Phase::Memcpy: return QColor(0xed, 0xc9, 0x48);
    case Phase::Memset: return QColor(0xff, 0x9d, 0xa7);
    case Phase::Launch: return QColor(0xba, 0xb0, 0xac);
    case Phase::Warmup: return QColor(0xd4, 0xd4, 0xd4);
    case Phase::Step: return QColor(0xc9, 0xd6, 0xe8);
    case Phase::Optimizer: return QColor(0xe1, 0x57, 0x59);
    case Phase::Other: return QColor(0xa0, 0xa0, 0xa0);
  }
  return QColor(0xa0, 0xa0, 0xa0);
}

QColor predictedColor() { return QColor(0x4e, 0x79, 0xa7); }
QColor measuredColor() { return QColor(0xf2, 0x8e, 0x2b); }
QColor warningColor() { return QColor(0xc0, 0x39, 0x2b); }

QColor stageColor(int j) {
  static const QColor kColors[] = {QColor(0xdc, 0xe8, 0xf5), QColor(0xfc, 0xe8, 0xd2), QColor(0xdf, 0xf0, 0xdb),
                                   QColor(0xef, 0xe0, 0xec), QColor(0xf6, 0xf0, 0xc9), QColor(0xe0, 0xef, 0xee)};
  return kColors[static_cast<std::size_t>(j) % std::size(kColors)];
}

void styleChart(QChart* chart, const QString& title) {
  chart->setTheme(QChart::ChartThemeLight);
  chart->setAnimationOptions(QChart::NoAnimation);
  QFont titleFont = chart->titleFont();
  titleFont.setPointSizeF(11.5);
  titleFont.setBold(true);
  chart->setTitleFont(titleFont);
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont legendFont = chart->legend()->font();
  legendFont.setPointSizeF(9.5);
  chart->legend()->setFont(legendFont);
  chart->setMargins(QMargins(6, 6, 6, 6));
  chart->setBackgroundRoundness(0);
}

ByteUnit byteUnitFor(double maxBytes) {
  if (maxBytes >= 1024.0 * 1024.0 * 1024.0) return {QStringLiteral("GiB"), 1024.0 * 1024.0 * 1024.0};
  if (maxBytes >= 1024.0 * 1024.0) return {QStringLiteral("MiB"), 1024.0 * 1024.0};
  if (maxBytes >= 1024.0) return {QStringLiteral("KiB"), 1024.0};
  return {QStringLiteral("B"), 1.0};
}

TimeUnit timeUnitFor(double maxNs) {
  if (maxNs >= 1e9) return {QStringLiteral("s"), 1e9};
  if (maxNs >= 1e6) return {QStringLiteral("ms"), 1e6};
  if (maxNs >= 1e3) return {QStringLiteral("us"), 1e3};
  return {QStringLiteral("ns"), 1.0};
}

}  // namespace pipeprof::gui
