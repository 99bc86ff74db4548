// Ctrl-C and SIGTERM for the whole CLI: one handler that asks the running command to stop.
#include "interrupts.h"

#include <csignal>
#include <mutex>

namespace pipeprof::cli {
namespace {

/// The process's source. A signal handler can reach only a global; nothing else reads it.
StopSource* gInterruptSource = nullptr;

void restoreDefaultActions() {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

extern "C" void onInterrupt(int) {
  gInterruptSource->requestStop();  // one atomic store and two sigaction calls: async-signal-safe
  restoreDefaultActions();
}

}  // namespace

StopToken interruptToken() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    gInterruptSource = new StopSource();  // lives as long as the process: a handler may run at exit
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
  });
  return gInterruptSource->token();
}

}  // namespace pipeprof::cli
