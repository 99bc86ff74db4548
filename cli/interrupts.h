// Ctrl-C and SIGTERM for the whole CLI: one handler that asks the running command to stop.
#pragma once

#include <pipeprof/core/stop_token.h>

#include <stdexcept>

namespace pipeprof::cli {

/// The exit code of an interrupted command (128 + SIGINT, as a shell reports a Ctrl-C).
constexpr int kExitInterrupted = 130;

/// The command stopped on Ctrl-C or SIGTERM: main prints "pipeprof: <what>" (one line saying
/// what was kept) and exits with kExitInterrupted.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Installs, on the first call, SIGINT and SIGTERM handlers that request stop on this process's
/// StopSource and then restore the default actions (so a second Ctrl-C ends the process at
/// once); returns a token of that source. The libraries only ever see the token: none of them
/// installs a signal handler.
StopToken interruptToken();

}  // namespace pipeprof::cli
