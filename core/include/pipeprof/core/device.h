// Device descriptions: "cpu", "cuda:1" and their parsed form.
#pragma once

#include <string>
#include <vector>

namespace pipeprof {

enum class DeviceType { Cpu, Cuda };

/// A device as the user names it: a type and an index ("cpu" is cpu:0).
struct DeviceDesc {
  DeviceType type = DeviceType::Cpu;
  int index = 0;

  /// "cpu", "cpu:1", "cuda:0".
  std::string str() const;
  /// "cpu" or "cuda".
  std::string typeName() const;
  /// Parses "cpu", "cpu:N", "cuda", "cuda:N". Throws std::invalid_argument naming the text.
  static DeviceDesc parse(const std::string& text);

  friend bool operator==(const DeviceDesc& a, const DeviceDesc& b) {
    return a.type == b.type && a.index == b.index;
  }
};

/// Parses a comma-separated list such as "cpu,cpu" or "cuda:0,cuda:1".
std::vector<DeviceDesc> parseDeviceList(const std::string& text);

}  // namespace pipeprof
