// Output files checked before any work: the folder must exist and be writable.
#include "output_file.h"

#include "commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

namespace pipeprof::cli {

void checkOutputFile(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError(flag + ": name the file to write");
  std::error_code error;
  if (fs::is_directory(path, error)) {
    throw UsageError(fmt::format("{} {}: is a folder; name a file in it to write", flag, path));
  }
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::exists(folder, error)) {
    throw UsageError(fmt::format("{} {}: the folder {} does not exist (create it first, e.g. mkdir -p {})", flag, path,
                                 folder.string(), folder.string()));
  }
  if (!fs::is_directory(folder, error)) {
    throw UsageError(fmt::format("{} {}: {} is not a folder", flag, path, folder.string()));
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("{} {}: the folder {} is not writable", flag, path, folder.string()));
  }
}

}  // namespace pipeprof::cli
