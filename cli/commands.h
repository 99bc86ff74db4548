// The pipeprof subcommands: each file cmd_<name>.cpp adds one to the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof::cli {

/// A mistake the user can fix (bad flag value, unknown model, unreadable or malformed file):
/// the CLI prints the message and exits with code 2. Other exceptions exit with code 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The command ran but has no answer to give (`suggest`: no candidate is predicted to fit): its
/// output is printed, main prints "pipeprof: <what>" and exits with kExitNoAnswer, so that a
/// script can tell an empty answer from a success.
class NoAnswer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The exit code of a command that found no answer (NoAnswer).
constexpr int kExitNoAnswer = 3;

/// Runs `parse()`; a std::invalid_argument it throws becomes a UsageError "<flag>: <its
/// message><hint>", e.g. parseFlag("--checkpoint", [&] { return parseCheckpoint(text); }).
template <typename Parse>
auto parseFlag(const std::string& flag, Parse parse, const std::string& hint = "") {
  try {
    return parse();
  } catch (const std::invalid_argument& error) {
    throw UsageError(flag + ": " + error.what() + hint);
  }
}

/// A subcommand's --help text: what it does, then its examples, then a note.
struct CommandHelp {
  CommandHelp(std::string summary, std::vector<std::string> examples = {}, std::string note = "")
      : summary(std::move(summary)), examples(std::move(examples)), note(std::move(note)) {}

  std::string summary;
  /// One command line each; a long one goes on over lines of its own that start with spaces.
  std::vector<std::string> examples;
  std::string note;  ///< after the examples, e.g. how the threads are chosen; empty: none
};

/// "<summary>\n\nExamples:\n  <example>\n  ...\n\n<note>": every command's help in one layout.
std::string helpText(const CommandHelp& help);

/// Adds subcommand `name` to `parent` with `help`. The subcommand owns a Flags value that its
/// flags bind to, and calls run(flags) when the command line names it. Returns both.
template <typename Flags, typename Run>
std::pair<CLI::App&, Flags&> addCommand(CLI::App& parent, const std::string& name, const CommandHelp& help, Run run) {
  auto flags = std::make_shared<Flags>();
  CLI::App* command = parent.add_subcommand(name, helpText(help));
  command->callback([flags, run] { run(*flags); });
  return {*command, *flags};
}

void addSimulateCommand(CLI::App& app);
void addSuggestCommand(CLI::App& app);
void addProfileCommand(CLI::App& app);
void addRunCommand(CLI::App& app);
void addTraceCommand(CLI::App& app);
/// `trace explain`, under the trace command (cmd_trace_explain.cpp).
void addTraceExplainCommand(CLI::App& trace);
void addScheduleCommand(CLI::App& app);
void addSweepCommand(CLI::App& app);
void addCompareCommand(CLI::App& app);
void addExplainCommand(CLI::App& app);
void addExportCommand(CLI::App& app);
void addCalibrateCommand(CLI::App& app);
void addModelsCommand(CLI::App& app);
void addBenchLinkCommand(CLI::App& app);

}  // namespace pipeprof::cli
