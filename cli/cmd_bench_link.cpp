// `pipeprof bench-link`: the latency and bandwidth of the ranks' transport, written into a cluster file.
#include "commands.h"
#include "interrupts.h"
#include "output_file.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/units.h>
#include <pipeprof/launch/local_run.h>
#include <pipeprof/launch/rank_worker.h>
#include <pipeprof/launch/run_rank_job.h>
#include <pipeprof/runtime/c10d_transport.h>
#include <pipeprof/runtime/link_benchmark.h>
#include <pipeprof/runtime/rank_environment.h>

#include <fmt/format.h>

#include <iostream>

namespace pipeprof::cli {
namespace {

struct BenchLinkFlags {
  int procs = 2;
  std::string device = "cpu";
  int repeats = 5;
  double timeoutS = 60;
  std::string output;
  bool json = false;
};

/// The cluster of `procs` devices of the measured type joined by the measured link, one process
/// each.
Cluster measuredCluster(const BenchLinkFlags& flags, const Link& link) {
  Cluster cluster = Cluster::uniform(flags.procs, std::nullopt, link.bandwidthBytesPerS, link.latencyNs, flags.device);
  cluster.processPerDevice = true;
  return cluster;
}

void report(const BenchLinkFlags& flags, const LinkMeasurement& measurement, const std::string& transport) {
  const Link& link = measurement.link;
  if (!flags.output.empty()) writeCluster(measuredCluster(flags, link), flags.output);
  if (flags.json) {
    nlohmann::json out = launch::toJson(measurement);
    out["transport"] = transport;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} between ranks 0 and 1 ({} devices), one-way time (the fastest of {} round trips):\n",
                           transport, flags.device, flags.repeats);
  for (const LinkSample& sample : measurement.samples) {
    std::cout << fmt::format(
        "  {:>10}  {:>10}  {:>8.2f} GB/s\n", formatBytes(sample.bytes), formatDuration(sample.oneWayNs),
        static_cast<double>(sample.bytes) / static_cast<double>(std::max<TimeNs>(sample.oneWayNs, 1)));
  }
  std::cout << fmt::format("link: latency {}, bandwidth {:.2f} GB/s\n", formatDuration(link.latencyNs),
                           link.bandwidthBytesPerS / 1e9);
  if (!flags.output.empty()) std::cout << "cluster: " << flags.output << "\n";
}

void runBenchLink(const BenchLinkFlags& flags) {
  if (!flags.output.empty()) checkOutputFile("-o", flags.output);
  if (flags.procs < 2) throw UsageError("--procs must be at least 2, got " + std::to_string(flags.procs));
  if (flags.repeats < 1) throw UsageError("--repeats must be at least 1, got " + std::to_string(flags.repeats));
  if (!(flags.timeoutS > 0)) throw UsageError("--timeout must be positive seconds");
  if (flags.device != "cpu" && flags.device != "cuda") {
    throw UsageError("--device must be cpu or cuda (each rank uses cuda:LOCAL_RANK), got '" + flags.device + "'");
  }
  launch::RankJob job;
  job.kind = launch::RankJobKind::LinkBenchmark;
  job.linkDevice = flags.device;
  job.repeats = flags.repeats;
  job.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeoutS * 1000.0));
  const std::string transport = c10dBackendName(flags.device);
  if (const std::optional<RankEnvironment> environment = rankEnvironmentFromProcess()) {
    const nlohmann::json result = launch::runRankJob(job, *environment);  // as a rank of torchrun's world
    if (environment->rank == 0) report(flags, launch::linkMeasurementFromJson(result), transport);
    return;
  }
  launch::LocalRunOptions options;
  options.procs = flags.procs;
  options.worker = launch::findRankWorker();
  try {
    report(flags, launch::measureLocalLink(job, options, interruptToken()), transport);
  } catch (const launch::RunInterrupted&) {
    throw Interrupted("interrupted: every rank was stopped, nothing was measured");
  }
}

}  // namespace

void addBenchLinkCommand(CLI::App& app) {
  auto [command, flags] = addCommand<BenchLinkFlags>(
      app, "bench-link",
      {"Measure the transport between two ranks (c10d: Gloo on CPU, NCCL on CUDA): the one-way time of\n"
       "messages from 4 KiB to 64 MiB, and the latency and bandwidth that explain them, written into a\n"
       "cluster file for simulate, suggest and sweep.",
       {"pipeprof bench-link --procs 2 -o cluster.json",
        "torchrun --nnodes 2 --nproc-per-node 1 ... --no-python pipeprof bench-link -o cluster.json"}},
      runBenchLink);
  command.add_option("--procs", flags.procs, "ranks to start on this host (ranks 0 and 1 measure)")
      ->capture_default_str();
  command.add_option("--device", flags.device, "cpu (Gloo) or cuda (NCCL, cuda:LOCAL_RANK per rank)")
      ->capture_default_str();
  command.add_option("--repeats", flags.repeats, "timed round trips per size (the fastest counts)")
      ->capture_default_str();
  command.add_option("--timeout", flags.timeoutS, "seconds a rank waits for the other")->capture_default_str();
  command.add_option("-o,--output", flags.output, "write the measured link into this cluster file");
  command.add_flag("--json", flags.json, "print the samples and the fitted link as JSON");
}

}  // namespace pipeprof::cli
