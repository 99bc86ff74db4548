// Where the tests' fixtures live: tests/fixtures/ of the source tree.
#pragma once

#include <string>
#include <string_view>

namespace pipeprof::test {

/// tests/fixtures/<name> in the source tree (PIPEPROF_SOURCE_DIR, which the tests' CMake defines).
inline std::string fixturePath(std::string_view name) {
  return std::string(PIPEPROF_SOURCE_DIR) + "/tests/fixtures/" + std::string(name);
}

}  // namespace pipeprof::test
