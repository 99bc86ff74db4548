// The calibration's evidence kept beside the report: every reference pipeline the sweep timed,
// as a measured trace naming its candidate, so that `pipeprof calibrate --refit` can fit the
// calibration again without timing anything (after a change to the fit, or to see what each
// reference measured).
//
//   <traces dir>/calibration/ref003_b8-7_m4_except_last_1f1b.measured.json
//       a Chrome trace (docs/formats.md) whose otherData holds "reference_candidate": the
//       candidate's JSON (docs/formats.md, "Candidate"), "reference_index": its place in the
//       order the references ran, "reference_at_s": when it ran (the middle of its run, seconds
//       after the calibration began; the probe's samples of the machine's speed,
//       simulator/reference_speed.h, come from these)
#pragma once

#include <pipeprof/simulator/calibration_fit.h>

#include <cstddef>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// Where a sweep whose traces go to `tracesDir` keeps its reference traces.
std::string referenceTracesDir(const std::string& tracesDir);

/// Writes `run` as the index-th reference into `dir` (created when missing).
void writeReferenceTrace(const ReferenceRun& run, std::size_t index, const std::string& dir);

/// Every reference trace in `dir`, in the order they ran. Throws std::runtime_error when `dir`
/// holds none, and FormatError naming the file for a trace that names no candidate.
std::vector<ReferenceRun> readReferenceTraces(const std::string& dir);

}  // namespace pipeprof::tuner
