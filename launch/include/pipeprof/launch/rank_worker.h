// Where the pipeprof-rank worker is: the executable a launcher starts once per rank.
#pragma once

#include <string>

/// The worker's path as the including program was built: the build tree's pipeprof-rank for a
/// target of pipeprof's own build, the installed one for a program built against an installed
/// pipeprof (an interface compile definition of pipeprof::launch). Empty when not set.
#ifndef PIPEPROF_LAUNCH_RANK_WORKER
#define PIPEPROF_LAUNCH_RANK_WORKER ""
#endif

namespace pipeprof::launch {

/// The environment variable that names the worker, before any other place.
inline constexpr const char* kRankWorkerVariable = "PIPEPROF_RANK_WORKER";

/// The pipeprof-rank executable to start ranks with: $PIPEPROF_RANK_WORKER when it is set;
/// else <directory of this executable>/../libexec/pipeprof/pipeprof-rank when that exists (an
/// installed pipeprof); else `compiledIn` when that exists. The default argument is evaluated
/// where the call is compiled, so a program built against an installed pipeprof finds the
/// installed worker. Throws std::runtime_error naming every place tried (or the variable, when
/// it names no executable file).
std::string findRankWorker(const std::string& compiledIn = PIPEPROF_LAUNCH_RANK_WORKER);

}  // namespace pipeprof::launch
