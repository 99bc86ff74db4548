// Placeholder for `pipeprof models`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addModelsCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
