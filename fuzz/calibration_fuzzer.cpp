// Fuzzes the calibration reader (pipeprof.calibration/v1) and its use by the Predictor's inputs.
#include "reader_fuzzer.h"

#include <pipeprof/simulator/calibration.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeprof::fuzz::readOrRefuse(data, size, [](const nlohmann::json& json) {
    const pipeprof::Calibration calibration = pipeprof::calibrationFromJson(json, "calibration.json");
    for (const std::int64_t chunks : {std::int64_t{1}, std::int64_t{3}, std::int64_t{64}}) {
      calibration.stepOverheadNsFor(chunks);
    }
    pipeprof::describeCalibration(calibration);
  });
}
