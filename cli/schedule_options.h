// Shared CLI flags for the schedule: --schedule and --stages-per-device of one candidate
// (simulate, run), the --schedules and --stages-per-device lists of a search (suggest, sweep).
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/pipeline_shape.h>
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
  std::string stagesPerDevice;  ///< empty: 1, or 2 with --schedule interleaved, interleaved-zb or zbv
  std::string scheduleFile;     ///< --schedule-file: a custom order (torch's CSV); empty: none
  std::string deferredWeights;  ///< --deferred-weights (zb1p): W's each device defers; empty: torch's
};

/// Adds --schedule, --stages-per-device and --deferred-weights to a subcommand.
void addScheduleFlags(CLI::App& command, ScheduleFlags& flags);
/// Adds --schedule-file ORDER.csv (run, simulate), after addScheduleFlags and --chunks: it
/// excludes --schedule, --stages-per-device and --chunks, which the order fixes.
void addScheduleFileFlag(CLI::App& command, ScheduleFlags& flags);

/// Sets the shape's schedule and stages per device from the flags. Throws UsageError naming the
/// value and the fix: an unknown schedule, a v that is not a positive integer, v != 1 for gpipe,
/// 1f1b and zb1p, v < 2 for interleaved and interleaved-zb, v != 2 for zbv, --deferred-weights
/// that are not counts or go with another schedule than zb1p. With --schedule-file
/// the schedule is custom, with the file's order, its v, and its micro-batches as the chunks
/// (FormatError or UsageError naming the file, the rank and the action for an order that breaks
/// a rule).
void applyScheduleFlags(const ScheduleFlags& flags, PipelineShape& shape);

/// Checks the balance of one candidate's shape against its schedule: balance.size() must be
/// p * v (with `devices` = p pipeline devices when known, > 0; `devicesText` says where p came
/// from, e.g. "--devices cpu,cpu"), and the schedule must run the micro-batches that a batch of
/// `batch` samples in shape.chunks chunks makes (scheduleShapeError, e.g. interleaved chunks a
/// multiple of p), and --deferred-weights must name each of the p devices (deferredWeightsError).
/// Throws UsageError naming the values and the fix.
void checkScheduleShape(const PipelineShape& shape, std::int64_t batch, std::int64_t devices,
                        const std::string& devicesText);

/// The same check before the balance is known (--balance auto): n = devices * v stages.
void checkScheduleShape(const PipelineShape& shape, std::int64_t batch, std::int64_t devices);

/// One candidate's flags (simulate, trace explain): --balance, --chunks, --checkpoint and the
/// schedule's.
struct CandidateFlags {
  std::string balance;
  std::int64_t chunks = 1;
  std::string checkpoint = "except_last";
  ScheduleFlags schedule;
};

/// Adds --balance (required; `balanceHelp` says what it is), --chunks, --checkpoint, the
/// schedule flags and --schedule-file to a subcommand.
void addCandidateFlags(CLI::App& command, CandidateFlags& flags, const std::string& balanceHelp);

/// The candidate of `batch` samples the flags describe, checked (checkScheduleShape; chunks
/// from 1 to the batch). Throws UsageError naming the flag.
Candidate candidateFromFlags(const CandidateFlags& flags, std::int64_t batch);

/// What --schedules and --stages-per-device hold after parsing (declared with the search flags,
/// search_flags.h).
struct ScheduleListFlags {
  std::string schedules = "gpipe,1f1b,interleaved,zb1p,interleaved-zb,zbv";
  std::string stagesPerDevice = "1,2";
};

/// Sets space.schedules and space.stagesPerDevice from the flags. gpipe, 1f1b and zb1p always run
/// with one stage per device, zbv with two; interleaved and interleaved-zb with each v >= 2 of the list. Throws
/// UsageError for an unknown schedule, a v that is not a positive integer, or interleaved(-zb)
/// asked for with no v >= 2.
void applyScheduleListFlags(const ScheduleListFlags& flags, SearchSpace& space);

}  // namespace pipeprof::cli
