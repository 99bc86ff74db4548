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

void addSimulateCommand(CLI::App& app);
void addSuggestCommand(CLI::App& app);
void addProfileCommand(CLI::App& app);
void addRunCommand(CLI::App& app);
void addTraceCommand(CLI::App& app);
void addSweepCommand(CLI::App& app);
void addCompareCommand(CLI::App& app);
void addCalibrateCommand(CLI::App& app);
void addModelsCommand(CLI::App& app);

}  // namespace pipeprof::cli
