// Placeholder for `pipeprof suggest`: implemented by its owner.
#include "commands.h"

namespace pipeprof::cli {

void addSuggestCommand(CLI::App& app) { (void)app; }

}  // namespace pipeprof::cli
