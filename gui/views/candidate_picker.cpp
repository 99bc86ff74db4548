// A combo box listing the report's candidates, kept in step with the window's selection.
#include "views/candidate_picker.h"

#include "models/format.h"

#include <QSignalBlocker>

namespace pipeprof::gui {

CandidatePicker::CandidatePicker(QWidget* parent) : QComboBox(parent) {
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  setMinimumContentsLength(28);
  connect(this, &QComboBox::activated, this, [this](int row) {
    if (row >= 0) emit candidatePicked(static_cast<std::size_t>(itemData(row).toULongLong()));
  });
}

void CandidatePicker::setReport(const Report* report, std::optional<std::size_t> suggested) {
  const QSignalBlocker blocker(this);
  clear();
  if (report == nullptr) return;
  for (std::size_t index = 0; index < report->candidates.size(); ++index) {
    const CandidateResult& result = report->candidates[index];
    QString text = qs(result.candidate.label()) + QStringLiteral(" — ") + qs(candidateStatusName(result.status));
    if (suggested == index) text += tr(" ★ suggested");
    addItem(text, QVariant::fromValue<qulonglong>(index));
  }
}

void CandidatePicker::setCurrentCandidate(std::optional<std::size_t> candidate) {
  const QSignalBlocker blocker(this);
  setCurrentIndex(candidate ? findData(QVariant::fromValue<qulonglong>(*candidate)) : -1);
}

}  // namespace pipeprof::gui
