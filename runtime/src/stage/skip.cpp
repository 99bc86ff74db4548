// Skip connections: Skippable layers, namespaces, the per-thread tracker and the pair check.
#include <pipeprof/runtime/skip.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>

namespace pipeprof {
void MapSkipTracker::stash(const SkipKey& key, torch::Tensor tensor) { tensors_[key] = std::move(tensor); }

torch::Tensor MapSkipTracker::pop(const SkipKey& key) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) {
    throw std::runtime_error("skip '" + key.second + "' was popped before it was stashed");
  }
  torch::Tensor tensor = std::move(it->second);
  tensors_.erase(it);
  return tensor;
}

namespace {

thread_local SkipTracker* tCurrentTracker = nullptr;

SkipTracker& currentTracker() {
  if (tCurrentTracker != nullptr) {
    return *tCurrentTracker;
  }
  thread_local MapSkipTracker fallback;
  return fallback;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const Skippable* asSkippable(const torch::nn::Sequential& module, std::size_t index) {
  return dynamic_cast<const Skippable*>(module->ptr(index).get());
}

}  // namespace

Namespace::Namespace() {
  static std::atomic<std::uint64_t> next{1};
  id_ = next.fetch_add(1, std::memory_order_relaxed);
}

ScopedSkipTracker::ScopedSkipTracker(SkipTracker* tracker) : previous_(tCurrentTracker) { tCurrentTracker = tracker; }

ScopedSkipTracker::~ScopedSkipTracker() { tCurrentTracker = previous_; }

Skippable::Skippable(std::vector<std::string> stashNames, std::vector<std::string> popNames)
    : stashNames_(std::move(stashNames)), popNames_(std::move(popNames)) {}

void Skippable::isolate(const Namespace& ns) {
  for (const auto& name : stashNames_) {
    namespaces_.insert_or_assign(name, ns);
  }
  for (const auto& name : popNames_) {
    namespaces_.insert_or_assign(name, ns);
  }
}

void Skippable::isolate(const Namespace& ns, const std::vector<std::string>& only) {
  for (const auto& name : only) {
    if (!contains(stashNames_, name) && !contains(popNames_, name)) {
      throw std::invalid_argument("cannot isolate '" + name +
                                  "': the layer declares it neither as stashable nor as poppable");
    }
    namespaces_.insert_or_assign(name, ns);
  }
}

Namespace Skippable::namespaceOf(const std::string& name) const {
  auto it = namespaces_.find(name);
  return it == namespaces_.end() ? Namespace::global() : it->second;
}

void Skippable::stash(const std::string& name, torch::Tensor tensor) {
  if (!contains(stashNames_, name)) {
    throw std::invalid_argument("'" + name + "' has not been declared as stashable");
  }
  currentTracker().stash({namespaceOf(name), name}, std::move(tensor));
}

torch::Tensor Skippable::pop(const std::string& name) {
  if (!contains(popNames_, name)) {
    throw std::invalid_argument("'" + name + "' has not been declared as poppable");
  }
  return currentTracker().pop({namespaceOf(name), name});
}

void verifySkips(const torch::nn::Sequential& module) {
  std::vector<SkipKey> stashedOrder;
  std::set<SkipKey> stashed;
  std::set<SkipKey> popped;
  std::vector<std::string> messages;
  for (std::size_t index = 0; index < module->size(); ++index) {
    const Skippable* layer = asSkippable(module, index);
    if (layer == nullptr) {
      continue;
    }
    const std::string layerName = std::to_string(index);
    for (const auto& name : layer->stashNames()) {
      if (contains(layer->popNames(), name)) {
        messages.push_back("'" + layerName + "' declared '" + name + "' both as stashable and as poppable");
      }
    }
    for (const auto& name : layer->stashNames()) {
      if (contains(layer->popNames(), name)) {
        continue;
      }
      SkipKey key{layer->namespaceOf(name), name};
      if (stashed.count(key) > 0) {
        messages.push_back("'" + layerName + "' redeclared '" + name + "' as stashable but not isolated by namespace");
        continue;
      }
      stashed.insert(key);
      stashedOrder.push_back(key);
    }
    for (const auto& name : layer->popNames()) {
      if (contains(layer->stashNames(), name)) {
        continue;
      }
      SkipKey key{layer->namespaceOf(name), name};
      if (popped.count(key) > 0) {
        messages.push_back("'" + layerName + "' redeclared '" + name + "' as poppable but not isolated by namespace");
        continue;
      }
      if (stashed.count(key) == 0) {
        messages.push_back("'" + layerName + "' declared '" + name + "' as poppable but it was not stashed");
        continue;
      }
      popped.insert(key);
    }
  }
  for (const auto& key : stashedOrder) {
    if (popped.count(key) == 0) {
      messages.push_back("no module declared '" + key.second + "' as poppable but stashed");
    }
  }
  if (!messages.empty()) {
    std::string text = "one or more pairs of stash and pop do not match:\n";
    for (const auto& message : messages) {
      text += "\n* " + message;
    }
    throw std::invalid_argument(text);
  }
}

std::vector<SkipRouteKey> skipRouteKeys(const torch::nn::Sequential& module) {
  std::vector<SkipRouteKey> routes;
  for (std::size_t index = 0; index < module->size(); ++index) {
    const Skippable* layer = asSkippable(module, index);
    if (layer == nullptr) {
      continue;
    }
    for (const auto& name : layer->stashNames()) {
      if (!contains(layer->popNames(), name)) {
        routes.push_back({{layer->namespaceOf(name), name}, static_cast<std::int64_t>(index), -1});
      }
    }
    for (const auto& name : layer->popNames()) {
      SkipKey key{layer->namespaceOf(name), name};
      for (auto& route : routes) {
        if (route.key == key && route.popLayer < 0) {
          route.popLayer = static_cast<std::int64_t>(index);
          break;
        }
      }
    }
  }
  routes.erase(std::remove_if(routes.begin(), routes.end(), [](const SkipRouteKey& r) { return r.popLayer < 0; }),
               routes.end());
  return routes;
}

std::vector<SkipRoute> skipRoutes(const torch::nn::Sequential& module) {
  std::vector<SkipRoute> routes;
  std::map<std::string, int> uses;  // names isolated by namespaces repeat: "a", "a#2", ...
  for (const auto& route : skipRouteKeys(module)) {
    const int use = ++uses[route.key.second];
    routes.push_back(
        {route.key.second + (use == 1 ? "" : "#" + std::to_string(use)), route.stashLayer, route.popLayer});
  }
  return routes;
}

}  // namespace pipeprof
