// How busy this machine's CPUs are with other work: what the sweep waits on before it measures
// again a round that another process competed with.
//
// A measured round knows how long its own threads waited for a CPU (Measurement::stepCpuWaitNs);
// once such a round is to be measured again, the sweep first waits (a few seconds at most) for
// the machine's other work to leave the CPUs. Linux's /proc/stat counts, per CPU, the time spent
// in user code (niced or not) and system code of every process: the busy time that is not the
// sweep's while the sweep sleeps. Niced work counts too: beside a pipeline, a busy loop under
// `nice -n 18` made its steps 1.4-1.6x as long, as one at the same priority did (on Linux 6.18's
// scheduler a niced task keeps its time slice when a pipeline's thread wakes).
#pragma once

#include <pipeprof/core/units.h>

#include <optional>
#include <string>

namespace pipeprof::tuner {

class MachineLoad {
 public:
  virtual ~MachineLoad() = default;
  /// CPU time every process of the machine has spent in user (niced or not) and system code,
  /// summed over the CPUs, ns, on a clock that only moves forward; nullopt where the machine
  /// does not say.
  virtual std::optional<TimeNs> busyNs() = 0;
};

/// Reads /proc/stat (or `path`): its "cpu" line's user, nice, system, irq and softirq ticks.
class ProcStatLoad : public MachineLoad {
 public:
  explicit ProcStatLoad(std::string path = "/proc/stat");
  std::optional<TimeNs> busyNs() override;

 private:
  std::string path_;
};

/// The busy time of a /proc/stat text's "cpu" line (ticks of `tickNs`): user + nice + system +
/// irq + softirq, ns; nullopt when it has no such line.
std::optional<TimeNs> parseProcStatBusyNs(const std::string& text, TimeNs tickNs);

}  // namespace pipeprof::tuner
