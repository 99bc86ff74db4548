// `pipeprof bench-link`: the latency and bandwidth of the ranks' transport, written into a cluster file.
#include "bench_link.h"
#include "commands.h"
#include "interrupts.h"
#include "local_world.h"

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/c10d_transport.h>
#include <pipeprof/runtime/link_benchmark.h>
#include <pipeprof/runtime/rank_environment.h>

#include <fmt/format.h>

#include <iostream>
#include <memory>

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

std::chrono::milliseconds timeoutOf(const BenchLinkFlags& flags) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeoutS * 1000.0));
}

nlohmann::json toJson(const LinkMeasurement& measurement) {
  nlohmann::json samples = nlohmann::json::array();
  for (const LinkSample& sample : measurement.samples) {
    samples.push_back({{"bytes", sample.bytes}, {"one_way_ns", sample.oneWayNs}});
  }
  return {{"samples", samples},
          {"latency_ns", measurement.link.latencyNs},
          {"bandwidth_bytes_per_s", measurement.link.bandwidthBytesPerS}};
}

/// The cluster of `procs` devices of the measured type joined by the measured link.
Cluster measuredCluster(const BenchLinkFlags& flags, const Link& link) {
  return Cluster::uniform(flags.procs, std::nullopt, link.bandwidthBytesPerS, link.latencyNs, flags.device);
}

void report(const BenchLinkFlags& flags, const nlohmann::json& result, const std::string& transport) {
  const Link link{result.at("latency_ns").get<TimeNs>(), result.at("bandwidth_bytes_per_s").get<BytesPerS>()};
  if (!flags.output.empty()) writeCluster(measuredCluster(flags, link), flags.output);
  if (flags.json) {
    nlohmann::json out = result;
    out["transport"] = transport;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} between ranks 0 and 1 ({} devices), one-way time (the fastest of {} round trips):\n", transport,
                           flags.device, flags.repeats);
  for (const auto& sample : result.at("samples")) {
    const auto bytes = sample.at("bytes").get<Bytes>();
    const auto ns = sample.at("one_way_ns").get<TimeNs>();
    std::cout << fmt::format("  {:>10}  {:>10}  {:>8.2f} GB/s\n", formatBytes(bytes), formatDuration(ns),
                             static_cast<double>(bytes) / static_cast<double>(std::max<TimeNs>(ns, 1)));
  }
  std::cout << fmt::format("link: latency {}, bandwidth {:.2f} GB/s\n", formatDuration(link.latencyNs),
                           link.bandwidthBytesPerS / 1e9);
  if (!flags.output.empty()) std::cout << "cluster: " << flags.output << "\n";
}

torch::Device rankDevice(const BenchLinkFlags& flags, const RankEnvironment& environment) {
  if (flags.device == "cpu") return torch::kCPU;
  if (flags.device == "cuda") return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(environment.localRank));
  throw UsageError("--device must be cpu or cuda (each rank uses cuda:LOCAL_RANK), got '" + flags.device + "'");
}

/// Starts the ranks here and returns rank 0's result.
nlohmann::json launchBenchLink(const BenchLinkFlags& flags, const StopToken& stop) {
  const ScratchDirectory scratch;
  const std::vector<std::string> arguments{"bench-link", "--procs", std::to_string(flags.procs), "--device", flags.device,
                                           "--repeats", std::to_string(flags.repeats), "--timeout",
                                           fmt::format("{}", flags.timeoutS)};
  const LocalWorldRun run = runLocalWorld(arguments, flags.procs, timeoutOf(flags), scratch, CpuBinding::Cores, stop);
  if (run.outcome.interrupted) throw Interrupted("interrupted: every rank was stopped, nothing was measured");
  if (!run.succeeded()) {
    throw std::runtime_error("measuring the link failed: " +
                             run.failure([](int rank) { return "rank " + std::to_string(rank); }));
  }
  return *run.results.front();
}

void runBenchLink(const BenchLinkFlags& flags) {
  if (flags.procs < 2) throw UsageError("--procs must be at least 2, got " + std::to_string(flags.procs));
  if (flags.repeats < 1) throw UsageError("--repeats must be at least 1, got " + std::to_string(flags.repeats));
  if (!(flags.timeoutS > 0)) throw UsageError("--timeout must be positive seconds");
  const std::string transport = flags.device == "cpu" ? "gloo" : "nccl";
  if (const std::optional<RankEnvironment> environment = rankEnvironmentFromProcess()) {
    bindToRankCpus(CpuBinding::None, *environment);  // as the launcher bound it: as the pipeline's ranks run
    const torch::Device device = rankDevice(flags, *environment);
    const std::unique_ptr<Transport> link = connectC10d(*environment, device, timeoutOf(flags));
    const LinkMeasurement measurement = measureLink(*link, defaultLinkSizes(), flags.repeats);
    if (environment->rank != 0) return;
    const std::string resultPath = rankResultPath();
    if (!resultPath.empty()) {
      writeFileAtomically(resultPath, toJson(measurement).dump());
    } else {
      report(flags, toJson(measurement), transport);
    }
    return;
  }
  rankDevice(flags, RankEnvironment{});  // refuse a bad --device before starting anything
  report(flags, launchBenchLink(flags, interruptToken()), transport);
}

}  // namespace

Link measureLocalLink(const std::string& device, int repeats, std::chrono::milliseconds timeout, const StopToken& stop) {
  BenchLinkFlags flags;
  flags.device = device;
  flags.repeats = repeats;
  flags.timeoutS = static_cast<double>(timeout.count()) / 1000.0;
  const nlohmann::json result = launchBenchLink(flags, stop);
  return Link{result.at("latency_ns").get<TimeNs>(), result.at("bandwidth_bytes_per_s").get<BytesPerS>()};
}

void addBenchLinkCommand(CLI::App& app) {
  auto flags = std::make_shared<BenchLinkFlags>();
  CLI::App* command = app.add_subcommand(
      "bench-link",
      "Measure the transport between two ranks (c10d: Gloo on CPU, NCCL on CUDA): the one-way time of\n"
      "messages from 4 KiB to 64 MiB, and the latency and bandwidth that explain them, written into a\n"
      "cluster file for simulate, suggest and sweep.\n"
      "Examples:\n"
      "  pipeprof bench-link --procs 2 -o cluster.json\n"
      "  torchrun --nnodes 2 --nproc-per-node 1 ... --no-python pipeprof bench-link -o cluster.json");
  command->add_option("--procs", flags->procs, "ranks to start on this host (ranks 0 and 1 measure)")->capture_default_str();
  command->add_option("--device", flags->device, "cpu (Gloo) or cuda (NCCL, cuda:LOCAL_RANK per rank)")
      ->capture_default_str();
  command->add_option("--repeats", flags->repeats, "timed round trips per size (the fastest counts)")->capture_default_str();
  command->add_option("--timeout", flags->timeoutS, "seconds a rank waits for the other")->capture_default_str();
  command->add_option("-o,--output", flags->output, "write the measured link into this cluster file");
  command->add_flag("--json", flags->json, "print the samples and the fitted link as JSON");
  command->callback([flags] { runBenchLink(*flags); });
}

}  // namespace pipeprof::cli
