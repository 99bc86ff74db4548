// Fuzzes the cluster reader (pipeprof.cluster/v1).
#include "reader_fuzzer.h"

#include <pipeprof/core/cluster.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeprof::fuzz::readOrRefuse(data, size, [](const nlohmann::json& json) {
    const pipeprof::Cluster cluster = pipeprof::clusterFromJson(json, "cluster.json");
    for (std::int64_t a = 0; a < cluster.deviceCount(); ++a) {
      for (std::int64_t b = 0; b < cluster.deviceCount(); ++b) cluster.link(a, b);
    }
  });
}
