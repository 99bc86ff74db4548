// The sample report the GUI tests share (tests/gui/data, written by gui_make_sample).
#pragma once

#include <pipeprof/core/report.h>

#include <QString>

#include <memory>

namespace pipeprof::gui::test {

/// tests/gui/data/sample_report.json: 9 candidates of an 8-layer "mlp" on 2 devices of
/// 112 MiB, batch 32. 0..4 measured, 5 failed, 6..8 predicted only (8 does not fit);
/// candidate 3, [5,3] x4 never, is both best measured and best predicted. Candidates 0, 1
/// and 3 have predicted and measured traces.
inline QString samplePath() { return QStringLiteral(PIPEPROF_SOURCE_DIR "/tests/gui/data/sample_report.json"); }

inline std::shared_ptr<const Report> sampleReport() {
  return std::make_shared<const Report>(readReport(samplePath().toStdString()));
}

constexpr int kSampleCandidates = 9;
constexpr std::size_t kSampleSuggested = 3;

}  // namespace pipeprof::gui::test
