// How much memory this process may use (host_memory_size.h).
#include "memory/host_memory_size.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <sstream>

namespace pipeprof {
namespace {

/// cgroup v1 writes "no limit" as LONG_MAX rounded down to a page: anything this large is none.
constexpr std::size_t kNoLimitBytes = std::size_t{1} << 62;

/// The limit a cgroup file holds: nullopt when it cannot be read, 0 for none ("max", or v1's
/// page-aligned LONG_MAX).
std::optional<std::size_t> readLimit(const std::string& path) {
  std::ifstream file(path);
  std::string text;
  if (!(file >> text)) return std::nullopt;
  if (text == "max") return 0;
  try {
    const unsigned long long bytes = std::stoull(text);
    return bytes >= kNoLimitBytes ? 0 : static_cast<std::size_t>(bytes);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The group's limit, read at the root of the mount where the mount does not show the group.
std::optional<std::size_t> limitOfGroup(const std::string& mount, const std::string& group, const std::string& file) {
  std::optional<std::size_t> limit = readLimit(mount + group + "/" + file);
  if (!limit && !group.empty()) limit = readLimit(mount + "/" + file);
  if (!limit || *limit == 0) return std::nullopt;
  return limit;
}

bool listsMemory(const std::string& controllers) {
  std::stringstream list(controllers);
  for (std::string controller; std::getline(list, controller, ',');) {
    if (controller == "memory") return true;
  }
  return false;
}

}  // namespace

std::optional<std::size_t> cgroupMemoryLimitBytes(const std::string& cgroupFile, const std::string& cgroupRoot) {
  std::ifstream file(cgroupFile);
  std::optional<std::string> unified;
  std::optional<std::string> memory;
  for (std::string line; std::getline(file, line);) {
    // hierarchy-id:controllers:path
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (path == "/") path.clear();
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      unified = path;
    } else if (listsMemory(controllers)) {
      memory = path;
    }
  }
  if (memory) {
    if (std::optional<std::size_t> limit = limitOfGroup(cgroupRoot + "/memory", *memory, "memory.limit_in_bytes")) {
      return limit;
    }
  }
  if (unified) return limitOfGroup(cgroupRoot, *unified, "memory.max");
  return std::nullopt;
}

std::optional<std::size_t> usableHostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageBytes = sysconf(_SC_PAGESIZE);
  std::optional<std::size_t> bytes;
  if (pages > 0 && pageBytes > 0) bytes = static_cast<std::size_t>(pages) * static_cast<std::size_t>(pageBytes);
  if (const std::optional<std::size_t> limit = cgroupMemoryLimitBytes())
    bytes = std::min(bytes.value_or(*limit), *limit);
  return bytes;
}

}  // namespace pipeprof
