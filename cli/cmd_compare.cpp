// Placeholder for `pipeprof compare`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addCompareCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
