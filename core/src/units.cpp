// Units used everywhere in pipeprof (nanoseconds, bytes) and their user-facing text forms.
#include <pipeprof/core/units.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string_view>

namespace pipeprof {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

/// A non-negative decimal number followed by an optional (space-separated) unit.
struct NumberAndUnit {
  double number = 0.0;
  std::string unit;  ///< lower-cased, may be empty
};

/// Splits "1.5 GiB" into 1.5 and "gib". Returns false when the text has no valid number.
bool splitNumber(std::string_view text, NumberAndUnit& out) {
  text = trim(text);
  std::size_t pos = 0;
  bool digits = false;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    ++pos;
    digits = true;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      digits = true;
    }
  }
  if (!digits) return false;
  std::string numberText(text.substr(0, pos));
  out.number = std::strtod(numberText.c_str(), nullptr);
  out.unit = lower(trim(text.substr(pos)));
  return std::isfinite(out.number);
}

/// The multiplier of a size prefix: "" 1, "k" 1e3, "ki" 1024, ... Returns 0 for unknown text.
double prefixMultiplier(std::string_view prefix) {
  static constexpr std::string_view kLetters = "kmgt";
  if (prefix.empty()) return 1.0;
  std::size_t power = kLetters.find(prefix[0]);
  if (power == std::string_view::npos) return 0.0;
  if (prefix.size() == 1) return std::pow(1000.0, static_cast<double>(power + 1));
  if (prefix.size() == 2 && prefix[1] == 'i') return std::pow(1024.0, static_cast<double>(power + 1));
  return 0.0;
}

std::int64_t toInt64(double value, const std::string& text, const char* what) {
  double rounded = std::round(value);
  if (!(rounded < 9.2e18)) {
    throw std::invalid_argument("invalid " + std::string(what) + " '" + text + "': too large");
  }
  return static_cast<std::int64_t>(rounded);
}

/// "1.50", "12.0", "512": three significant digits for values >= 1.
std::string threeDigits(double value) {
  char buffer[64];
  const char* format = value < 9.995 ? "%.2f" : value < 99.95 ? "%.1f" : "%.0f";
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

Bytes parseBytes(const std::string& text) {
  auto fail = [&text]() -> Bytes {
    throw std::invalid_argument("invalid size '" + text +
                                "': expected a non-negative number of bytes with an optional unit, "
                                "e.g. 4096, 512MiB, 1.5GB, 64KiB");
  };
  NumberAndUnit parsed;
  if (!splitNumber(text, parsed)) return fail();
  std::string unit = parsed.unit;
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  double multiplier = prefixMultiplier(unit);
  if (multiplier == 0.0) return fail();
  return toInt64(parsed.number * multiplier, text, "size");
}

BytesPerS parseBandwidth(const std::string& text) {
  auto fail = [&text]() -> BytesPerS {
    throw std::invalid_argument("invalid bandwidth '" + text +
                                "': expected a non-negative rate, e.g. 25GB/s, 12.5GiB/s, "
                                "100Gbit/s or a plain number of bytes per second");
  };
  NumberAndUnit parsed;
  if (!splitNumber(text, parsed)) return fail();
  std::string unit = parsed.unit;
  if (unit.empty()) return parsed.number;
  if (unit.size() < 2 || unit.compare(unit.size() - 2, 2, "/s") != 0) return fail();
  unit.resize(unit.size() - 2);
  double perUnit = 1.0;
  if (unit.size() >= 3 && unit.compare(unit.size() - 3, 3, "bit") == 0) {
    perUnit = 1.0 / 8.0;
    unit.resize(unit.size() - 3);
  } else if (!unit.empty() && unit.back() == 'b') {
    unit.pop_back();
  } else {
    return fail();
  }
  double multiplier = prefixMultiplier(unit);
  if (multiplier == 0.0) return fail();
  return parsed.number * multiplier * perUnit;
}

TimeNs parseDuration(const std::string& text) {
  auto fail = [&text]() -> TimeNs {
    throw std::invalid_argument("invalid duration '" + text +
                                "': expected a non-negative duration, e.g. 20ns, 5us, 1.5ms, 2s, 10m, 1h "
                                "(a plain number means nanoseconds)");
  };
  NumberAndUnit parsed;
  if (!splitNumber(text, parsed)) return fail();
  double multiplier = 0.0;
  if (parsed.unit.empty() || parsed.unit == "ns") multiplier = 1.0;
  else if (parsed.unit == "us") multiplier = 1e3;
  else if (parsed.unit == "ms") multiplier = 1e6;
  else if (parsed.unit == "s") multiplier = 1e9;
  else if (parsed.unit == "m" || parsed.unit == "min") multiplier = 60e9;
  else if (parsed.unit == "h") multiplier = 3600e9;
  else return fail();
  return toInt64(parsed.number * multiplier, text, "duration");
}

std::string formatBytes(Bytes bytes) {
  if (bytes < 0)
    return "-" + formatBytes(bytes == std::numeric_limits<Bytes>::min() ? std::numeric_limits<Bytes>::max() : -bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return threeDigits(value) + " " + kUnits[unit];
}

std::string formatDuration(TimeNs durationNs) {
  if (durationNs < 0)
    return "-" + formatDuration(durationNs == std::numeric_limits<TimeNs>::min() ? std::numeric_limits<TimeNs>::max()
                                                                                 : -durationNs);
  if (durationNs < 1000) return std::to_string(durationNs) + " ns";
  double value = static_cast<double>(durationNs);
  if (durationNs < 1000000) return threeDigits(value / 1e3) + " us";
  if (durationNs < 1000000000) return threeDigits(value / 1e6) + " ms";
  return threeDigits(value / 1e9) + " s";
}

}  // namespace pipeprof
