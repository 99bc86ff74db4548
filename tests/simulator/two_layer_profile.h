// Two- and four-layer profiles whose costs are easy to reckon with, shared by the calibration tests.
#pragma once

#include <pipeprof/core/profile.h>

namespace pipeprof::test {

/// Two layers "a" and "b", profiled at micro-batches 2, 3, 4 and 8; at micro-batch b each
/// takes b ns forward and 2b ns backward, and keeps nothing.
inline Profile twoLayerProfile() {
  Profile profile;
  for (const char* name : {"a", "b"}) {
    LayerProfile layer;
    layer.name = name;
    for (std::int64_t size : {2, 3, 4, 8}) {
      CostSample cost;
      cost.microBatch = size;
      cost.forwardNs = size;
      cost.backwardNs = 2 * size;
      layer.costs.push_back(cost);
    }
    profile.layers.push_back(layer);
  }
  return profile;
}

/// twoLayerProfile twice over: four layers, a and b, then c and d alike.
inline Profile fourLayerProfile() {
  Profile profile = twoLayerProfile();
  profile.layers.push_back(profile.layers[0]);
  profile.layers.push_back(profile.layers[1]);
  profile.layers[2].name = "c";
  profile.layers[3].name = "d";
  return profile;
}

/// fourLayerProfile in microseconds: every time x1000, so that scaling an op and rounding to whole
/// nanoseconds moves no ratio.
inline Profile fourLayerProfileInMicroseconds() {
  Profile profile = fourLayerProfile();
  for (LayerProfile& layer : profile.layers) {
    for (CostSample& cost : layer.costs) {
      cost.forwardNs *= 1000;
      cost.backwardNs *= 1000;
    }
  }
  return profile;
}

}  // namespace pipeprof::test
