// The error a pipeline step throws when an op fails, on either executor, and an exception's text.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

namespace pipeprof {

/// An exception raised inside a layer during a pipeline's forward or backward (the threaded
/// Pipe's or a rank's), rethrown to the caller naming the op, stage and micro-batch; the
/// original exception is nested (std::rethrow_if_nested). The pipeline stays usable afterwards.
class PipeError : public std::runtime_error {
 public:
  PipeError(const std::string& message, std::int64_t stage, std::int64_t microBatch)
      : std::runtime_error(message), stage_(stage), microBatch_(microBatch) {}
  std::int64_t stage() const { return stage_; }
  std::int64_t microBatch() const { return microBatch_; }

 private:
  std::int64_t stage_;
  std::int64_t microBatch_;
};

/// An exception's message; a LibTorch error's without the C++ backtrace it carries.
std::string errorText(const std::exception& error);

/// Call inside a catch block: throws a PipeError "<what> failed: <the exception's text>" naming
/// stage `stage` and micro-batch `microBatch` (-1: none), the caught exception nested. The one
/// place both executors build their PipeError.
[[noreturn]] void throwPipeError(const std::string& what, std::int64_t stage = -1, std::int64_t microBatch = -1);

}  // namespace pipeprof
