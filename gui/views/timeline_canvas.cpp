// Paints a TimelineModel: a lane per device and stream, ops coloured by phase, zoom, pan and tooltips.
#include "views/timeline_canvas.h"

#include "models/format.h"
#include "models/timeline_model.h"
#include "views/style.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <set>

namespace pipeprof::gui {
namespace {

// A tick step of 1, 2 or 5 times a power of ten nanoseconds, at least minNs.
double tickStep(double minNs) {
  const double power = std::pow(10.0, std::floor(std::log10(std::max(minNs, 1.0))));
  for (double step : {1.0, 2.0, 5.0, 10.0}) {
    if (step * power >= minNs) return step * power;
  }
  return 10.0 * power;
}

QString tickLabel(double ns, const TimeUnit& unit) {
  const double value = ns / unit.ns;
  const int decimals = std::abs(value - std::round(value)) < 1e-9 ? 0 : std::abs(value * 10 - std::round(value * 10)) < 1e-6 ? 1 : 2;
  return QString::number(value, 'f', decimals) + QLatin1Char(' ') + unit.name;
}

bool darkFill(const QColor& color) { return color.lightnessF() < 0.55; }

}  // namespace

TimelineCanvas::TimelineCanvas(TimelineModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::WheelFocus);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    userZoomed_ = false;
    layoutRows();
    fitAll();
  });
  layoutRows();
  fitAll();
}

double TimelineCanvas::plotWidth() const { return std::max(10.0, width() - plotLeft() - 12.0); }

TimeNs TimelineCanvas::viewEndNs() const { return static_cast<TimeNs>(nsAt(plotLeft() + plotWidth())); }

void TimelineCanvas::fitAll() {
  const double endNs = std::max<double>(1.0, static_cast<double>(model_->endNs()));
  nsPerPixel_ = endNs * 1.02 / plotWidth();
  viewStartNs_ = -endNs * 0.01;
  update();
}

void TimelineCanvas::zoomBy(double factor, double anchorX) {
  const double anchorNs = nsAt(anchorX);
  const double endNs = std::max<double>(1.0, static_cast<double>(model_->endNs()));
  nsPerPixel_ = std::clamp(nsPerPixel_ / factor, 0.01, endNs * 4.0 / plotWidth());
  viewStartNs_ = anchorNs - (anchorX - plotLeft()) * nsPerPixel_;
  userZoomed_ = true;
  update();
}

void TimelineCanvas::layoutRows() {
  rows_.clear();
  counterMax_ = 0.0;
  int spanLanes = 0;
  int counterLanes = 0;
  int fixed = kRulerHeight + kLegendHeight;
  for (const TimelineSection& section : model_->sections()) {
    fixed += kHeaderHeight + (section.laneCount == 0 ? kHeaderHeight : 0);
    for (int l = section.firstLane; l < section.firstLane + section.laneCount; ++l) {
      const TimelineLane& lane = model_->lanes()[static_cast<std::size_t>(l)];
      lane.isCounter ? ++counterLanes : ++spanLanes;
      if (lane.isCounter) counterMax_ = std::max(counterMax_, lane.counterMax);
    }
  }
  const double units = spanLanes + 1.6 * counterLanes;
  const int laneHeight = units > 0 ? std::clamp(static_cast<int>((height() - fixed) / units), 14, 34) : 24;
  int y = kRulerHeight;
  for (int s = 0; s < static_cast<int>(model_->sections().size()); ++s) {
    const TimelineSection& section = model_->sections()[static_cast<std::size_t>(s)];
    rows_.push_back({Row::Header, s, -1, y, kHeaderHeight});
    y += kHeaderHeight;
    if (section.laneCount == 0) {
      rows_.push_back({Row::Message, s, -1, y, kHeaderHeight});
      y += kHeaderHeight;
    }
    for (int l = section.firstLane; l < section.firstLane + section.laneCount; ++l) {
      const bool counter = model_->lanes()[static_cast<std::size_t>(l)].isCounter;
      const int h = counter ? static_cast<int>(laneHeight * 1.6) : laneHeight;
      rows_.push_back({Row::Lane, s, l, y, h});
      y += h;
    }
  }
}

void TimelineCanvas::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  layoutRows();
  if (!userZoomed_) fitAll();
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  painter.setRenderHint(QPainter::Antialiasing, false);
  paintRuler(painter);
  const QFont base = font();
  for (const Row& row : rows_) {
    const TimelineSection& section = model_->sections()[static_cast<std::size_t>(row.section)];
    if (row.kind == Row::Header) {
      painter.fillRect(QRect(0, row.top, width(), row.height), QColor(0xee, 0xf1, 0xf5));
      QFont bold = base;
      bold.setBold(true);
      painter.setFont(bold);
      painter.setPen(QColor(0x22, 0x22, 0x22));
      QString title = section.title;
      if (section.laneCount > 0) title += tr(" — %1").arg(durationText(section.endNs));
      if (!section.note.isEmpty()) title += QStringLiteral(" · ") + section.note;
      painter.drawText(QRect(8, row.top, width() - 16, row.height), Qt::AlignVCenter | Qt::AlignLeft, title);
      painter.setFont(base);
    } else if (row.kind == Row::Message) {
      painter.setPen(QColor(0x77, 0x77, 0x77));
      painter.drawText(QRect(kLabelWidth, row.top, width() - kLabelWidth - 8, row.height), Qt::AlignVCenter | Qt::AlignLeft,
                       section.message);
    } else {
      paintLane(painter, row);
    }
  }
  paintLegend(painter);
}

void TimelineCanvas::paintRuler(QPainter& painter) {
  const double visibleNs = plotWidth() * nsPerPixel_;
  const double step = tickStep(nsPerPixel_ * 90.0);
  const TimeUnit unit = timeUnitFor(std::max(std::abs(nsAt(plotLeft() + plotWidth())), step));
  painter.setPen(QColor(0x44, 0x44, 0x44));
  painter.drawText(QRect(8, 0, kLabelWidth - 16, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft, tr("time (%1)").arg(unit.name));
  const double first = std::ceil(viewStartNs_ / step) * step;
  const int bottom = height() - kLegendHeight;
  for (double ns = first; ns <= viewStartNs_ + visibleNs; ns += step) {
    const int x = static_cast<int>(std::round(xOf(ns)));
    painter.setPen(QColor(0xe3, 0xe3, 0xe3));
    painter.drawLine(x, kRulerHeight, x, bottom);
    painter.setPen(QColor(0x44, 0x44, 0x44));
    painter.drawLine(x, kRulerHeight - 6, x, kRulerHeight);
    painter.drawText(QRect(x - 60, 2, 120, kRulerHeight - 8), Qt::AlignCenter, tickLabel(ns, unit));
  }
  painter.setPen(QColor(0xbb, 0xbb, 0xbb));
  painter.drawLine(0, kRulerHeight, width(), kRulerHeight);
}

void TimelineCanvas::paintLane(QPainter& painter, const Row& row) {
  const TimelineLane& lane = model_->lanes()[static_cast<std::size_t>(row.lane)];
  const QRect labelRect(8, row.top, kLabelWidth - 14, row.height);
  painter.setPen(QColor(0xe6, 0xe6, 0xe6));
  painter.drawLine(0, row.top + row.height - 1, width(), row.top + row.height - 1);
  painter.setPen(QColor(0x33, 0x33, 0x33));
  const QString& label = lane.label;
  painter.drawText(labelRect, Qt::AlignVCenter | Qt::AlignLeft,
                   painter.fontMetrics().elidedText(label, Qt::ElideMiddle, labelRect.width()));
  painter.save();
  painter.setClipRect(QRectF(plotLeft(), row.top, plotWidth() + 12, row.height));
  if (lane.isCounter) {
    const double scale = counterMax_ > 0 ? (row.height - 6) / counterMax_ : 0.0;
    const double bottom = row.top + row.height - 2;
    QPainterPath path(QPointF(xOf(lane.counterPoints.empty() ? 0.0 : static_cast<double>(lane.counterPoints.front().first)), bottom));
    double lastY = bottom;
    for (const auto& [timeNs, value] : lane.counterPoints) {
      const double x = xOf(static_cast<double>(timeNs));
      path.lineTo(x, lastY);
      lastY = bottom - value * scale;
      path.lineTo(x, lastY);
    }
    const double endX = xOf(static_cast<double>(model_->sections()[static_cast<std::size_t>(lane.section)].endNs));
    path.lineTo(endX, lastY);
    path.lineTo(endX, bottom);
    path.closeSubpath();
    painter.setRenderHint(QPainter::Antialiasing, true);
    QColor fill(0x8e, 0x6c, 0xb5);
    fill.setAlpha(70);
    painter.fillPath(path, fill);
    painter.setPen(QPen(QColor(0x6a, 0x4c, 0x93), 1.2));
    painter.drawPath(path);
    painter.setRenderHint(QPainter::Antialiasing, false);
    painter.restore();
    painter.setPen(QColor(0x77, 0x77, 0x77));
    painter.drawText(labelRect, Qt::AlignBottom | Qt::AlignRight,
                     tr("peak %1").arg(bytesText(static_cast<Bytes>(lane.counterMax))));
    return;
  }
  const double left = viewStartNs_;
  const double right = nsAt(plotLeft() + plotWidth() + 12);
  const QFontMetrics metrics = painter.fontMetrics();
  for (const TimelineSpan& span : lane.spans) {
    if (static_cast<double>(span.endNs()) < left || static_cast<double>(span.startNs) > right) continue;
    const double x1 = xOf(static_cast<double>(span.startNs));
    const double x2 = std::max(xOf(static_cast<double>(span.endNs())), x1 + 1.0);
    const QRectF box(x1, row.top + 2, x2 - x1, row.height - 5);
    const QColor fill = phaseColor(span.phase);
    painter.fillRect(box, fill);
    if (box.width() > 4) {
      painter.setPen(fill.darker(140));
      painter.drawRect(box.adjusted(0, 0, -1, -1));
    }
    if (span.microBatch >= 0) {
      const QString text = QString::number(span.microBatch);
      if (metrics.horizontalAdvance(text) + 4 < box.width()) {
        painter.setPen(darkFill(fill) ? Qt::white : QColor(0x20, 0x20, 0x20));
        painter.drawText(box, Qt::AlignCenter, text);
      }
    }
  }
  painter.restore();
}

void TimelineCanvas::paintLegend(QPainter& painter) {
  std::set<int> phases;
  bool counters = false;
  for (const TimelineLane& lane : model_->lanes()) {
    counters = counters || lane.isCounter;
    for (const TimelineSpan& span : lane.spans) phases.insert(static_cast<int>(span.phase));
  }
  const int top = height() - kLegendHeight;
  painter.fillRect(QRect(0, top, width(), kLegendHeight), QColor(0xfa, 0xfa, 0xfa));
  painter.setPen(QColor(0xcc, 0xcc, 0xcc));
  painter.drawLine(0, top, width(), top);
  int x = 8;
  auto entry = [&](const QColor& color, const QString& text) {
    painter.fillRect(QRect(x, top + 8, 12, 12), color);
    painter.setPen(QColor(0x33, 0x33, 0x33));
    painter.drawText(QRect(x + 16, top, 200, kLegendHeight), Qt::AlignVCenter | Qt::AlignLeft, text);
    x += 16 + painter.fontMetrics().horizontalAdvance(text) + 16;
  };
  for (int phase : phases) entry(phaseColor(static_cast<Phase>(phase)), qs(phaseName(static_cast<Phase>(phase))));
  if (counters) entry(QColor(0x8e, 0x6c, 0xb5, 150), tr("memory in use"));
  if (!phases.empty()) {
    painter.setPen(QColor(0x55, 0x55, 0x55));
    painter.drawText(QRect(x, top, 300, kLegendHeight), Qt::AlignVCenter | Qt::AlignLeft, tr("numbers: micro-batch i"));
  }
  painter.setPen(QColor(0x88, 0x88, 0x88));
  painter.drawText(QRect(0, top, width() - 10, kLegendHeight), Qt::AlignVCenter | Qt::AlignRight,
                   tr("wheel: zoom · drag: pan · double-click: fit"));
}

const TimelineCanvas::Row* TimelineCanvas::rowAt(int y) const {
  for (const Row& row : rows_) {
    if (y >= row.top && y < row.top + row.height) return &row;
  }
  return nullptr;
}

const TimelineSpan* TimelineCanvas::spanAt(const QPoint& position) const {
  const Row* row = rowAt(position.y());
  if (row == nullptr || row->kind != Row::Lane || position.x() < plotLeft()) return nullptr;
  const TimelineLane& lane = model_->lanes()[static_cast<std::size_t>(row->lane)];
  const double ns = nsAt(position.x());
  const double slackNs = 2.0 * nsPerPixel_;  // thin ops stay hoverable
  for (const TimelineSpan& span : lane.spans) {
    if (ns >= static_cast<double>(span.startNs) - slackNs && ns <= static_cast<double>(span.endNs()) + slackNs) return &span;
  }
  return nullptr;
}

bool TimelineCanvas::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const TimelineSpan* span = spanAt(help->pos())) {
      QToolTip::showText(help->globalPos(), span->details, this);
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QWidget::event(event);
}

void TimelineCanvas::wheelEvent(QWheelEvent* event) {
  const double factor = std::pow(1.0015, event->angleDelta().y());
  zoomBy(factor, std::max(plotLeft(), event->position().x()));
  event->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    dragging_ = true;
    dragStart_ = event->pos();
    dragStartNs_ = viewStartNs_;
    setCursor(Qt::ClosedHandCursor);
  }
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  viewStartNs_ = dragStartNs_ - (event->pos().x() - dragStart_.x()) * nsPerPixel_;
  userZoomed_ = true;
  update();
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineCanvas::mouseDoubleClickEvent(QMouseEvent*) {
  userZoomed_ = false;
  fitAll();
}

}  // namespace pipeprof::gui
