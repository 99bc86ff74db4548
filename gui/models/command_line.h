// The pipeprof command lines that run or sweep a candidate, for copying from the GUI.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/report.h>

#include <QString>

namespace pipeprof::gui {

/// `pipeprof run --model M --devices D --batch B --balance 2,6 --chunks 8 --checkpoint
/// except_last --trace trace.json`: measures the candidate once with a timeline. Other
/// schedules than gpipe add `--schedule S --stages-per-device V` (`--schedules` for a sweep).
QString runCommandLine(const ReportEnvironment& environment, const Candidate& candidate);
/// `pipeprof sweep ... --balances 2,6 --chunks 8 --checkpoint except_last --measure all -o
/// report.json`: profiles, simulates and measures the candidate into a new report.
QString sweepCommandLine(const ReportEnvironment& environment, const Candidate& candidate);

}  // namespace pipeprof::gui
