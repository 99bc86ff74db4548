// The files a command writes: checked before the command does any work, so a mistyped folder
// costs the user a message, not a profile or a sweep.
#pragma once

#include <string>

namespace pipeprof::cli {

/// Throws UsageError naming `flag` unless `path` names a file that can be written: not empty,
/// not a folder, in a folder that exists and this process may write to. `sweep` and `calibrate`
/// create the folder of their -o themselves and do not call this for it.
void checkOutputFile(const std::string& flag, const std::string& path);

}  // namespace pipeprof::cli
