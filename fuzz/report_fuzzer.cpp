// Fuzzes the report reader (pipeprof.report/v1), the calibration it embeds, and the accuracy summary.
#include "reader_fuzzer.h"

#include <pipeprof/core/accuracy.h>
#include <pipeprof/core/report.h>
#include <pipeprof/simulator/calibration.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pipeprof::fuzz::readOrRefuse(data, size, [](const nlohmann::json& json) {
    pipeprof::Report report = pipeprof::reportFromJson(json, "report.json");
    // What compare and the GUI do with a report they loaded.
    pipeprof::summarizeAccuracy(report);
    report.updateSuggestion();
    pipeprof::reportCalibration(report, "report.json");
  });
}
