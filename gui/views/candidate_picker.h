// A combo box listing the report's candidates, kept in step with the window's selection.
#pragma once

#include <pipeprof/core/report.h>

#include <QComboBox>

#include <optional>

namespace pipeprof::gui {

/// Items are "label — status"; item data is the candidate index. Picking an item emits
/// candidatePicked; setCurrentCandidate does not.
class CandidatePicker : public QComboBox {
  Q_OBJECT

 public:
  explicit CandidatePicker(QWidget* parent = nullptr);

  void setReport(const Report* report, std::optional<std::size_t> suggested);
  void setCurrentCandidate(std::optional<std::size_t> candidate);

 signals:
  void candidatePicked(std::size_t candidate);
};

}  // namespace pipeprof::gui
