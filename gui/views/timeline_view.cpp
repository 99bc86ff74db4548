// The timeline tab: candidate picker, zoom buttons and the predicted-above-measured canvas.
#include "views/timeline_view.h"

#include "views/candidate_picker.h"
#include "views/timeline_canvas.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

namespace pipeprof::gui {

TimelineView::TimelineView(TimelineModel* model, QWidget* parent)
    : QWidget(parent), picker_(new CandidatePicker(this)), canvas_(new TimelineCanvas(model, this)) {
  auto button = [this](const QString& text, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    return b;
  };
  QToolButton* zoomIn = button(tr("Zoom in"), tr("Zoom in around the middle (or use the mouse wheel)"));
  QToolButton* zoomOut = button(tr("Zoom out"), tr("Zoom out around the middle"));
  QToolButton* fit = button(tr("Fit"), tr("Show the whole step (or double-click the timeline)"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Candidate:"), this));
  bar->addWidget(picker_);
  bar->addStretch(1);
  bar->addWidget(zoomIn);
  bar->addWidget(zoomOut);
  bar->addWidget(fit);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(canvas_, 1);
  connect(zoomIn, &QToolButton::clicked, this, [this] { canvas_->zoomBy(2.0, canvas_->width() / 2.0); });
  connect(zoomOut, &QToolButton::clicked, this, [this] { canvas_->zoomBy(0.5, canvas_->width() / 2.0); });
  connect(fit, &QToolButton::clicked, canvas_, &TimelineCanvas::fitAll);
}

QWidget* TimelineView::exportTarget() const { return canvas_; }

}  // namespace pipeprof::gui
