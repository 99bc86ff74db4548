// How much memory this process may use: the host's physical memory, or its control group's limit
// where that is lower (a container's `--memory`, a batch job's allocation).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace pipeprof {

/// The memory limit of this process's control group, read from `cgroupFile` (the format of
/// /proc/self/cgroup) under the hierarchy mounted at `cgroupRoot`: cgroup v2's `memory.max` of
/// the unified group ("0::/path"), else cgroup v1's `memory.limit_in_bytes` of the memory
/// controller's group ("N:memory:/path", or a line that lists memory among its controllers).
/// A group path the mount does not show (a container sees its own group as the root) is read at
/// the root. nullopt: no limit ("max", or v1's page-aligned LONG_MAX), or nothing readable.
std::optional<std::size_t> cgroupMemoryLimitBytes(const std::string& cgroupFile = "/proc/self/cgroup",
                                                  const std::string& cgroupRoot = "/sys/fs/cgroup");

/// The host's physical memory, or cgroupMemoryLimitBytes() where it is lower; nullopt when
/// neither can be read.
std::optional<std::size_t> usableHostMemoryBytes();

}  // namespace pipeprof
