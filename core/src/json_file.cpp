// JSON file helpers shared by every format: atomic writes, reads, and errors that name the place.
#include <pipeprof/core/json_file.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace pipeprof {
namespace {

std::string formatWhat(const std::string& file, const std::string& jsonPath, const std::string& problem) {
  std::string what = file + ": ";
  if (!jsonPath.empty()) what += jsonPath + ": ";
  return what + problem;
}

std::string typeName(const nlohmann::json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return value.type_name();
}

/// The value as it appears in the file, shortened for messages.
std::string shown(const nlohmann::json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string directoryOf(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

FormatError::FormatError(std::string file, std::string jsonPath, const std::string& problem)
    : std::runtime_error(formatWhat(file, jsonPath, problem)), file_(std::move(file)), jsonPath_(std::move(jsonPath)) {}

void writeFileAtomically(const std::string& path, const std::string& content) {
  static std::atomic<unsigned> counter{0};
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  auto fail = [&](const std::string& what, int error) {
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + what + ": " + std::strerror(error));
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int error = errno;
    throw std::runtime_error("cannot write '" + path + "': cannot create temporary file '" + temp +
                             "': " + std::strerror(error));
  }
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      fail("write failed", error);
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  if (::fsync(fd) != 0) {
    int error = errno;
    ::close(fd);
    fail("fsync failed", error);
  }
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename failed", errno);
  // Make the rename itself durable; failing here loses nothing already visible.
  int dir = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

nlohmann::json parseJsonText(const std::string& text, const std::string& sourceName) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    // parse_error for bad syntax, out_of_range for a number past a double's range (1e999).
    std::string message = error.what();
    std::size_t bracket = message.find("] ");
    if (message.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) message = message.substr(bracket + 2);
    throw FormatError(sourceName, "", "invalid JSON: " + message);
  }
}

std::string readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int error = errno;
    throw FormatError(path, "", std::string("cannot open file: ") + std::strerror(error));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw FormatError(path, "", "cannot read file");
  return content.str();
}

nlohmann::json readJsonFile(const std::string& path) { return parseJsonText(readTextFile(path), path); }

JsonCursor::JsonCursor(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

void JsonCursor::fail(const std::string& problem) const { throw FormatError(file_, path_, problem); }

bool JsonCursor::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonCursor JsonCursor::at(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object, got " + typeName(*value_));
  auto member = value_->find(key);
  if (member == value_->end()) fail("missing required field '" + key + "'");
  return JsonCursor(*member, file_, path_ + "." + key);
}

JsonCursor JsonCursor::at(std::size_t index) const {
  if (!value_->is_array()) fail("expected an array, got " + typeName(*value_));
  if (index >= value_->size()) {
    fail("expected at least " + std::to_string(index + 1) + " elements, got " + std::to_string(value_->size()));
  }
  return JsonCursor((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonCursor::size() const {
  if (!value_->is_array()) fail("expected an array, got " + typeName(*value_));
  return value_->size();
}

std::vector<JsonCursor> JsonCursor::items() const {
  std::vector<JsonCursor> items;
  std::size_t count = size();
  items.reserve(count);
  for (std::size_t index = 0; index < count; ++index) items.push_back(at(index));
  return items;
}

std::string JsonCursor::asString() const {
  if (!value_->is_string()) fail("expected a string, got " + shown(*value_));
  return value_->get<std::string>();
}

std::int64_t JsonCursor::asInt() const {
  if (value_->is_number_unsigned()) {
    auto value = value_->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail("expected an integer that fits in 64 bits, got " + shown(*value_));
    }
    return static_cast<std::int64_t>(value);
  }
  if (!value_->is_number_integer()) fail("expected an integer, got " + shown(*value_));
  return value_->get<std::int64_t>();
}

std::int64_t JsonCursor::asNonNegativeInt() const {
  if (!value_->is_number_integer()) fail("expected a non-negative integer, got " + shown(*value_));
  std::int64_t value = asInt();
  if (value < 0) fail("expected a non-negative integer, got " + shown(*value_));
  return value;
}

std::int64_t JsonCursor::asPositiveInt() const {
  if (!value_->is_number_integer()) fail("expected a positive integer, got " + shown(*value_));
  std::int64_t value = asInt();
  if (value <= 0) fail("expected a positive integer, got " + shown(*value_));
  return value;
}

double JsonCursor::asNumber() const {
  if (!value_->is_number()) fail("expected a number, got " + shown(*value_));
  return value_->get<double>();
}

double JsonCursor::asNonNegativeNumber() const {
  if (!value_->is_number()) fail("expected a non-negative number, got " + shown(*value_));
  double value = value_->get<double>();
  if (!(value >= 0.0)) fail("expected a non-negative number, got " + shown(*value_));
  return value;
}

bool JsonCursor::asBool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + shown(*value_));
  return value_->get<bool>();
}

void JsonCursor::requireSchema(const std::string& tag) const {
  JsonCursor schema = at("schema");
  if (!schema.value().is_string()) schema.fail("expected schema '" + tag + "', got " + shown(schema.value()));
  std::string found = schema.value().get<std::string>();
  if (found != tag) schema.fail("expected schema '" + tag + "', got '" + found + "'");
}

}  // namespace pipeprof
