// The contract every reader fuzzer checks: an input loads or throws the reader's FormatError, nothing else.
#pragma once

#include <pipeprof/core/json_file.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pipeprof::fuzz {

/// Parses `size` bytes as a user's file arrives and hands the JSON to `read`. Bytes that are
/// no JSON are what readJsonFile turns into a FormatError: nothing more to test. A FormatError
/// from `read` is the reader refusing the input, as it must; any other exception escapes, and
/// libFuzzer reports it (with the input) like a crash, a hang or a sanitizer report.
template <typename Read>
int readOrRefuse(const std::uint8_t* data, std::size_t size, Read read) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  try {
    read(json);
  } catch (const FormatError&) {
  }
  return 0;
}

}  // namespace pipeprof::fuzz
