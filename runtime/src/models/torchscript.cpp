// Loading a user's model from a TorchScript file whose top level is a Sequential.
#include "models/zoo.h"

#include <stdexcept>

namespace pipeprof {

Model loadTorchScriptModel(const std::string& path, const ModelOptions& /*options*/) {
  throw std::invalid_argument("cannot load TorchScript model '" + path + "': not supported yet");
}

}  // namespace pipeprof
