// Fuzzes the Chrome trace reader through its stream entry point, the path readChromeTraceFile takes.
#include <pipeprof/core/chrome_trace.h>
#include <pipeprof/core/json_file.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    pipeprof::readChromeTrace(in, "trace.json");
  } catch (const pipeprof::FormatError&) {
    // refused with the reader's message, as it must be
  }
  return 0;
}
