// The balance the simulator predicts fastest for one candidate's shape: what `pipeprof run --balance auto` trains.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/core/device.h>
#include <pipeprof/core/profile.h>
#include <pipeprof/runtime/models.h>
#include <pipeprof/simulator/search.h>

#include <cstdint>
#include <string>

namespace pipeprof::tuner {

/// A short profile of `model` on `device` for a run of `chunks` chunks of `batch` samples: its
/// micro-batch size and the whole batch, within 2 s (at least 3 timed runs per layer).
Profile quickProfile(Model& model, const DeviceDesc& device, std::int64_t batch, std::int64_t chunks);

struct FastestBalance {
  RankedCandidate best;        ///< the candidate with the balance, and its prediction
  std::int64_t evaluated = 0;  ///< balances the search decided
};

/// Searches every balance of `shape`'s p * v stages over `devices` devices of `deviceType`
/// (instant links, unbounded memory), the rest of the shape (schedule, v, chunks, checkpoint,
/// batch) fixed, and returns the fastest predicted. Throws std::invalid_argument naming why
/// when none can run (too few layers for the stages, a shape the schedule refuses).
FastestBalance fastestBalance(const Profile& profile, const Candidate& shape, std::int64_t devices,
                              const std::string& deviceType);

}  // namespace pipeprof::tuner
