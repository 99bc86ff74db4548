// The transport's latency and bandwidth between two ranks, measured by ping-pong.
#include <pipeprof/runtime/link_benchmark.h>

#include "transport/control_tags.h"

#include <pipeprof/profiler/host_tracer.h>

#include <algorithm>
#include <stdexcept>

namespace pipeprof {

std::vector<Bytes> defaultLinkSizes() {
  std::vector<Bytes> sizes;
  for (Bytes bytes = 4 * 1024; bytes <= 64 * 1024 * 1024; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

LinkMeasurement measureLink(Transport& transport, const std::vector<Bytes>& sizes, int repeats) {
  if (transport.worldSize() < 2) throw std::invalid_argument("measuring a link needs two ranks, the world has one");
  if (sizes.empty()) throw std::invalid_argument("measuring a link needs at least one message size");
  if (repeats < 1) throw std::invalid_argument("repeats must be at least 1, got " + std::to_string(repeats));
  LinkMeasurement result;
  const int rank = transport.rank();
  if (rank <= 1) {
    const int peer = 1 - rank;
    for (Bytes bytes : sizes) {
      torch::Tensor message = torch::zeros({std::max<Bytes>(1, bytes / 4)}, torch::kFloat).to(transport.device());
      std::vector<TimeNs> oneWayNs;
      for (int round = 0; round <= repeats; ++round) {
        const TimeNs startNs = steadyNowNs();
        if (rank == 0) {
          transport.send(message, peer, kPingTag)->wait();
          transport.receive(message, peer, kPingTag);
        } else {
          transport.receive(message, peer, kPingTag);
          transport.send(message, peer, kPingTag)->wait();
        }
        if (round > 0) oneWayNs.push_back((steadyNowNs() - startNs) / 2);
      }
      if (rank == 0) {
        // The fastest round trip: on a shared machine the slower ones measure the scheduler.
        result.samples.push_back(
            {static_cast<Bytes>(message.numel() * 4), *std::min_element(oneWayNs.begin(), oneWayNs.end())});
      }
    }
  }
  transport.barrier();
  if (rank == 0) result.link = fitLink(result.samples);
  return result;
}

Link fitLink(const std::vector<LinkSample>& samples) {
  std::vector<LinkSample> large;
  for (const LinkSample& sample : samples) {
    if (sample.bytes >= 1024 * 1024) large.push_back(sample);
  }
  if (large.size() < 2) large = samples;
  double meanBytes = 0.0;
  double meanNs = 0.0;
  for (const LinkSample& sample : large) {
    meanBytes += static_cast<double>(sample.bytes);
    meanNs += static_cast<double>(sample.oneWayNs);
  }
  meanBytes /= static_cast<double>(large.size());
  meanNs /= static_cast<double>(large.size());
  double covariance = 0.0;
  double variance = 0.0;
  for (const LinkSample& sample : large) {
    covariance += (static_cast<double>(sample.bytes) - meanBytes) * (static_cast<double>(sample.oneWayNs) - meanNs);
    variance += (static_cast<double>(sample.bytes) - meanBytes) * (static_cast<double>(sample.bytes) - meanBytes);
  }
  if (!(variance > 0.0) || !(covariance > 0.0)) {
    throw std::invalid_argument("the link samples do not grow with the message size: no bandwidth can be fitted");
  }
  const double nsPerByte = covariance / variance;
  const auto smallest = std::min_element(samples.begin(), samples.end(),
                                         [](const LinkSample& a, const LinkSample& b) { return a.bytes < b.bytes; });
  Link link;
  link.bandwidthBytesPerS = 1e9 / nsPerByte;
  link.latencyNs = std::max<TimeNs>(0, smallest->oneWayNs -
                                           static_cast<TimeNs>(static_cast<double>(smallest->bytes) * nsPerByte + 0.5));
  return link;
}

}  // namespace pipeprof
