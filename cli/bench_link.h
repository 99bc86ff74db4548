// The transport's link between two local ranks, measured as `pipeprof bench-link` does (for sweep --procs).
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/stop_token.h>

#include <chrono>
#include <string>

namespace pipeprof::cli {

/// Starts two ranks on this host ("cpu": Gloo, "cuda": NCCL), ping-pongs 4 KiB .. 64 MiB
/// `repeats` times each and returns the fitted link. Throws std::runtime_error naming the rank
/// when the measurement fails, Interrupted when `stop` asks.
Link measureLocalLink(const std::string& device, int repeats, std::chrono::milliseconds timeout, const StopToken& stop);

}  // namespace pipeprof::cli
