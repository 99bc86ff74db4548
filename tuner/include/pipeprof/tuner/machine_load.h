// How busy this machine's CPUs are with other work: what the sweep waits on before it measures
// again a round that another process competed with.
//
// A measured round knows how long its own threads waited for a CPU (Measurement::stepCpuWaitNs);
// once such a round is to be measured again, the sweep first waits (a few seconds at most) for
// the machine's other work to leave the CPUs. Linux's /proc/stat counts, per CPU, the time spent
// in user and system code of every process: the busy time that is not the sweep's while the
// sweep sleeps. Work run under `nice` is counted apart, and left out here: it yields the CPU to
// the sweep's threads (a niced build beside a sweep slowed its steps by under 10%, one busy loop
// at the same priority by 70%).
#pragma once

#include <pipeprof/core/units.h>

#include <optional>
#include <string>

namespace pipeprof::tuner {

class MachineLoad {
 public:
  virtual ~MachineLoad() = default;
  /// CPU time every process of the machine has spent in user and system code (niced work left
  /// out), summed over the CPUs, ns, on a clock that only moves forward; nullopt where the
  /// machine does not say.
  virtual std::optional<TimeNs> busyNs() = 0;
};

/// Reads /proc/stat (or `path`): its "cpu" line's user, system, irq and softirq ticks.
class ProcStatLoad : public MachineLoad {
 public:
  explicit ProcStatLoad(std::string path = "/proc/stat");
  std::optional<TimeNs> busyNs() override;

 private:
  std::string path_;
};

/// The busy time of a /proc/stat text's "cpu" line (ticks of `tickNs`): user + system + irq +
/// softirq, ns; nullopt when it has no such line.
std::optional<TimeNs> parseProcStatBusyNs(const std::string& text, TimeNs tickNs);

}  // namespace pipeprof::tuner
