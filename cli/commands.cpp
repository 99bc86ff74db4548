// The pipeprof subcommands' common layout: their help text.
#include "commands.h"

namespace pipeprof::cli {

std::string helpText(const CommandHelp& help) {
  std::string text = help.summary;
  if (!help.examples.empty()) text += "\n\nExamples:";
  for (const std::string& example : help.examples) text += "\n  " + example;
  if (!help.note.empty()) text += "\n\n" + help.note;
  return text;
}

}  // namespace pipeprof::cli
