// `pipeprof schedule export`: the order pipeprof runs a schedule in, as torch.distributed.pipelining's action CSV.
#include "commands.h"
#include "output_file.h"
#include "schedule_options.h"

#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule_csv.h>

#include <fmt/format.h>

#include <iostream>
#include <string>

namespace pipeprof::cli {
namespace {

struct ScheduleExportFlags {
  ScheduleFlags schedule;
  std::int64_t devices = 0;
  std::int64_t chunks = 0;
  std::string format = "pytorch-csv";
  std::string output;  ///< empty: standard output
};

void runScheduleExport(const ScheduleExportFlags& flags) {
  if (!flags.output.empty()) checkOutputFile("-o", flags.output);
  if (flags.format != "pytorch-csv") {
    throw UsageError(fmt::format("--format {}: unknown format; expected pytorch-csv", flags.format));
  }
  if (flags.devices < 1) throw UsageError(fmt::format("--devices {}: give a positive count", flags.devices));
  if (flags.chunks < 1) throw UsageError(fmt::format("--chunks {}: give a positive count", flags.chunks));
  ScheduleSpec spec;
  applyScheduleFlags(flags.schedule, spec);
  spec.balance.assign(static_cast<std::size_t>(flags.devices * spec.stagesPerDevice), 1);  // the order ignores it
  spec.chunks = flags.chunks;
  checkScheduleShape(spec, flags.chunks, flags.devices);
  const std::string error = spec.shapeError();
  if (!error.empty()) throw UsageError(fmt::format("--chunks {}: {}", flags.chunks, error));
  const std::string csv = writeScheduleCsv(scheduleActions(Schedule::build(spec)));
  if (flags.output.empty()) {
    std::cout << csv;
    return;
  }
  writeFileAtomically(flags.output, csv);
  std::cout << fmt::format("{}: {} on {} devices, {} micro-batches, one row per rank\n", flags.output,
                           spec.orderLabel(), flags.devices, flags.chunks);
}

}  // namespace

void addScheduleCommand(CLI::App& app) {
  CLI::App* schedule = app.add_subcommand("schedule", "Work with schedules (the per-device orders of ops)");
  schedule->require_subcommand(1);
  auto [command, flags] = addCommand<ScheduleExportFlags>(
      *schedule, "export",
      {"The order pipeprof runs a schedule in, as torch.distributed.pipelining's action CSV: one row per\n"
       "rank, each action <stage><F|B|I|W><micro-batch> (F forward, B backward, I its input half, W its\n"
       "weight half). torch reads it with PipelineScheduleMulti._load_csv.",
       {"pipeprof schedule export --schedule zb1p --devices 4 --chunks 8",
        "pipeprof schedule export --schedule interleaved-zb --devices 2 --chunks 4 --stages-per-device 2\n"
        "    -o order.csv"}},
      runScheduleExport);
  addScheduleFlags(command, flags.schedule);
  command.add_option("--devices", flags.devices, "Pipeline devices p (ranks)")->required()->type_name("P");
  command.add_option("--chunks", flags.chunks, "Micro-batches m")->required()->type_name("M");
  command.add_option("--format", flags.format, "pytorch-csv")->capture_default_str();
  command.add_option("-o,--output", flags.output, "File to write (default: standard output)");
}

}  // namespace pipeprof::cli
