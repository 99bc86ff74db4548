// pipeprof's entry point: builds the command line and maps exceptions to exit codes.
#include "commands.h"
#include "interrupts.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/runtime/memory_tracker.h>
#include <pipeprof/runtime/torch_environment.h>

#include <exception>
#include <iostream>

namespace {

constexpr int kExitRuntimeFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
  pipeprof::keepFreedHostMemory();   // every command, so profiles, threaded runs and ranks allocate alike
  pipeprof::keepBlasOnOneThread();   // and run ops on LibTorch's intra-op threads alone
  pipeprof::installMemoryTracker();  // before any tensor: every CPU block then comes from its allocator
  namespace cli = pipeprof::cli;
  CLI::App app{cli::helpText({"pipeprof: tune pipeline parallelism -- profile a model, simulate candidate schedules\n"
                              "(GPipe, 1F1B, interleaved 1F1B), balances, chunk counts and checkpoint modes, measure\n"
                              "them, and suggest the best.",
                              {"pipeprof sweep --model mlp --devices cpu,cpu --batch 64 -o out/report.json",
                               "pipeprof simulate --profile profile.json --devices 4 --batch 32 --balance 2,2,2,2 "
                               "--chunks 8",
                               "pipeprof compare out/report.json"}}),
               "pipeprof"};
  app.set_version_flag("--version", PIPEPROF_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  cli::addSweepCommand(app);
  cli::addCompareCommand(app);
  cli::addExplainCommand(app);
  cli::addExportCommand(app);
  cli::addSimulateCommand(app);
  cli::addSuggestCommand(app);
  cli::addProfileCommand(app);
  cli::addCalibrateCommand(app);
  cli::addRunCommand(app);
  cli::addTraceCommand(app);
  cli::addScheduleCommand(app);
  cli::addModelsCommand(app);
  cli::addBenchLinkCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kExitUsage;
  } catch (const cli::UsageError& error) {
    std::cerr << "pipeprof: error: " << error.what() << "\n";
    return kExitUsage;
  } catch (const pipeprof::FormatError& error) {
    std::cerr << "pipeprof: error: " << error.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& error) {
    std::cerr << "pipeprof: error: " << error.what() << "\n";
    return kExitUsage;
  } catch (const cli::NoAnswer& noAnswer) {
    std::cerr << "pipeprof: " << noAnswer.what() << "\n";
    return cli::kExitNoAnswer;
  } catch (const cli::Interrupted& interrupted) {
    std::cerr << "pipeprof: " << interrupted.what() << "\n";
    return cli::kExitInterrupted;
  } catch (const std::exception& error) {
    std::cerr << "pipeprof: failed: " << error.what() << "\n";
    return kExitRuntimeFailure;
  }
  return 0;
}
