// Facts about where a sweep runs: pipeprof's git revision, threads, time.
#include <pipeprof/tuner/environment_info.h>

#include <pipeprof_git_revision.h>

#include <algorithm>
#include <ctime>
#include <thread>

namespace pipeprof::tuner {

std::string pipeprofRevision() { return PIPEPROF_GIT_REVISION; }

std::string utcNowIso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::int64_t hardwareThreads() {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::thread::hardware_concurrency()));
}

std::int64_t sweepThreads(std::int64_t requested, std::int64_t devices, std::int64_t cores) {
  if (requested > 0) return requested;
  return std::max<std::int64_t>(1, cores / std::max<std::int64_t>(1, devices));
}

}  // namespace pipeprof::tuner
