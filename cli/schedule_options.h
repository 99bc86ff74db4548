// Shared CLI flags for the schedule: --schedule and --stages-per-device of one candidate
// (simulate, run), the --schedules and --stages-per-device lists of a search (suggest, sweep).
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/schedule.h>
#include <pipeprof/simulator/search.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pipeprof::cli {

/// What --schedule and --stages-per-device hold after parsing (text until validated).
struct ScheduleFlags {
  std::string schedule = "gpipe";
  std::string stagesPerDevice;  ///< empty: 1, or 2 with --schedule interleaved
};

/// A validated (schedule, v) of one candidate.
struct ScheduleChoice {
  ScheduleKind kind = ScheduleKind::GPipe;
  std::int64_t stagesPerDevice = 1;
};

/// Adds --schedule and --stages-per-device to a subcommand.
void addScheduleFlags(CLI::App& command, ScheduleFlags& flags);

/// The schedule the flags ask for. Throws UsageError naming the value and the fix: an unknown
/// schedule, a v that is not a positive integer, v != 1 for gpipe and 1f1b, v < 2 for
/// interleaved.
ScheduleChoice scheduleFromFlags(const ScheduleFlags& flags);

/// Checks a balance of one candidate against the schedule: balance.size() must be p * v (with
/// `devices` = p pipeline devices when known, > 0; `devicesText` says where p came from, e.g.
/// "--devices cpu,cpu"), and the schedule must run the micro-batches that exist
/// (scheduleShapeError, e.g. interleaved chunks a multiple of p). Throws UsageError naming
/// the values and the fix.
void checkScheduleShape(const ScheduleChoice& schedule, const std::vector<std::int64_t>& balance, std::int64_t batch,
                        std::int64_t chunks, std::int64_t devices, const std::string& devicesText);

/// The same check before the balance is known (--balance auto): n = devices * v stages.
void checkScheduleShape(const ScheduleChoice& schedule, std::int64_t devices, std::int64_t batch, std::int64_t chunks);

/// What --schedules and --stages-per-device hold after parsing.
struct ScheduleListFlags {
  std::string schedules = "gpipe,1f1b,interleaved";
  std::string stagesPerDevice = "1,2";
};

/// Adds --schedules and --stages-per-device (lists) to a subcommand.
void addScheduleListFlags(CLI::App& command, ScheduleListFlags& flags);

/// Sets space.schedules and space.stagesPerDevice from the flags. gpipe and 1f1b always run
/// with one stage per device; interleaved with each v >= 2 of the list. Throws UsageError for an
/// unknown schedule, a v that is not a positive integer, or interleaved asked for with no v >= 2.
void applyScheduleListFlags(const ScheduleListFlags& flags, SearchSpace& space);

}  // namespace pipeprof::cli
