// The zoo's per-model builders (private): each returns a flat Sequential with named layers.
#pragma once

#include <pipeprof/runtime/models.h>

namespace pipeprof {

Model buildMlp(const ModelOptions& options);
Model buildResnet(const ModelOptions& options);
Model buildUnet(const ModelOptions& options);
Model buildGpt(const ModelOptions& options);
Model loadTorchScriptModel(const std::string& path, const ModelOptions& options);

/// `value` when positive, else `fallback`.
std::int64_t orDefault(std::int64_t value, std::int64_t fallback);

}  // namespace pipeprof
