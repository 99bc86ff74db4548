// Binding the ranks of one host to their own CPUs.
#include <pipeprof/launch/cpu_binding.h>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace pipeprof::launch {

std::string cpuBindingName(CpuBinding binding) { return binding == CpuBinding::Cores ? "cores" : "none"; }

CpuBinding parseCpuBinding(const std::string& name) {
  if (name == "cores") return CpuBinding::Cores;
  if (name == "none") return CpuBinding::None;
  throw std::invalid_argument("unknown CPU binding '" + name + "': expected cores or none");
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> cpuShare(const std::vector<int>& cpus, int localRank, int localWorldSize) {
  const auto count = static_cast<int>(cpus.size());
  if (localWorldSize < 1 || localRank < 0 || localRank >= localWorldSize || count < localWorldSize) return {};
  const int base = count / localWorldSize;
  const int larger = count % localWorldSize;  // the first `larger` ranks take base + 1
  const int first = localRank * base + std::min(localRank, larger);
  const int size = base + (localRank < larger ? 1 : 0);
  return {cpus.begin() + first, cpus.begin() + first + size};
}

std::vector<std::vector<int>> cpuShares(std::size_t workers) {
  const std::vector<int> cpus = allowedCpus();
  if (workers == 0 || cpus.size() < workers) return {};
  std::vector<std::vector<int>> shares;
  const auto count = static_cast<int>(workers);
  for (int d = 0; d < count; ++d) shares.push_back(cpuShare(cpus, d, count));
  return shares;
}

void bindToCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) throw std::invalid_argument("no CPU " + std::to_string(cpu) + " to bind to");
    CPU_SET(cpu, &set);
  }
  // Every thread the process has (OpenBLAS starts its pool when it loads), then the calling
  // one last: threads started afterwards inherit its mask.
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  std::error_code ignored;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ignored)) {
    const pid_t thread = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (thread != self) (void)sched_setaffinity(thread, sizeof(set), &set);  // it may have ended
  }
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    throw std::system_error(errno, std::generic_category(), "binding to CPUs " + formatCpuList(cpus));
  }
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t k = 0; k < cpus.size();) {
    std::size_t end = k + 1;
    while (end < cpus.size() && cpus[end] == cpus[end - 1] + 1) ++end;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[k]);
    if (end - k > 1) text += "-" + std::to_string(cpus[end - 1]);
    k = end;
  }
  return text;
}

std::vector<int> parseCpuList(const std::string& text) {
  const auto invalid = [&] { return std::invalid_argument("'" + text + "' is not a CPU list such as 0-3,8"); };
  auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 6 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw invalid();
    }
    return std::stoi(part);
  };
  std::vector<int> cpus;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first || (!cpus.empty() && first <= cpus.back())) throw invalid();
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    start = comma + 1;
  }
  return cpus;
}

}  // namespace pipeprof::launch
