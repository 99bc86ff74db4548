// The pipeprof subcommands: each file cmd_<name>.cpp adds one to the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>

namespace pipeprof::cli {

/// A mistake the user can fix (bad flag value, unknown model, unreadable or malformed file):
/// the CLI prints the message and exits with code 2. Other exceptions exit with code 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

void addSimulateCommand(CLI::App& app);
void addSuggestCommand(CLI::App& app);
void addProfileCommand(CLI::App& app);
void addRunCommand(CLI::App& app);
void addTraceCommand(CLI::App& app);
void addSweepCommand(CLI::App& app);
void addCompareCommand(CLI::App& app);
void addCalibrateCommand(CLI::App& app);
void addModelsCommand(CLI::App& app);
void addBenchLinkCommand(CLI::App& app);

}  // namespace pipeprof::cli
