// Placeholder for `pipeprof profile`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addProfileCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
