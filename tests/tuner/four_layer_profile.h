// The tuner tests' small profile: four identical layers with costs linear in the micro-batch.
#pragma once

#include <pipeprof/core/profile.h>

#include <cstdint>

namespace pipeprof::test {

/// Four layers of 4096 parameter bytes; at micro-batch b (1, 2, 4 or 8) each takes 1000b ns
/// forward and 2000b ns backward, outputs and saves 64b bytes.
inline Profile fourLayerProfile() {
  Profile profile;
  profile.environment.deviceType = "cpu";
  for (const char* name : {"a", "b", "c", "d"}) {
    LayerProfile layer;
    layer.name = name;
    layer.paramBytes = 4096;
    for (std::int64_t size : {1, 2, 4, 8})
      layer.costs.push_back({size, 1000 * size, 2000 * size, 64 * size, 64 * size, 0, 0});
    profile.layers.push_back(layer);
  }
  return profile;
}

}  // namespace pipeprof::test
