// Tests for units.cpp: parsing and formatting of sizes, rates and durations.
#include <pipeprof/core/units.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(ParseBytes, PlainNumbersAndSuffixes) {
  EXPECT_EQ(parseBytes("4096"), 4096);
  EXPECT_EQ(parseBytes("0"), 0);
  EXPECT_EQ(parseBytes("512MiB"), 512LL * 1024 * 1024);
  EXPECT_EQ(parseBytes("16GiB"), 16LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parseBytes("1.5GB"), 1500000000LL);
  EXPECT_EQ(parseBytes("64KiB"), 65536);
  EXPECT_EQ(parseBytes("2 GiB"), 2LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parseBytes("3kb"), 3000);
  EXPECT_EQ(parseBytes("3KB"), 3000);
  EXPECT_EQ(parseBytes("1TiB"), 1LL << 40);
  EXPECT_EQ(parseBytes("2T"), 2000000000000LL);
  EXPECT_EQ(parseBytes("7B"), 7);
  EXPECT_EQ(parseBytes("0.5KiB"), 512);
}

TEST(ParseBytes, RejectsBadTextNamingItAndAnExample) {
  for (const char* text : {"", "abc", "-5", "5XB", "1.5 GiBs", "GiB", "5 bits"}) {
    EXPECT_THAT([&] { parseBytes(text); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("invalid size '" + std::string(text) + "'")))
        << text;
  }
  EXPECT_THAT([] { parseBytes("12 parsecs"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("e.g. 4096, 512MiB, 1.5GB, 64KiB")));
  EXPECT_THAT([] { parseBytes("99999999999TiB"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("too large")));
}

TEST(ParseBandwidth, RatesAndPlainNumbers) {
  EXPECT_DOUBLE_EQ(parseBandwidth("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(parseBandwidth("12.5GiB/s"), 12.5 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parseBandwidth("100Gbit/s"), 100e9 / 8);
  EXPECT_DOUBLE_EQ(parseBandwidth("1000000"), 1e6);
  EXPECT_DOUBLE_EQ(parseBandwidth("8 bit/s"), 1.0);
  EXPECT_DOUBLE_EQ(parseBandwidth("3B/s"), 3.0);
  EXPECT_DOUBLE_EQ(parseBandwidth("2 MiB/s"), 2.0 * 1024 * 1024);
}

TEST(ParseBandwidth, RejectsBadText) {
  for (const char* text : {"", "fast", "25GB", "25G/s", "-1", "25GB/h"}) {
    EXPECT_THAT([&] { parseBandwidth(text); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("invalid bandwidth '" + std::string(text) + "'")))
        << text;
  }
  EXPECT_THAT([] { parseBandwidth("x"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("e.g. 25GB/s")));
}

TEST(ParseDuration, UnitsAndPlainNanoseconds) {
  EXPECT_EQ(parseDuration("5us"), 5000);
  EXPECT_EQ(parseDuration("1.5ms"), 1500000);
  EXPECT_EQ(parseDuration("20ns"), 20);
  EXPECT_EQ(parseDuration("2s"), 2000000000);
  EXPECT_EQ(parseDuration("10m"), 600'000'000'000);
  EXPECT_EQ(parseDuration("1.5min"), 90'000'000'000);
  EXPECT_EQ(parseDuration("1h"), 3'600'000'000'000);
  EXPECT_EQ(parseDuration("750"), 750);
  EXPECT_EQ(parseDuration("3 ms"), 3000000);
  EXPECT_EQ(parseDuration("0.0015us"), 2);
}

TEST(ParseDuration, RejectsBadText) {
  for (const char* text : {"", "soon", "5 days", "-3ms", "2d"}) {
    EXPECT_THAT([&] { parseDuration(text); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("invalid duration '" + std::string(text) + "'")))
        << text;
  }
  EXPECT_THAT([] { parseDuration("x"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("e.g. 20ns, 5us")));
}

TEST(FormatBytes, ThreeSignificantDigits) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.00 KiB");
  EXPECT_EQ(formatBytes(1536LL * 1024 * 1024), "1.50 GiB");
  EXPECT_EQ(formatBytes(12LL * 1024 * 1024), "12.0 MiB");
  EXPECT_EQ(formatBytes(300LL * 1024), "300 KiB");
  EXPECT_EQ(formatBytes(-2048), "-2.00 KiB");
}

TEST(FormatDuration, ThreeSignificantDigits) {
  EXPECT_EQ(formatDuration(0), "0 ns");
  EXPECT_EQ(formatDuration(812), "812 ns");
  EXPECT_EQ(formatDuration(12300), "12.3 us");
  EXPECT_EQ(formatDuration(4560000), "4.56 ms");
  EXPECT_EQ(formatDuration(1200000000), "1.20 s");
  EXPECT_EQ(formatDuration(250000000), "250 ms");
  EXPECT_EQ(formatDuration(-1500), "-1.50 us");
}

}  // namespace
}  // namespace pipeprof
