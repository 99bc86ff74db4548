// The timeline tab: candidate picker, zoom buttons and the predicted-above-measured canvas.
#pragma once

#include <QWidget>

namespace pipeprof::gui {

class CandidatePicker;
class TimelineCanvas;
class TimelineModel;

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  TimelineView(TimelineModel* model, QWidget* parent = nullptr);

  CandidatePicker* picker() const { return picker_; }
  TimelineCanvas* canvas() const { return canvas_; }
  QWidget* exportTarget() const;

 private:
  CandidatePicker* picker_;
  TimelineCanvas* canvas_;
};

}  // namespace pipeprof::gui
