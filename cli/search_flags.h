// The search-space flags shared by suggest, sweep and calibrate: --chunks, --checkpoint, --balances,
// --schedules and --stages-per-device.
#pragma once

#include "schedule_options.h"

#include <pipeprof/simulator/search.h>

#include <CLI/CLI.hpp>

#include <string>

namespace pipeprof::cli {

/// What the search-space flags hold after parsing (text until validated).
struct SearchFlags {
  std::string chunks = "1,2,4,8";
  std::string checkpoint = "always,except_last,never";
  std::string balances = "auto";
  ScheduleListFlags schedules;
};

/// Adds --chunks, --checkpoint, --schedules and --stages-per-device, each described with
/// `purpose` ("Chunk counts to try"), and with `balances` --balances, to a subcommand.
void addSearchFlags(CLI::App& command, SearchFlags& flags, const std::string& purpose, bool balances = true);

/// The search space the flags describe: chunks, checkpoint modes, balances (auto, all or the
/// given ones), schedules and stages per device; the batch and devices are the caller's.
/// Throws UsageError naming the flag, its text and the expected form.
SearchSpace searchSpaceFromFlags(const SearchFlags& flags);

}  // namespace pipeprof::cli
