// JSON file helpers shared by every format: atomic writes, reads, and errors that name the place.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof {

/// A malformed or foreign file. what() reads "<file>: <json path>: <problem>", e.g.
/// "profile.json: $.layers[3].costs[0].forward_ns: expected a non-negative integer, got -5".
class FormatError : public std::runtime_error {
 public:
  FormatError(std::string file, std::string jsonPath, const std::string& problem);
  const std::string& file() const { return file_; }
  const std::string& jsonPath() const { return jsonPath_; }

 private:
  std::string file_;
  std::string jsonPath_;
};

/// Writes content to path atomically: a temporary file in the same directory, flushed, then
/// renamed over path. On failure nothing is left behind and std::runtime_error names the path.
void writeFileAtomically(const std::string& path, const std::string& content);

/// Parses JSON text read from sourceName. Throws FormatError for anything the parser refuses:
/// a syntax error (with its position) or a number too large for a double.
nlohmann::json parseJsonText(const std::string& text, const std::string& sourceName);

/// A file's whole content. Throws FormatError naming the path when it cannot be opened or read.
std::string readTextFile(const std::string& path);

/// Reads and parses a JSON file. Throws FormatError (unreadable file or invalid JSON, with
/// the parser's position).
nlohmann::json readJsonFile(const std::string& path);

/// A view of one JSON value that knows its file and path, for readers that report exactly
/// where a problem is. Every accessor throws FormatError naming file, path and expectation.
class JsonCursor {
 public:
  JsonCursor(const nlohmann::json& value, std::string file, std::string path = "$");

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  bool has(const std::string& key) const;
  JsonCursor at(const std::string& key) const;  ///< required member of an object
  JsonCursor at(std::size_t index) const;       ///< element of an array
  std::size_t size() const;                     ///< array length (requires an array)
  std::vector<JsonCursor> items() const;        ///< array elements (requires an array)

  std::string asString() const;
  std::int64_t asInt() const;
  std::int64_t asNonNegativeInt() const;
  std::int64_t asPositiveInt() const;
  double asNumber() const;
  double asNonNegativeNumber() const;
  bool asBool() const;

  /// Requires the object's "schema" member to equal tag.
  void requireSchema(const std::string& tag) const;
  /// Throws FormatError at this path with the given problem.
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/// Runs `parse` on the cursor's string (parsePrecision, DeviceDesc::parse); the
/// std::invalid_argument it throws becomes a FormatError at the cursor.
template <typename Parse>
auto parseAt(const JsonCursor& json, Parse parse) {
  const std::string text = json.asString();
  try {
    return parse(text);
  } catch (const std::invalid_argument& error) {
    json.fail(error.what());
  }
}

}  // namespace pipeprof
