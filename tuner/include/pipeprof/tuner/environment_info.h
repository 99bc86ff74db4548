// Facts about where a sweep runs: pipeprof's git revision, threads, time.
#pragma once

#include <cstdint>
#include <string>

namespace pipeprof::tuner {

/// The git revision pipeprof was built from (`git describe --always --dirty` at build time),
/// or "unknown" outside a git checkout.
std::string pipeprofRevision();
/// The current UTC time in ISO 8601, e.g. "2026-11-22T03:30:30Z".
std::string utcNowIso8601();
/// Hardware threads of this machine (at least 1).
std::int64_t hardwareThreads();
/// The sweep's intra-op thread count: max(1, cores / devices) so the workers of the pipeline
/// devices sharing the cores do not oversubscribe them, unless the user gave one (requested > 0).
std::int64_t sweepThreads(std::int64_t requested, std::int64_t devices, std::int64_t cores);

}  // namespace pipeprof::tuner
