// Units used everywhere in pipeprof (nanoseconds, bytes) and their user-facing text forms.
#pragma once

#include <cstdint>
#include <string>

namespace pipeprof {

/// A duration or a point in time, in nanoseconds.
using TimeNs = std::int64_t;
/// An amount of memory, in bytes.
using Bytes = std::int64_t;
/// A transfer rate, in bytes per second.
using BytesPerS = double;

/// Parses a size such as "4096", "512MiB", "16GiB", "1.5GB", "64KiB" (binary and decimal
/// suffixes, case-insensitive "B"). Throws std::invalid_argument naming the text on error.
Bytes parseBytes(const std::string& text);

/// Parses a rate such as "25GB/s", "12.5GiB/s", "100Gbit/s" or a plain number of bytes per
/// second. Throws std::invalid_argument naming the text on error.
BytesPerS parseBandwidth(const std::string& text);

/// Parses a duration such as "5us", "1.5ms", "20ns", "2s" (a plain number means nanoseconds).
/// Throws std::invalid_argument naming the text on error.
TimeNs parseDuration(const std::string& text);

/// "1.50 GiB", "512 B", "12.0 MiB".
std::string formatBytes(Bytes bytes);
/// "812 ns", "12.3 us", "4.56 ms", "1.20 s".
std::string formatDuration(TimeNs durationNs);

}  // namespace pipeprof
