// A candidate as PyTorch's pipelining runtime takes it: torchtitan's settings
// (module_fqns_per_model_part, pipeline_parallel_schedule or its CSV, num_pp_microbatches) and
// torch.distributed.pipelining.pipeline()'s split_spec -- or, where PyTorch cannot express the
// candidate, what it cannot.
#pragma once

#include <pipeprof/core/candidate.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pipeprof {

/// PyTorch's configuration of `candidate` for a model whose layers are `layerNames` (their
/// module paths, as `pipeprof models` lists them):
///   {"module_fqns_per_model_part": [[layer names of stage 0], ...],
///    "split_spec": {"h.4": "BEGINNING", ...}              (each stage's first layer but the first),
///    "pipeline_parallel_degree": p, "stages_per_rank": v, "stage_to_rank": [...],
///    "placement": "loop" | "v",
///    "pipeline_parallel_schedule": "1F1B" | ... | null,     (torchtitan's name; null: use the CSV)
///    "pytorch_schedule_class": "Schedule1F1B" | ... | null,
///    "pipeline_parallel_schedule_csv": ["0F0,0F1,...", ...]  (one row per rank, _load_csv's),
///    "num_pp_microbatches": m,
///    "activation_checkpoint": "full" | "none" | null,
///    "not_expressible": ["why ...", ...]}
/// Throws std::invalid_argument when the balance does not cover the layers.
nlohmann::json pytorchConfiguration(const Candidate& candidate, const std::vector<std::string>& layerNames);

}  // namespace pipeprof
