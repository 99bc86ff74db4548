// The math libraries' workspaces for builds without CUDA: there are none to clear or measure.
#include <pipeprof/runtime/library_workspaces.h>

namespace pipeprof {

void clearLibraryWorkspaces(const std::vector<torch::Device>& /*devices*/) {}

Bytes measureLibraryWorkspaceBytes(const torch::Device& /*device*/) { return 0; }

}  // namespace pipeprof
