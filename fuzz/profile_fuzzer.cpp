// Fuzzes the profile reader (pipeprof.profile/v1) and what the simulator asks of a profile it loaded.
#include "reader_fuzzer.h"

#include <pipeprof/core/profile.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeprof::fuzz::readOrRefuse(data, size, [](const nlohmann::json& json) {
    const pipeprof::Profile profile = pipeprof::profileFromJson(json, "profile.json");
    // A loaded profile must answer every size without UB (interpolation and extrapolation).
    for (const pipeprof::LayerProfile& layer : profile.layers) {
      for (const std::int64_t size : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1} << 20}) layer.costAt(size);
    }
  });
}
