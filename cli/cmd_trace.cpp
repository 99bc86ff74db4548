// Placeholder for `pipeprof trace`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addTraceCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
