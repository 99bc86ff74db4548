// Placeholder for `pipeprof simulate`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addSimulateCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
