// Placeholder for `pipeprof run`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addRunCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
