// The sweep's measuring phase: the selected candidates in interleaved rounds, the reference
// pipelines between them, and each round checked against the machine it ran on.
//
//   pass 1..R      every candidate's next round; the references spread over each pass
//   then           a round whose threads waited for a CPU (Measurement::stepCpuWaitNs past
//                  kContendedCpuWait: another process competed for the cores) is measured
//                  again, after waiting for the machine's other work to leave (machine_load.h);
//                  a candidate whose rounds disagree (Measurement::roundsAgree) gets more
//                  rounds, up to SweepConfig::roundsAtMost(); what still disagrees or stayed
//                  contended is kept and marked in its measurement
//   run-off        where the best measured candidate's rounds overlap others', it and some of
//                  those (SweepConfig::runOffCandidates: the best predicted first, then the
//                  fastest) get `rounds` more rounds each, in passes as above
//                  (Measurement::runOffRounds)
//
// The report is rewritten when a candidate finishes (measured or failed), between its rounds at
// most every few seconds, never so often that writing it takes more than a twentieth of the
// measuring (report_pace.h), and when measuring stops on Ctrl-C or an exception: a kill or a
// crash loses at most the rounds of the last few seconds, which --resume measures.
#pragma once

#include <pipeprof/core/measuring_conditions.h>
#include <pipeprof/core/report.h>
#include <pipeprof/core/stop_token.h>
#include <pipeprof/tuner/candidate_measurer.h>
#include <pipeprof/tuner/machine_load.h>
#include <pipeprof/tuner/sweep.h>
#include <pipeprof/tuner/sweep_predictions.h>
#include <pipeprof/tuner/sweep_progress.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pipeprof::tuner {

/// Seconds since the sweep began: when each measured round and reference run started, the
/// clock the measurements and the drift correction place them on.
class SweepClock {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// What the measuring phase works with.
struct MeasuringContext {
  Report& report;
  const std::vector<Prediction>& base;  ///< every candidate's prediction before drift
  const SweepConfig& config;
  CalibratedSetup& setup;
  std::filesystem::path reportDir;  ///< trace paths are written relative to it
  CandidateMeasurer& measurer;
  MachineLoad& load;  ///< what a contended round waits on before it is measured again
  SweepProgress& progress;
  const SweepClock& clock;
  const StopToken& stop;
};

/// Measures the selected candidates (report indices) that are not finished yet, as the file
/// comment says. A failed candidate is recorded and not measured again. With a --time
/// (SweepConfig::timeLimitSeconds), before each pass only the best predicted candidates whose
/// remaining rounds are expected to end in the time left go on, and measuring stops before a
/// round that is not; those left short keep their rounds and a reason, and it returns false
/// (else true). Throws SweepInterrupted when `stop` asks; the report on disk then holds what
/// finished.
bool measureInRounds(MeasuringContext& context, const std::vector<std::size_t>& selected);

/// The rounds a partially measured candidate of a resumed report has done (0 for none, or for
/// a partial measurement this sweep cannot continue).
std::int64_t roundsDone(const CandidateResult& result, const SweepConfig& config);

/// Ctrl-C between or during runs: the report on disk holds what finished.
SweepInterrupted interruption(const std::string& when, const SweepConfig& config, SweepProgress& progress);

}  // namespace pipeprof::tuner
