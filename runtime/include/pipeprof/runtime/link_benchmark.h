// The transport's latency and bandwidth between two ranks, measured by ping-pong (`pipeprof bench-link`).
#pragma once

#include <pipeprof/core/cluster.h>
#include <pipeprof/core/units.h>
#include <pipeprof/runtime/transport.h>

#include <vector>

namespace pipeprof {

/// One message size: the one-way time (half the fastest round trip of the repeats).
struct LinkSample {
  Bytes bytes = 0;
  TimeNs oneWayNs = 0;
};

struct LinkMeasurement {
  std::vector<LinkSample> samples;
  Link link;  ///< fitLink(samples)
};

/// 4 KiB, 16 KiB, ..., 64 MiB (powers of four).
std::vector<Bytes> defaultLinkSizes();

/// Ranks 0 and 1 ping-pong a float tensor of each size `repeats` times (after one untimed
/// round); the other ranks only wait at the closing barrier. A collective: every rank calls it;
/// rank 0's result holds the samples (the others' are empty). Throws TransportError like the
/// transport, std::invalid_argument for a world of one rank, no sizes or repeats < 1.
LinkMeasurement measureLink(Transport& transport, const std::vector<Bytes>& sizes, int repeats);

/// The link that explains the samples: bandwidth from the least-squares slope of time over
/// bytes on the samples of 1 MiB and more (all of them when fewer than two are that large),
/// latency = the smallest sample's time minus its bytes at that bandwidth (at least 0).
/// Throws std::invalid_argument when the samples cannot give a positive bandwidth.
Link fitLink(const std::vector<LinkSample>& samples);

}  // namespace pipeprof
