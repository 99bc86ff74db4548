// The sample report the GUI tests share (tests/gui/data, written by gui_make_sample).
#pragma once

#include <pipeprof/core/report.h>
#include <pipeprof/simulator/simulator.h>

#include <QString>

#include <memory>

namespace pipeprof::test {

/// tests/gui/data/sample_report.json: 10 candidates of an 8-layer "mlp" on 2 devices of
/// 112 MiB, batch 32. 0..4 measured, 5 failed, 6..8 predicted only (8 does not fit), 9 is
/// [4,4] x4 except_last 1f1b, measured; the others are gpipe. Candidate 3, [5,3] x4 never, is
/// both best measured and best predicted. Candidates 0, 1 and 3 have predicted and measured
/// traces.
inline QString samplePath() { return QStringLiteral(PIPEPROF_SOURCE_DIR "/tests/gui/data/sample_report.json"); }

inline std::shared_ptr<const Report> sampleReport() {
  return std::make_shared<const Report>(readReport(samplePath().toStdString()));
}

constexpr int kSampleCandidates = 10;
constexpr std::size_t kSampleOneFOneB = 9;

/// The sample report with two interleaved candidates appended (indices 10 and 11, predicted
/// only, no rank): [2,2,2,2] x4 except_last interleaved v2 and [3,2,1,2] x2 never
/// interleaved v2, simulated here.
inline std::shared_ptr<const Report> sampleReportWithInterleaved() {
  Report report = readReport(samplePath().toStdString());
  const std::vector<std::int64_t> balances[] = {{2, 2, 2, 2}, {3, 2, 1, 2}};
  const std::int64_t chunks[] = {4, 2};
  const Checkpoint modes[] = {Checkpoint::ExceptLast, Checkpoint::Never};
  for (int c = 0; c < 2; ++c) {
    CandidateResult result;
    result.candidate.balance = balances[c];
    result.candidate.chunks = chunks[c];
    result.candidate.checkpoint = modes[c];
    result.candidate.batch = 32;
    result.candidate.schedule = ScheduleKind::Interleaved;
    result.candidate.stagesPerDevice = 2;
    result.prediction = simulate(*report.profile, *report.cluster, result.candidate).prediction;
    result.notMeasuredReason = "not in the top 6";
    report.candidates.push_back(result);
  }
  return std::make_shared<const Report>(std::move(report));
}
constexpr std::size_t kSampleSuggested = 3;

}  // namespace pipeprof::test
