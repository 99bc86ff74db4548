// Binding the ranks of one host to their own CPUs, as `numactl --physcpubind` or torchrun's
// binding options would.
//
// Two ranks on two cores, unbound, let the scheduler put a rank's Gloo I/O thread, woken by a
// message, on the core where the other rank computes; each rank on a core of its own measured
// a 1f1b step 10% faster (docs/notes/runtime-history.md, "Ranks bound to CPUs"). The launcher binds
// the ranks it starts (local_run.h); a torchrun rank binds itself when its job asks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pipeprof::launch {

/// Whether ranks get CPUs of their own: Cores splits the host's CPUs among its ranks in
/// contiguous blocks (cpuShare); None leaves the placement to the scheduler.
enum class CpuBinding { Cores, None };

/// "cores" or "none".
std::string cpuBindingName(CpuBinding binding);
/// The binding named `name` ("cores" or "none"). Throws std::invalid_argument naming the value.
CpuBinding parseCpuBinding(const std::string& name);

/// The CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowedCpus();

/// Rank `localRank`'s share when `localWorldSize` ranks split `cpus` in contiguous blocks, the
/// first ones one CPU larger; empty when there are fewer CPUs than ranks (then no rank is bound).
std::vector<int> cpuShare(const std::vector<int>& cpus, int localRank, int localWorldSize);

/// Every one of `workers` shares of this process's CPUs (cpuShare of allowedCpus, one list each):
/// the ranks the launcher starts (RankJob::rankCpus), or the workers of one process's pipeline
/// devices (PipeOptions::workerCpus). Empty when there are fewer CPUs than workers (none is bound).
std::vector<std::vector<int>> cpuShares(std::size_t workers);

/// Binds the calling process to `cpus`: every thread it has, and those it starts afterwards (they
/// inherit the mask). Throws std::system_error naming the CPUs when the kernel refuses.
void bindToCpus(const std::vector<int>& cpus);

/// "0-3,8" for {0, 1, 2, 3, 8}; parseCpuList reads it back and throws std::invalid_argument
/// naming the text for anything else.
std::string formatCpuList(const std::vector<int>& cpus);
std::vector<int> parseCpuList(const std::string& text);

}  // namespace pipeprof::launch
