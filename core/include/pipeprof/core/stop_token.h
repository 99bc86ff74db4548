// Asking long work to stop: a StopSource requests it, the StopTokens handed out see it.
//
// The one way pipeprof's libraries are told to stop (a sweep between steps, a training loop
// after a step, a launcher watching its ranks): no library installs a signal handler. A
// program that wants Ctrl-C to stop them installs its own handler and calls requestStop()
// there (the pipeprof CLI: cli/interrupts.h).
//
//   StopSource source;                       // owns the shared flag
//   StopToken token = source.token();        // copies share it; pass them down
//   ... work asks token.stopRequested() at its safe points ...
//   source.requestStop();                    // from any thread, or a signal handler
#pragma once

#include <atomic>
#include <memory>

namespace pipeprof {

class StopSource;

/// A view of a StopSource's flag. Copyable and cheap; a default-constructed token never
/// stops (it belongs to no source).
class StopToken {
 public:
  StopToken() = default;

  /// True once the source's requestStop() was called.
  bool stopRequested() const noexcept { return flag_ != nullptr && flag_->load(std::memory_order_acquire); }
  /// False for a token of no source: it can never stop.
  bool stopPossible() const noexcept { return flag_ != nullptr; }

 private:
  friend class StopSource;
  explicit StopToken(std::shared_ptr<const std::atomic<bool>> flag) : flag_(std::move(flag)) {}
  std::shared_ptr<const std::atomic<bool>> flag_;
};

/// Owns the flag its tokens see. requestStop() is async-signal-safe: one store to a lock-free
/// std::atomic<bool> (no allocation, no lock), so a signal handler may call it.
class StopSource {
 public:
  StopSource() : flag_(std::make_shared<std::atomic<bool>>(false)) {}

  /// Every token of this source reports stopRequested() from now on. Safe from any thread and
  /// from a signal handler.
  void requestStop() noexcept { flag_->store(true, std::memory_order_release); }
  bool stopRequested() const noexcept { return flag_->load(std::memory_order_acquire); }
  /// A token that sees this source's requests (and keeps the flag alive).
  StopToken token() const { return StopToken(flag_); }

 private:
  static_assert(std::atomic<bool>::is_always_lock_free, "requestStop must be async-signal-safe");
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace pipeprof
