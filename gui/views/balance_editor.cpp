// The layer list as bars of per-layer time and memory, with stage boundaries to drag.
#include "views/balance_editor.h"

#include "models/format.h"
#include "models/tuning_model.h"
#include "views/style.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace pipeprof::gui {

BalanceEditor::BalanceEditor(TuningModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  auto repaint = [this] { update(); };
  connect(model_, &TuningModel::predictionChanged, this, repaint);
  connect(model_, &QAbstractItemModel::modelReset, this, repaint);
}

double BalanceEditor::columnWidth() const {
  const int layers = model_->rowCount();
  return layers > 0 ? (width() - left() - 10.0) / layers : 1.0;
}

double BalanceEditor::boundaryX(int boundary) const {
  const std::vector<std::int64_t>& balance = model_->candidate().balance;
  std::int64_t first = 0;
  for (int j = 0; j <= boundary && j < static_cast<int>(balance.size()); ++j)
    first += balance[static_cast<std::size_t>(j)];
  return left() + static_cast<double>(first) * columnWidth();
}

int BalanceEditor::layerAt(double x) const {
  const int layer = static_cast<int>(std::floor((x - left()) / columnWidth()));
  return layer >= 0 && layer < model_->rowCount() ? layer : -1;
}

int BalanceEditor::boundaryNear(double x) const {
  const int boundaries = static_cast<int>(model_->candidate().balance.size()) - 1;
  for (int b = 0; b < boundaries; ++b) {
    if (std::abs(boundaryX(b) - x) <= 7.0) return b;
  }
  return -1;
}

void BalanceEditor::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  const int layers = model_->rowCount();
  if (layers == 0) {
    painter.setPen(QColor(0x77, 0x77, 0x77));
    painter.drawText(rect(), Qt::AlignCenter,
                     tr("Select a candidate of a report with an embedded profile to tune it."));
    return;
  }
  const std::vector<TimeNs> times = model_->layerTimesNs();
  const std::vector<Bytes> bytes = model_->layerBytes();
  const double maxTime = static_cast<double>(std::max<TimeNs>(1, *std::max_element(times.begin(), times.end())));
  const double maxBytes = static_cast<double>(std::max<Bytes>(1, *std::max_element(bytes.begin(), bytes.end())));
  const double w = columnWidth();
  const int plotTop = kHeaderHeight;
  const int plotBottom = height() - kFooterHeight;
  const double middle = plotTop + (plotBottom - plotTop) * 0.55;
  const double upHeight = middle - plotTop - 4;
  const double downHeight = plotBottom - middle - 4;

  // Stage bands and their totals.
  const std::vector<std::int64_t>& balance = model_->candidate().balance;
  const std::int64_t devices = std::max<std::int64_t>(1, model_->candidate().pipelineDevices());
  const Prediction& prediction = model_->prediction();
  std::int64_t first = 0;
  QFont bold = font();
  bold.setBold(true);
  for (std::size_t j = 0; j < balance.size(); ++j) {
    const double x1 = left() + static_cast<double>(first) * w;
    const double x2 = left() + static_cast<double>(first + balance[j]) * w;
    painter.fillRect(QRectF(x1, 0, x2 - x1, plotBottom), stageColor(static_cast<int>(j)));
    TimeNs sumNs = 0;
    for (std::int64_t l = first; l < first + balance[j]; ++l) sumNs += times[static_cast<std::size_t>(l)];
    // Peaks are per pipeline device, which holds the stage with its other stages.
    const auto d = static_cast<std::size_t>(model_->candidate().deviceOfStage(static_cast<std::int64_t>(j)));
    const QString peak = d < prediction.peakBytes.size() ? bytesText(prediction.peakBytes[d]) : QString();
    painter.setPen(QColor(0x22, 0x22, 0x22));
    painter.setFont(bold);
    const QRectF header(x1 + 3, 2, x2 - x1 - 6, 18);
    painter.drawText(
        header, Qt::AlignLeft | Qt::AlignVCenter,
        painter.fontMetrics().elidedText((devices == static_cast<std::int64_t>(balance.size())
                                              ? tr("stage %1: %2 layers").arg(j).arg(balance[j])
                                              : tr("stage %1 (device %2): %3 layers").arg(j).arg(d).arg(balance[j])),
                                         Qt::ElideRight, static_cast<int>(header.width())));
    painter.setFont(font());
    const QRectF detail(x1 + 3, 20, x2 - x1 - 6, 18);
    painter.drawText(detail, Qt::AlignLeft | Qt::AlignVCenter,
                     painter.fontMetrics().elidedText((devices == static_cast<std::int64_t>(balance.size())
                                                           ? tr("compute %1 · peak %2")
                                                           : tr("compute %1 · device peak %2"))
                                                          .arg(durationText(sumNs), peak),
                                                      Qt::ElideRight, static_cast<int>(detail.width())));
    first += balance[j];
  }

  // Axis labels.
  painter.setPen(QColor(0x44, 0x44, 0x44));
  painter.drawText(QRectF(4, plotTop, left() - 8, upHeight), Qt::AlignRight | Qt::AlignVCenter,
                   tr("time / layer\n(max %1)").arg(durationText(static_cast<TimeNs>(maxTime))));
  painter.drawText(QRectF(4, middle, left() - 8, downHeight), Qt::AlignRight | Qt::AlignVCenter,
                   tr("memory / layer\n(max %1)").arg(bytesText(static_cast<Bytes>(maxBytes))));

  // Bars.
  const double barWidth = std::max(1.0, w * 0.7);
  for (int l = 0; l < layers; ++l) {
    const double x = left() + l * w + (w - barWidth) / 2.0;
    const double up = upHeight * static_cast<double>(times[static_cast<std::size_t>(l)]) / maxTime;
    const double down = downHeight * static_cast<double>(bytes[static_cast<std::size_t>(l)]) / maxBytes;
    painter.fillRect(QRectF(x, middle - up, barWidth, up), predictedColor());
    painter.fillRect(QRectF(x, middle, barWidth, down), QColor(0x8e, 0x6c, 0xb5));
    if (w >= 18 || l % std::max(1, static_cast<int>(std::ceil(18.0 / w))) == 0) {
      painter.setPen(QColor(0x44, 0x44, 0x44));
      painter.drawText(QRectF(left() + l * w - 10, plotBottom, w + 20, kFooterHeight), Qt::AlignCenter,
                       QString::number(l));
    }
  }
  painter.setPen(QColor(0x99, 0x99, 0x99));
  painter.drawLine(QPointF(left(), middle), QPointF(left() + layers * w, middle));

  // Draggable boundaries.
  for (int b = 0; b + 1 < static_cast<int>(balance.size()); ++b) {
    const double x = boundaryX(b);
    painter.setPen(QPen(QColor(0x22, 0x22, 0x22), b == dragging_ ? 3.0 : 2.0));
    painter.drawLine(QPointF(x, kHeaderHeight - 2), QPointF(x, plotBottom));
    painter.setBrush(QColor(0x22, 0x22, 0x22));
    painter.drawRoundedRect(QRectF(x - 4, middle - 14, 8, 28), 3, 3);
    painter.setBrush(Qt::NoBrush);
  }
}

void BalanceEditor::mousePressEvent(QMouseEvent* event) {
  dragging_ = boundaryNear(event->position().x());
  if (dragging_ >= 0) setCursor(Qt::SplitHCursor);
}

void BalanceEditor::mouseMoveEvent(QMouseEvent* event) {
  const double x = event->position().x();
  if (dragging_ < 0) {
    if (boundaryNear(x) >= 0) setCursor(Qt::SplitHCursor);
    else unsetCursor();
    return;
  }
  const auto layer = static_cast<std::int64_t>(std::lround((x - left()) / columnWidth()));
  const std::vector<std::int64_t>& balance = model_->candidate().balance;
  std::int64_t current = 0;
  for (int j = 0; j <= dragging_; ++j) current += balance[static_cast<std::size_t>(j)];
  if (layer != current) model_->moveBoundary(dragging_, layer);
}

void BalanceEditor::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = -1;
  unsetCursor();
  update();
}

bool BalanceEditor::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int layer = layerAt(help->pos().x());
    if (layer >= 0 && boundaryNear(help->pos().x()) < 0) {
      auto cell = [this, layer](int column) { return model_->index(layer, column).data().toString(); };
      QToolTip::showText(
          help->globalPos(),
          tr("<b>layer %1: %2</b> (stage %3)<br>forward %4 · backward %5<br>saved %6 per micro-batch of %7"
             " · parameters %8")
              .arg(layer)
              .arg(cell(TuningModel::Name).toHtmlEscaped(), cell(TuningModel::StageColumn), cell(TuningModel::Forward),
                   cell(TuningModel::Backward), cell(TuningModel::Saved))
              .arg(model_->microBatch())
              .arg(cell(TuningModel::Params)),
          this);
    } else if (boundaryNear(help->pos().x()) >= 0) {
      QToolTip::showText(help->globalPos(), tr("Drag to move this stage boundary"), this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace pipeprof::gui
