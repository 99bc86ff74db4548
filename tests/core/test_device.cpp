// Tests for device.cpp: device names and lists.
#include <pipeprof/core/device.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof {
namespace {

using ::testing::StrEq;
using ::testing::ThrowsMessage;

TEST(DeviceDesc, ParseAndPrint) {
  DeviceDesc cpu = DeviceDesc::parse("cpu");
  EXPECT_EQ(cpu.type, DeviceType::Cpu);
  EXPECT_EQ(cpu.index, 0);
  EXPECT_EQ(cpu.str(), "cpu");
  EXPECT_EQ(cpu.typeName(), "cpu");
  DeviceDesc cuda = DeviceDesc::parse("cuda:1");
  EXPECT_EQ(cuda.type, DeviceType::Cuda);
  EXPECT_EQ(cuda.index, 1);
  EXPECT_EQ(cuda.str(), "cuda:1");
  EXPECT_EQ(cuda.typeName(), "cuda");
  EXPECT_EQ(DeviceDesc::parse("cuda").str(), "cuda:0");
  EXPECT_EQ(DeviceDesc::parse("cpu:2").str(), "cpu:2");
  EXPECT_EQ(DeviceDesc::parse("cpu:0"), cpu);
}

TEST(DeviceDesc, RejectsBadText) {
  for (const char* text : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "CPU", "cpu:1:2"}) {
    EXPECT_THAT([&] { DeviceDesc::parse(text); },
                ThrowsMessage<std::invalid_argument>(StrEq("invalid device '" + std::string(text) +
                                                           "': expected cpu, cpu:N, cuda or cuda:N, e.g. cuda:1")))
        << text;
  }
}

TEST(DeviceList, Parse) {
  auto devices = parseDeviceList("cuda:0, cuda:1");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].str(), "cuda:0");
  EXPECT_EQ(devices[1].str(), "cuda:1");
  EXPECT_EQ(parseDeviceList("cpu,cpu").size(), 2u);
  EXPECT_THROW(parseDeviceList("cpu,,cpu"), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof
