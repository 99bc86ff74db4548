// The balance the simulator predicts fastest for one candidate's shape, and the short profile it needs.
#include <pipeprof/tuner/auto_balance.h>

#include <pipeprof/runtime/layer_profiler.h>
#include <pipeprof/runtime/torch_environment.h>

#include <algorithm>
#include <stdexcept>

namespace pipeprof::tuner {

Profile quickProfile(Model& model, const DeviceDesc& device, std::int64_t batch, std::int64_t chunks) {
  LayerProfilerOptions options;
  options.device = torchDevice(device);
  options.microBatches = {std::max<std::int64_t>(1, batch / std::max<std::int64_t>(1, chunks)), batch};
  options.timeBudgetSeconds = 2.0;
  options.minRuns = 3;
  return profileModel(model, options);
}

FastestBalance fastestBalance(const Profile& profile, const Candidate& shape, std::int64_t devices,
                              const std::string& deviceType) {
  const Cluster cluster = Cluster::uniform(devices, std::nullopt, 0.0, 0, deviceType);
  SearchSpace space;
  space.batch = shape.batch;
  space.devices = devices;
  space.schedules = {shape.schedule};
  space.stagesPerDevice = {shape.stagesPerDevice};
  space.chunks = {shape.chunks};
  space.modes = {shape.checkpoint};
  space.enumeration = BalanceEnumeration::Auto;
  const SearchResult result = search(profile, cluster, space);
  if (result.ranked.empty()) {
    const std::string why = result.rejected.empty() ? std::string("no candidate") : result.rejected.front().rejection;
    throw std::invalid_argument("--balance auto found no balance of " + std::to_string(profile.layerCount()) +
                                " layers over " + std::to_string(devices * shape.stagesPerDevice) + " stages on " +
                                std::to_string(devices) + " devices: " + why);
  }
  return {result.ranked.front(), result.evaluated};
}

}  // namespace pipeprof::tuner
