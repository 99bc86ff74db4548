// Reading how busy the machine's CPUs are from /proc/stat.
#include <pipeprof/tuner/machine_load.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace pipeprof::tuner {

std::optional<TimeNs> parseProcStatBusyNs(const std::string& text, TimeNs tickNs) {
  // cpu  user nice system idle iowait irq softirq steal ...
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name != "cpu") continue;
    long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
    if (!(fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) return std::nullopt;
    return static_cast<TimeNs>(user + nice + system + irq + softirq) * tickNs;
  }
  return std::nullopt;
}

ProcStatLoad::ProcStatLoad(std::string path) : path_(std::move(path)) {}

std::optional<TimeNs> ProcStatLoad::busyNs() {
  std::ifstream file(path_);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  const long ticksPerS = sysconf(_SC_CLK_TCK);
  if (ticksPerS <= 0) return std::nullopt;
  return parseProcStatBusyNs(text.str(), 1'000'000'000 / ticksPerS);
}

}  // namespace pipeprof::tuner
