// Fuzzes torch's schedule CSV reader (--schedule-file's format): an input loads or is refused
// with the reader's FormatError, and what loads writes back to text that reads the same.
#include <pipeprof/core/json_file.h>
#include <pipeprof/core/schedule_csv.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pipeprof::RankActions ranks;
  try {
    ranks = pipeprof::readScheduleCsv(text, "order.csv");
  } catch (const pipeprof::FormatError&) {
    return 0;  // refused with the reader's message, as it must be
  }
  if (pipeprof::readScheduleCsv(pipeprof::writeScheduleCsv(ranks), "written.csv") != ranks) std::abort();
  return 0;
}
