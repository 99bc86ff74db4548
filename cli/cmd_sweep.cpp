// Placeholder for `pipeprof sweep`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addSweepCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
