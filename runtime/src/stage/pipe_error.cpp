// The error a pipeline step throws, and an exception's text as it quotes it (pipe_error.h).
#include <pipeprof/runtime/pipe_error.h>

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace pipeprof {

std::string errorText(const std::exception& error) {
  if (const auto* torchError = dynamic_cast<const c10::Error*>(&error)) {
    return torchError->what_without_backtrace();
  }
  return error.what();
}

void throwPipeError(const std::string& what, std::int64_t stage, std::int64_t microBatch) {
  std::string message;
  try {
    throw;
  } catch (const std::exception& error) {
    message = what + " failed: " + errorText(error);
  } catch (...) {
    message = what + " failed with a non-standard exception";
  }
  std::throw_with_nested(PipeError(message, stage, microBatch));  // the caller's exception, still handled
}

}  // namespace pipeprof
