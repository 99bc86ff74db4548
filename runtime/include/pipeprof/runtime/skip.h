// Skip connections: layers that stash a tensor under a name for a later layer to pop.
//
// A Skippable layer declares the names it stashes and pops. Inside a Pipe, a skip tensor that
// crosses stages is copied straight from the stashing stage's device to the popping
// one's (never through the stages in between), is freed as soon as it is popped, and its
// gradient flows back the same way:
//
//   stage 0 ── stash("x") ────────────────────────┐ (direct copy, i-th micro-batch)
//   stage 1 ──────────── (does not see "x") ──────┤
//   stage 2 ─────────────────────────── pop("x") ◄┘
//
// Outside a Pipe (a plain Sequential) stash/pop go through a per-thread default tracker, so
// skippable layers work unchanged. Names are matched within a Namespace; isolate() gives a
// layer's names a namespace so the same name can be reused by several pairs.
#pragma once

#include <pipeprof/core/schedule.h>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof {

/// A scope for skip names. Each default-constructed Namespace is distinct from every other;
/// copies compare equal. Names not isolated live in the global namespace (id 0).
class Namespace {
 public:
  Namespace();
  static Namespace global() { return Namespace(0); }
  std::uint64_t id() const { return id_; }
  friend bool operator==(const Namespace& a, const Namespace& b) { return a.id_ == b.id_; }
  friend bool operator!=(const Namespace& a, const Namespace& b) { return a.id_ != b.id_; }
  friend bool operator<(const Namespace& a, const Namespace& b) { return a.id_ < b.id_; }

 private:
  explicit Namespace(std::uint64_t id) : id_(id) {}
  std::uint64_t id_;
};

/// A skip name qualified by its namespace.
using SkipKey = std::pair<Namespace, std::string>;

/// Where stash() and pop() go. The Pipe installs its own per (micro-batch, stage);
/// otherwise a per-thread default tracker (a plain map) is used.
class SkipTracker {
 public:
  virtual ~SkipTracker() = default;
  virtual void stash(const SkipKey& key, torch::Tensor tensor) = 0;
  /// Throws std::runtime_error when nothing was stashed under key.
  virtual torch::Tensor pop(const SkipKey& key) = 0;
};

/// A plain map: the tracker of a thread no Pipe installed one for, and of a trial run that keeps
/// its skips apart from the thread's.
class MapSkipTracker final : public SkipTracker {
 public:
  void stash(const SkipKey& key, torch::Tensor tensor) override;
  torch::Tensor pop(const SkipKey& key) override;

 private:
  std::map<SkipKey, torch::Tensor> tensors_;
};

/// Makes `tracker` the calling thread's tracker for the scope (restores the previous one).
class ScopedSkipTracker {
 public:
  explicit ScopedSkipTracker(SkipTracker* tracker);
  ~ScopedSkipTracker();
  ScopedSkipTracker(const ScopedSkipTracker&) = delete;
  ScopedSkipTracker& operator=(const ScopedSkipTracker&) = delete;

 private:
  SkipTracker* previous_;
};

/// Base class of layers with skip connections. Declare the names in the constructor, call
/// stash()/pop() from forward():
///
///   struct StashImpl : pipeprof::Skippable {
///     StashImpl() : Skippable({"skip"}, {}) {}
///     torch::Tensor forward(torch::Tensor x) { stash("skip", x); return x; }
///   };
class Skippable : public torch::nn::Module {
 public:
  Skippable(std::vector<std::string> stashNames, std::vector<std::string> popNames);

  const std::vector<std::string>& stashNames() const { return stashNames_; }
  const std::vector<std::string>& popNames() const { return popNames_; }

  /// Puts every declared name (or only those in `only`) in namespace ns.
  void isolate(const Namespace& ns);
  void isolate(const Namespace& ns, const std::vector<std::string>& only);
  /// The namespace of a declared name (the global one unless isolated).
  Namespace namespaceOf(const std::string& name) const;

 protected:
  /// Stashes tensor under a declared stash name. Throws std::invalid_argument otherwise.
  void stash(const std::string& name, torch::Tensor tensor);
  /// Pops the tensor stashed under a declared pop name. Throws std::invalid_argument for an
  /// undeclared name, std::runtime_error when nothing was stashed.
  torch::Tensor pop(const std::string& name);

 private:
  std::vector<std::string> stashNames_;
  std::vector<std::string> popNames_;
  std::map<std::string, Namespace> namespaces_;
};

/// Checks every stash/pop pair of the Sequential (layers named by their index, as torchgpipe
/// does) and throws std::invalid_argument listing every problem, torchgpipe's wording:
///   one or more pairs of stash and pop do not match:
///
///   * no module declared 'foo' as poppable but stashed
///   * '0' declared 'foo' as poppable but it was not stashed
///   ...
void verifySkips(const torch::nn::Sequential& module);

/// The stash/pop routes of the Sequential (layer indices), in stash order, with distinct
/// names (a name reused in another namespace gets "#2", "#3", ... appended), as
/// ScheduleSpec::skips needs them. Call verifySkips first; unmatched names are left out.
std::vector<SkipRoute> skipRoutes(const torch::nn::Sequential& module);

/// Routes with their namespaced keys (the Pipe uses them to find where each skip goes).
struct SkipRouteKey {
  SkipKey key;
  std::int64_t stashLayer = 0;
  std::int64_t popLayer = 0;
};
std::vector<SkipRouteKey> skipRouteKeys(const torch::nn::Sequential& module);

}  // namespace pipeprof
