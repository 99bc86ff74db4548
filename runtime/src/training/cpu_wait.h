// How long this process's threads have waited for a CPU: the measure of another process
// competing with a pipeline for the cores.
//
// Linux keeps, per thread, the time it was ready to run but waited on a run queue
// (/proc/self/task/TID/schedstat, its second field). Summed over the process's live threads
// before and after a training step, the difference is what the step's threads lost waiting for
// a CPU: near 0 when the pipeline has the cores to itself (its workers are no more than the
// cores), a large share of the step when another busy process competes (docs/cli.md, "Measuring
// on a shared machine"). A thread born during the step counts from its start; one that ends
// during it is lost -- the pipeline's threads live through every step.
#pragma once

#include <pipeprof/core/units.h>

#include <optional>
#include <string>

namespace pipeprof {

/// The run-queue wait of every live thread of this process, summed, ns; nullopt where the
/// system does not say (no /proc/self/task/*/schedstat).
std::optional<TimeNs> processCpuWaitNs();

/// The run-queue wait of the calling thread, ns (/proc/thread-self/schedstat); nullopt where
/// the system does not say.
std::optional<TimeNs> threadCpuWaitNs();

/// The same over the threads whose schedstat files lie under `taskDir` (a /proc/PID/task).
std::optional<TimeNs> cpuWaitNsOfTasks(const std::string& taskDir);

}  // namespace pipeprof
