// Device descriptions: "cpu", "cuda:1" and their parsed form.
#include <pipeprof/core/device.h>

#include <cctype>
#include <stdexcept>

namespace pipeprof {

std::string DeviceDesc::typeName() const { return type == DeviceType::Cuda ? "cuda" : "cpu"; }

std::string DeviceDesc::str() const {
  if (type == DeviceType::Cpu && index == 0) return "cpu";
  return typeName() + ":" + std::to_string(index);
}

DeviceDesc DeviceDesc::parse(const std::string& text) {
  auto fail = [&text]() -> DeviceDesc {
    throw std::invalid_argument("invalid device '" + text +
                                "': expected cpu, cpu:N, cuda or cuda:N, e.g. cuda:1");
  };
  std::string typeText = text;
  std::string indexText;
  std::size_t colon = text.find(':');
  if (colon != std::string::npos) {
    typeText = text.substr(0, colon);
    indexText = text.substr(colon + 1);
    if (indexText.empty() || indexText.size() > 6) return fail();
    for (char c : indexText) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail();
    }
  }
  DeviceDesc desc;
  if (typeText == "cpu") desc.type = DeviceType::Cpu;
  else if (typeText == "cuda") desc.type = DeviceType::Cuda;
  else return fail();
  desc.index = indexText.empty() ? 0 : std::stoi(indexText);
  return desc;
}

std::vector<DeviceDesc> parseDeviceList(const std::string& text) {
  std::vector<DeviceDesc> devices;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::size_t first = item.find_first_not_of(' ');
    std::size_t last = item.find_last_not_of(' ');
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    devices.push_back(DeviceDesc::parse(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return devices;
}

}  // namespace pipeprof
